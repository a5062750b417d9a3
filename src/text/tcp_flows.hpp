// tcpdump's relative TCP sequence numbers need, per connection, the first
// sequence number seen in each direction. tcpdump keeps every connection it
// ever saw; this table is of fixed size, allocated once: when a bucket is
// full, its oldest connection is forgotten (and printed absolute once more
// when it is next seen, as tcpdump prints any connection it meets first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace xdpcap::text {

class TcpFlows {
public:
    // Both directions of a connection share one key: tcpdump's collating
    // order (lower port first; equal ports: lower address first).
    struct Key {
        uint8_t family = 0; // 4 or 6
        uint8_t src[16] = {};
        uint8_t dst[16] = {};
        uint32_t ports = 0; // src << 16 | dst
        bool operator==(const Key&) const = default;
    };
    struct Base {
        uint32_t seq = 0; // of the side the key names first
        uint32_t ack = 0;
    };

    static constexpr size_t kWays = 4;
    static constexpr size_t kCapacity = 16384;

    TcpFlows();

    // The entry of `key`, or nullptr.
    Base* find(const Key& key) noexcept;
    // A (new or reused) entry for `key`, evicting the bucket's oldest.
    Base& insert(const Key& key) noexcept;
    size_t size() const noexcept { return used_; }

private:
    struct Slot {
        Key key;
        Base base;
        uint64_t born = 0; // 0: free
    };
    Slot* bucket(const Key& key) noexcept;

    std::unique_ptr<Slot[]> slots_;
    uint64_t clock_ = 0;
    size_t used_ = 0;
};

} // namespace xdpcap::text
