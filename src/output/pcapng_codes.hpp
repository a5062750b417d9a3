// The pcapng format's numbers (draft-ietf-opsawg-pcapng): block types,
// option codes and their values. Written by output/pcapng, read by
// input/capture_file: one definition for both.
#pragma once

#include <cstdint>

namespace xdpcap::pcapng {

// Block types.
inline constexpr uint32_t kShbType = 0x0A0D0D0A;
inline constexpr uint32_t kIdbType = 0x00000001;
inline constexpr uint32_t kObsoletePacketType = 0x00000002;
inline constexpr uint32_t kSpbType = 0x00000003;
inline constexpr uint32_t kIsbType = 0x00000005;
inline constexpr uint32_t kEpbType = 0x00000006;
// Decryption Secrets Block, and its secrets type for NSS key log lines.
inline constexpr uint32_t kDsbType = 0x0000000A;
inline constexpr uint32_t kSecretsTlsKeyLog = 0x544c534b;
inline constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
inline constexpr uint16_t kLinkTypeEthernet = 1;

// Options every block may carry.
inline constexpr uint16_t kOptEndOfOpt = 0;
inline constexpr uint16_t kOptComment = 1;

// Section header, interface description and statistics options.
enum : uint16_t {
    kShbHardware = 2,
    kShbOs = 3,
    kShbUserAppl = 4,
    kIfName = 2,
    kIfDescription = 3,
    kIfTsresol = 9,
    kIfFilter = 11,
    kIfOs = 12,
    kIfHardware = 15,
    kIsbStartTime = 2,
    kIsbEndTime = 3,
    kIsbIfRecv = 4,
    kIsbIfDrop = 5,
    kIsbFilterAccept = 6,
    kIsbOsDrop = 7,
    kIsbUsrDeliv = 8,
};
inline constexpr uint8_t kTsresolNanoseconds = 9;
inline constexpr uint8_t kFilterLibpcapString = 0;

// Enhanced packet options.
inline constexpr uint16_t kEpbFlags = 2;
inline constexpr uint16_t kEpbHash = 3;
inline constexpr uint16_t kEpbDropCount = 4;
inline constexpr uint16_t kEpbPacketId = 5;
inline constexpr uint16_t kEpbQueue = 6;
inline constexpr uint16_t kEpbVerdict = 7;
inline constexpr uint16_t kEpbProcessIdThreadId = 8;

// epb_flags: the direction in its low bits, then the other bits used here.
inline constexpr uint32_t kDirectionInbound = 1;
inline constexpr uint32_t kDirectionOutbound = 2;
inline constexpr uint32_t kFlagChecksumNotReady = 1u << 9; // the NIC fills the checksum in
inline constexpr uint32_t kFlagSegmentationOffload = 1u << 11; // one frame for several on the wire
// epb_verdict's type byte for a Linux eBPF XDP action.
inline constexpr uint8_t kVerdictEbpfXdp = 2;
// epb_hash's algorithm byte for the hash functions NICs use for RSS, and
// one pcapng does not register, for any other (the kernel's own flow hash).
inline constexpr uint8_t kHashXor = 1;
inline constexpr uint8_t kHashCrc32 = 2;
inline constexpr uint8_t kHashToeplitz = 5;
inline constexpr uint8_t kHashUnregistered = 255;

} // namespace xdpcap::pcapng
