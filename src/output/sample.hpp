// One decoded frame, as the output takes it: what the ring decoder
// (ring/record.hpp) and the capture file reader hand on.
#pragma once

#include <cstdint>
#include <string_view>

#include "xdpcap_abi.h"

namespace xdpcap {

struct Sample {
    uint32_t ifindex;
    uint32_t rx_queue;
    uint32_t orig_len;
    uint32_t cap_len; // the whole capture; a first record carries first_record_length(cap_len) of it
    uint32_t drops_before;
    uint64_t tstamp_ns; // CLOCK_MONOTONIC
    uint8_t direction;  // XDPCAP_DIR_INGRESS or XDPCAP_DIR_EGRESS
    uint8_t hook;       // a Hook's ABI value, any value a record holds: hook_info() reads it
    uint16_t program;   // trace mode: index of the traced program
    uint32_t verdict; // trace mode exit: the XDP verdict; drops: the drop reason
    const uint8_t* data; // cap_len bytes, valid until the record is released
    uint32_t hash = 0;      // with XDPCAP_FLAG_HASH
    uint16_t hash_type = 0; // received: enum xdp_rss_hash_type bits
    uint16_t flags = 0;     // XDPCAP_FLAG_*
    uint64_t location = 0;  // drops: the kernel code address that dropped it
    // With XDPCAP_FLAG_PROCESS (-k): the packet's socket owner, the sender's
    // when its socket is on this host; pid 0 unknown.
    xdpcap_process process = {};
    // With XDPCAP_FLAG_PEER too: the receiver's, when `process` is the
    // sender's and both ends are on this host; pid 0 otherwise.
    xdpcap_process peer = {};
    // Read back from a file: the process comment it holds, shown as written
    // instead of a label made from `process`.
    std::string_view process_label = {};
};

} // namespace xdpcap
