// Sizes of the per-CPU scratch maps the BPF programs build records in.
#pragma once

#include <bpf/libbpf.h>

#include <algorithm>
#include <cstdint>

#include "xdpcap_abi.h"

namespace xdpcap {

// A first record put together in a map (a tag put back, a dropped frame):
// one entry per CPU when `used`, each holding the metadata, room for the
// process (-k), and as much of
// the frame as one record carries, and at least the MAC addresses and the
// tag, which are copied whatever the snapshot length.
inline void size_first_record_scratch(bpf_map* map, uint32_t snaplen, bool used)
{
    const int cpus = libbpf_num_possible_cpus();
    bpf_map__set_max_entries(map, used && cpus > 0 ? static_cast<uint32_t>(cpus) : 1);
    const uint32_t frame_bytes = std::clamp(snaplen, 16u, XDPCAP_MAX_SAMPLE_SIZE);
    bpf_map__set_value_size(
        map, static_cast<uint32_t>(sizeof(xdpcap_meta) + 2 * sizeof(xdpcap_process) + ((frame_bytes + 7) & ~7u)));
}

// The entries of frame_pieces.h's gather_scratch (--drops, trace mode):
// twice the frame room, and the slack for a tag.
// `used`: one entry per CPU, else one (the program never gets that far).
inline void size_gather_scratch(bpf_map* map, uint32_t snaplen, bool used)
{
    const int cpus = libbpf_num_possible_cpus();
    bpf_map__set_max_entries(map, used && cpus > 0 ? static_cast<uint32_t>(cpus) : 1);
    const uint32_t frame_bytes = std::clamp(snaplen, 16u, XDPCAP_MAX_SAMPLE_SIZE);
    bpf_map__set_value_size(map, static_cast<uint32_t>(sizeof(xdpcap_meta) + 2 * sizeof(xdpcap_process) +
                                                       ((2 * frame_bytes + XDPCAP_GATHER_FRAME_SLACK + 7) & ~7u)));
}

// The parts of frames longer than one record: an entry per CPU where a
// snapshot can be that long.
inline void size_part_scratch(bpf_map* map, uint32_t snaplen)
{
    const int cpus = libbpf_num_possible_cpus();
    bpf_map__set_max_entries(map, snaplen > XDPCAP_MAX_SAMPLE_SIZE && cpus > 0 ? static_cast<uint32_t>(cpus) : 1);
}

// The staging entries of bpf/sample.h: one per possible CPU, by CPU id.
inline void size_stage(bpf_map* map)
{
    const int cpus = libbpf_num_possible_cpus();
    bpf_map__set_max_entries(map, cpus > 0 ? static_cast<uint32_t>(cpus) : 1);
}

} // namespace xdpcap
