// What happened to each ring's records on their way to the output.
#pragma once

#include <cstdint>

namespace xdpcap {

struct RingTally {
    uint64_t samples = 0;      // sample records taken from the ring
    uint64_t written = 0;      // packets handed to the output
    uint64_t discarded = 0;    // samples read after -c was reached
    uint64_t unwritten = 0;    // samples the output could not take (write failed, reader gone)
    uint64_t invalid = 0;      // records refused by the decoder
    uint64_t lost_records = 0; // sum of PERF_RECORD_LOST notices
    uint64_t out_of_order = 0; // of `written`: written after a newer packet from any ring
    uint64_t cut = 0;          // of `written`: longer than the snapshot length
    // Of `written`: captured short of the snapshot length, as far as the hook
    // reaches (generic XDP's super-frames, paged bytes of a drop).
    uint64_t partial = 0;
    // Frames longer than one record that the kernel did not write whole (and
    // counted as failed): their records, dropped here.
    uint64_t incomplete = 0;
    uint64_t stray_parts = 0;
};

} // namespace xdpcap
