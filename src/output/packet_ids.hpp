// --drops: the kernel's drop of a packet already captured (at the receive
// or send hook) is a second record of the same bytes. Both records get the
// same epb_packetid, so that a reader can tell the copy from a
// retransmission (Wireshark: frame.packet_id).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace xdpcap {

class PacketIds {
public:
    // A captured packet: a new id, remembered by its bytes.
    uint64_t captured(const uint8_t* data, uint32_t cap_len) noexcept
    {
        const uint64_t id = ++last_;
        const uint64_t key = fingerprint(data, cap_len);
        remembered_[key % kSlots] = Entry{key, id};
        return id;
    }

    // A dropped packet: the id of the latest captured packet with its
    // bytes (drops follow their capture within microseconds, so the table
    // still holds it), else a new one.
    uint64_t dropped(const uint8_t* data, uint32_t cap_len) noexcept
    {
        const uint64_t key = fingerprint(data, cap_len);
        const Entry& entry = remembered_[key % kSlots];
        return entry.id && entry.key == key ? entry.id : ++last_;
    }

private:
    // The headers decide: the first bytes (a drop record may hold fewer,
    // only the skb's linear part; its length may lack the Ethernet padding
    // the stack trimmed).
    static constexpr size_t kKeyBytes = 64;
    static constexpr size_t kSlots = 4096;

    static uint64_t fingerprint(const uint8_t* data, uint32_t cap_len) noexcept
    {
        uint64_t hash = 0xcbf29ce484222325ull; // FNV-1a
        const size_t n = cap_len < kKeyBytes ? cap_len : kKeyBytes;
        for (size_t i = 0; i < n; ++i)
            hash = (hash ^ data[i]) * 0x100000001b3ull;
        return hash;
    }

    struct Entry {
        uint64_t key = 0;
        uint64_t id = 0;
    };
    std::array<Entry, kSlots> remembered_{};
    uint64_t last_ = 0;
};

} // namespace xdpcap
