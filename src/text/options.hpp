// How packets are shown as text: the decode's detail, the dumps, the
// timestamp and the packet number.
#pragma once

#include "text/decode.hpp"
#include "text/timestamp.hpp"

namespace xdpcap::text {

struct TextOptions {
    DecodeOptions decode;
    TimeFormat time = TimeFormat::Clock;
    bool nanoseconds = false; // --time-stamp-precision=nano
    bool number = false;      // -#: the packet's number first
    bool line_buffered = false; // -l: each line written as soon as it is made
    bool absolute_sequence = false; // -S: TCP sequence numbers as they are
    // --print-cpu: each line starts with its pcapng interface (IFACE@cpuN)
    // and direction, and -e shows the packet's hash. Otherwise lines start
    // as tcpdump's: nothing for one interface, "IFACE In  " (as -i any) when
    // they come from several.
    bool cpu_prefix = false;
};

} // namespace xdpcap::text
