// pcapng block encoder (draft-ietf-opsawg-pcapng), host byte order.
// Cold blocks append to a vector; the per-packet EPB is written in place into
// caller-provided space so the hot path never allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "output/pcapng_codes.hpp"

namespace xdpcap::pcapng {

struct SectionHeader {
    std::string hardware;
    std::string os;
    std::string user_application;
};

struct InterfaceDescription {
    uint16_t link_type = kLinkTypeEthernet;
    uint32_t snaplen = 0;
    std::string name;
    std::string description;
    std::string filter; // libpcap filter string; omitted when empty
    std::string os;
    std::string hardware;
};

struct InterfaceStatistics {
    uint32_t interface_id = 0;
    uint64_t timestamp_ns = 0;
    uint64_t start_ns = 0;
    uint64_t end_ns = 0;
    uint64_t if_received = 0;
    std::optional<uint64_t> filter_accepted;
    uint64_t dropped = 0; // written as isb_ifdrop (what Wireshark shows) and isb_osdrop
    uint64_t user_delivered = 0;
    std::string comment; // opt_comment; omitted when empty
};

struct EnhancedPacket {
    uint32_t interface_id;
    uint64_t timestamp_ns;
    uint32_t cap_len;
    uint32_t orig_len;
    uint32_t queue;
    uint64_t drop_count;
    const uint8_t* data;
    uint32_t direction = kDirectionInbound; // epb_flags bits 0-1
    bool has_verdict = false; // epb_verdict, eBPF XDP type, with `verdict`
    uint32_t verdict = 0;
    uint32_t flags = 0; // further epb_flags bits: kFlag*
    bool has_hash = false; // epb_hash with `hash_algorithm` and the 32-bit `hash`
    uint8_t hash_algorithm = 0;
    bool has_queue = true; // epb_queue with `queue` (in what would be padding)
    uint32_t hash = 0;
    std::string_view comment = {}; // opt_comment; omitted when empty
    uint64_t packet_id = 0; // epb_packetid; omitted when 0
    // -k: epb_processid_threadid (0, 0: unknown) and a second opt_comment
    // naming the process (omitted when empty).
    bool has_process = false;
    uint32_t pid = 0;
    uint32_t tid = 0;
    std::string_view process_comment = {};
};

void append_section_header(std::vector<uint8_t>& out, const SectionHeader& shb);
// if_tsresol is always 9: timestamps are in nanoseconds.
void append_interface_description(std::vector<uint8_t>& out, const InterfaceDescription& idb);
void append_interface_statistics(std::vector<uint8_t>& out, const InterfaceStatistics& isb);
// Counter by counter, what `now` counts beyond `then` (earlier blocks for
// the same interfaces; empty: all of it), never below zero. Times are kept
// from `now`.
std::vector<InterfaceStatistics> statistics_since(const std::vector<InterfaceStatistics>& now,
                                                  const std::vector<InterfaceStatistics>& then);

constexpr size_t pad4(size_t n) { return (n + 3) & ~size_t{3}; }

// type, length, interface id, ts high, ts low, caplen, origlen | data | options | length
inline constexpr size_t kEpbFixedSize = 28 + 4;
// On every packet: epb_flags (4+4), opt_endofopt (4).
inline constexpr size_t kEpbOptionsSize = 8 + 4;
// epb_queue (4+4): on every packet of a device with several queues; on a
// device with one, only where the queue is not 0 (never, unless it grows).
inline constexpr size_t kEpbQueueSize = 4 + 4;
// epb_dropcount (4+8): only after a loss. The per-packet counts add up to
// the statistics blocks' isb_osdrop, so a packet without one had none
// before it.
inline constexpr size_t kEpbDropCountSize = 4 + 8;

// epb_verdict: code and length (4), type byte and u64 action (9) padded to 12.
inline constexpr size_t kEpbVerdictSize = 4 + 12;

// A packet with no loss before it, no hash and no comment.
constexpr size_t enhanced_packet_size(uint32_t cap_len, bool has_verdict = false, bool has_queue = true)
{
    return kEpbFixedSize + pad4(cap_len) + kEpbOptionsSize + (has_queue ? kEpbQueueSize : 0) +
        (has_verdict ? kEpbVerdictSize : 0);
}

// epb_hash: code and length (4), algorithm byte and u32 (5) padded to 8.
inline constexpr size_t kEpbHashSize = 4 + 8;
// epb_packetid: code and length (4), u64.
inline constexpr size_t kEpbPacketIdSize = 4 + 8;
// epb_processid_threadid: code and length (4), u32 pid, u32 tid.
inline constexpr size_t kEpbProcessSize = 4 + 8;

constexpr size_t comment_size(std::string_view comment)
{
    return comment.empty() ? 0 : 4 + pad4(comment.size());
}

constexpr size_t enhanced_packet_size(const EnhancedPacket& pkt)
{
    return enhanced_packet_size(pkt.cap_len, pkt.has_verdict, pkt.has_queue) + (pkt.drop_count ? kEpbDropCountSize : 0) +
        (pkt.has_hash ? kEpbHashSize : 0) + (pkt.packet_id ? kEpbPacketIdSize : 0) + comment_size(pkt.comment) +
        (pkt.has_process ? kEpbProcessSize : 0) + comment_size(pkt.process_comment);
}

// The block around the packet bytes, for output that gathers the packet
// from where it already is: head, then cap_len bytes of data, then tail.
// `block_size` is enhanced_packet_size(pkt), computed once by the caller.
inline constexpr size_t kEpbHeadSize = 28;
constexpr size_t enhanced_packet_tail_size(const EnhancedPacket& pkt, size_t block_size)
{
    return block_size - kEpbHeadSize - pkt.cap_len;
}
namespace detail {
template <class T>
inline uint8_t* store(uint8_t* p, T value) noexcept
{
    std::memcpy(p, &value, sizeof value);
    return p + sizeof value;
}

inline uint8_t* store_comment(uint8_t* p, std::string_view comment) noexcept
{
    p = store<uint16_t>(p, kOptComment);
    p = store<uint16_t>(p, static_cast<uint16_t>(comment.size()));
    std::memcpy(p, comment.data(), comment.size());
    p += comment.size();
    const size_t padding = pad4(comment.size()) - comment.size();
    std::memset(p, 0, padding);
    return p + padding;
}
} // namespace detail

// Write kEpbHeadSize and enhanced_packet_tail_size(pkt, block_size) bytes.
// Forced inline: once per packet, and most of it folds away for a plain
// packet; GCC left the tail as a call from write_block's two paths.
// EnhancedPacket's and PlainPacket's: the same fields, the same head.
template <class Packet>
[[gnu::always_inline]] inline uint8_t* write_packet_head(uint8_t* out, const Packet& pkt, size_t block_size) noexcept
{
    using detail::store;
    uint8_t* p = out;
    p = store<uint32_t>(p, kEpbType);
    p = store<uint32_t>(p, static_cast<uint32_t>(block_size));
    p = store<uint32_t>(p, pkt.interface_id);
    p = store<uint32_t>(p, static_cast<uint32_t>(pkt.timestamp_ns >> 32));
    p = store<uint32_t>(p, static_cast<uint32_t>(pkt.timestamp_ns));
    p = store<uint32_t>(p, pkt.cap_len);
    return store<uint32_t>(p, pkt.orig_len);
}

[[gnu::always_inline]] inline uint8_t* write_enhanced_packet_head(uint8_t* out, const EnhancedPacket& pkt, size_t block_size) noexcept
{
    return write_packet_head(out, pkt, block_size);
}

[[gnu::always_inline]] inline uint8_t* write_enhanced_packet_tail(uint8_t* out, const EnhancedPacket& pkt, size_t block_size) noexcept
{
    using detail::store;
    // Zero padding to 4 bytes: four zeros stored, the options overwrite the
    // ones beyond the padding (cheaper than a memset of variable length).
    store<uint32_t>(out, 0);
    uint8_t* p = out + (pad4(pkt.cap_len) - pkt.cap_len);
    p = store<uint32_t>(p, kEpbFlags | 4u << 16);
    p = store<uint32_t>(p, (pkt.direction & 3u) | pkt.flags);
    if (pkt.has_queue) {
        p = store<uint32_t>(p, kEpbQueue | 4u << 16);
        p = store<uint32_t>(p, pkt.queue);
    }
    if (pkt.drop_count) [[unlikely]] {
        p = store<uint32_t>(p, kEpbDropCount | 8u << 16);
        p = store<uint64_t>(p, pkt.drop_count);
    }
    if (pkt.has_verdict) [[unlikely]] {
        p = store<uint32_t>(p, kEpbVerdict | 9u << 16);
        p = store<uint8_t>(p, kVerdictEbpfXdp);
        p = store<uint64_t>(p, pkt.verdict);
        p = store<uint8_t>(p, 0);
        p = store<uint16_t>(p, 0);
    }
    if (pkt.has_hash) {
        p = store<uint32_t>(p, kEpbHash | 5u << 16);
        p = store<uint8_t>(p, pkt.hash_algorithm);
        p = store<uint32_t>(p, pkt.hash);
        p = store<uint8_t>(p, 0);
        p = store<uint16_t>(p, 0);
    }
    if (pkt.packet_id) [[unlikely]] {
        p = store<uint32_t>(p, kEpbPacketId | 8u << 16);
        p = store<uint64_t>(p, pkt.packet_id);
    }
    if (pkt.has_process) [[unlikely]] {
        p = store<uint32_t>(p, kEpbProcessIdThreadId | 8u << 16);
        p = store<uint32_t>(p, pkt.pid);
        p = store<uint32_t>(p, pkt.tid);
    }
    if (!pkt.comment.empty()) [[unlikely]]
        p = detail::store_comment(p, pkt.comment);
    if (!pkt.process_comment.empty()) [[unlikely]]
        p = detail::store_comment(p, pkt.process_comment);
    p = store<uint32_t>(p, kOptEndOfOpt);
    return store<uint32_t>(p, static_cast<uint32_t>(block_size));
}

// A packet with the options most packets carry and no others: epb_flags,
// epb_queue, epb_dropcount after a loss, epb_hash. Its block, written by
// the two functions below, is byte for byte the one write_enhanced_packet()
// writes for the same packet, with less to decide per packet: the writer of
// the frames the merge takes in a row from a batch record.
struct PlainPacket {
    uint32_t interface_id;
    uint64_t timestamp_ns;
    uint32_t cap_len;
    uint32_t orig_len;
    uint32_t flags; // the epb_flags word: direction (bits 0-1) and kFlag* bits
    bool has_queue;
    uint32_t queue;
    uint64_t drop_count; // 0: no epb_dropcount
    bool has_hash;
    uint8_t hash_algorithm;
    uint32_t hash;
};

constexpr size_t plain_packet_size(const PlainPacket& pkt)
{
    return enhanced_packet_size(pkt.cap_len, false, pkt.has_queue) + (pkt.drop_count ? kEpbDropCountSize : 0) +
        (pkt.has_hash ? kEpbHashSize : 0);
}

[[gnu::always_inline]] inline uint8_t* write_plain_packet_head(uint8_t* out, const PlainPacket& pkt,
                                                                size_t block_size) noexcept
{
    return write_packet_head(out, pkt, block_size);
}

// `out` is where the packet bytes end.
[[gnu::always_inline]] inline void write_plain_packet_tail(uint8_t* out, const PlainPacket& pkt,
                                                           size_t block_size) noexcept
{
    using detail::store;
    store<uint32_t>(out, 0); // the padding, as write_enhanced_packet_tail()
    uint8_t* p = out + (pad4(pkt.cap_len) - pkt.cap_len);
    p = store<uint32_t>(p, kEpbFlags | 4u << 16);
    p = store<uint32_t>(p, pkt.flags);
    if (pkt.has_queue) {
        p = store<uint32_t>(p, kEpbQueue | 4u << 16);
        p = store<uint32_t>(p, pkt.queue);
    }
    if (pkt.drop_count) [[unlikely]] {
        p = store<uint32_t>(p, kEpbDropCount | 8u << 16);
        p = store<uint64_t>(p, pkt.drop_count);
    }
    if (pkt.has_hash) {
        p = store<uint32_t>(p, kEpbHash | 5u << 16);
        p = store<uint8_t>(p, pkt.hash_algorithm);
        p = store<uint32_t>(p, pkt.hash);
        p = store<uint8_t>(p, 0);
        p = store<uint16_t>(p, 0);
    }
    p = store<uint32_t>(p, kOptEndOfOpt);
    store<uint32_t>(p, static_cast<uint32_t>(block_size));
}

// n bytes from `from` to `to` in fixed-size moves the compiler inlines,
// never reading or writing outside either range: a small frame's copy
// without a call.
[[gnu::always_inline]] inline void copy_packet_bytes(uint8_t* to, const uint8_t* from, size_t n) noexcept
{
    if (n >= 32) {
        for (size_t at = 0; at + 32 < n; at += 32)
            std::memcpy(to + at, from + at, 32);
        std::memcpy(to + n - 32, from + n - 32, 32); // the last 32, overlapping
    } else if (n >= 16) {
        std::memcpy(to, from, 16);
        std::memcpy(to + n - 16, from + n - 16, 16);
    } else if (n >= 8) {
        std::memcpy(to, from, 8);
        std::memcpy(to + n - 8, from + n - 8, 8);
    } else if (n >= 4) {
        std::memcpy(to, from, 4);
        std::memcpy(to + n - 4, from + n - 4, 4);
    } else {
        for (size_t at = 0; at < n; ++at)
            to[at] = from[at];
    }
}

// Writes enhanced_packet_size(pkt) bytes at `out`.
size_t write_enhanced_packet(uint8_t* out, const EnhancedPacket& pkt) noexcept;

} // namespace xdpcap::pcapng
