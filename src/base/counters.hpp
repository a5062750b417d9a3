// The programs' per-CPU counters (bpf/xdpcap_abi.h), added up.
#pragma once

#include "xdpcap_abi.h"

namespace xdpcap {

// Field by field, for totals over hooks and CPUs.
inline xdpcap_counters operator+(const xdpcap_counters& a, const xdpcap_counters& b)
{
    return xdpcap_counters{a.seen + b.seen,
                           a.matched + b.matched,
                           a.sampled + b.sampled,
                           a.output_failed + b.output_failed,
                           a.ring_full + b.ring_full,
                           a.pending_drops + b.pending_drops,
                           a.sample_skipped + b.sample_skipped,
                           a.no_link_header + b.no_link_header};
}

} // namespace xdpcap
