// pcapng block encoder (draft-ietf-opsawg-pcapng), host byte order.
// Cold blocks append to a vector; the per-packet EPB is written in place into
// caller-provided space so the hot path never allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xdpcap::pcapng {

inline constexpr uint32_t kShbType = 0x0A0D0D0A;
inline constexpr uint32_t kIdbType = 0x00000001;
inline constexpr uint32_t kEpbType = 0x00000006;
inline constexpr uint32_t kIsbType = 0x00000005;
inline constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
inline constexpr uint16_t kLinkTypeEthernet = 1;
inline constexpr uint32_t kDirectionInbound = 1;
inline constexpr uint32_t kDirectionOutbound = 2;
// epb_verdict's type byte for a Linux eBPF XDP action.
inline constexpr uint8_t kVerdictEbpfXdp = 2;
// epb_flags bits beyond the direction.
inline constexpr uint32_t kFlagChecksumNotReady = 1u << 9; // the NIC fills the checksum in
inline constexpr uint32_t kFlagSegmentationOffload = 1u << 11; // one frame for several on the wire
// epb_hash's algorithm byte for the hash functions NICs use for RSS, and
// one pcapng does not register, for any other (the kernel's own flow hash).
inline constexpr uint8_t kHashXor = 1;
inline constexpr uint8_t kHashCrc32 = 2;
inline constexpr uint8_t kHashToeplitz = 5;
inline constexpr uint8_t kHashUnregistered = 255;

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
    uint32_t hash = 0;
    std::string_view comment = {}; // opt_comment; omitted when empty
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
// epb_flags (4+4) + epb_queue (4+4) + epb_dropcount (4+8) + opt_endofopt (4)
inline constexpr size_t kEpbOptionsSize = 8 + 8 + 12 + 4;

// epb_verdict: code and length (4), type byte and u64 action (9) padded to 12.
inline constexpr size_t kEpbVerdictSize = 4 + 12;

constexpr size_t enhanced_packet_size(uint32_t cap_len, bool has_verdict = false)
{
    return kEpbFixedSize + pad4(cap_len) + kEpbOptionsSize + (has_verdict ? kEpbVerdictSize : 0);
}

// epb_hash: code and length (4), algorithm byte and u32 (5) padded to 8.
inline constexpr size_t kEpbHashSize = 4 + 8;

constexpr size_t enhanced_packet_size(const EnhancedPacket& pkt)
{
    return enhanced_packet_size(pkt.cap_len, pkt.has_verdict) + (pkt.has_hash ? kEpbHashSize : 0) +
        (pkt.comment.empty() ? 0 : 4 + pad4(pkt.comment.size()));
}

// The block around the packet bytes, for output that gathers the packet
// from where it already is: head, then cap_len bytes of data, then tail.
inline constexpr size_t kEpbHeadSize = 28;
constexpr size_t enhanced_packet_tail_size(const EnhancedPacket& pkt)
{
    return enhanced_packet_size(pkt) - kEpbHeadSize - pkt.cap_len;
}
// Write kEpbHeadSize and enhanced_packet_tail_size(pkt) bytes.
uint8_t* write_enhanced_packet_head(uint8_t* out, const EnhancedPacket& pkt) noexcept;
uint8_t* write_enhanced_packet_tail(uint8_t* out, const EnhancedPacket& pkt) noexcept;

// Writes enhanced_packet_size(pkt) bytes at `out`.
size_t write_enhanced_packet(uint8_t* out, const EnhancedPacket& pkt) noexcept;

} // namespace xdpcap::pcapng
