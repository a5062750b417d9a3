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
};

} // namespace xdpcap::text
