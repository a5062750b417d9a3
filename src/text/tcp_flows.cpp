#include "text/tcp_flows.hpp"

#include <cstring>

namespace xdpcap::text {

namespace {

// Word-wise multiply-xorshift over the key: a few multiplications a packet,
// the high bits folded into the low ones the bucket index takes.
uint64_t hash_of(const TcpFlows::Key& key) noexcept
{
    uint64_t words[4];
    std::memcpy(words, key.src, sizeof key.src);
    std::memcpy(words + 2, key.dst, sizeof key.dst);
    uint64_t h = uint64_t{key.ports} << 8 | key.family;
    for (const uint64_t w : words) {
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 32;
    }
    return h;
}

} // namespace

TcpFlows::TcpFlows() : slots_(std::make_unique<Slot[]>(kCapacity)) {}

TcpFlows::Slot* TcpFlows::bucket(const Key& key) noexcept
{
    return &slots_[(hash_of(key) % (kCapacity / kWays)) * kWays];
}

TcpFlows::Base* TcpFlows::find(const Key& key) noexcept
{
    Slot* b = bucket(key);
    for (size_t i = 0; i < kWays; ++i)
        if (b[i].born != 0 && b[i].key == key)
            return &b[i].base;
    return nullptr;
}

TcpFlows::Base& TcpFlows::insert(const Key& key) noexcept
{
    Slot* b = bucket(key);
    Slot* pick = &b[0];
    for (size_t i = 0; i < kWays; ++i) {
        if (b[i].born != 0 && b[i].key == key) {
            pick = &b[i];
            break;
        }
        if (b[i].born < pick->born)
            pick = &b[i]; // free (0) or older
    }
    if (pick->born == 0)
        ++used_;
    pick->key = key;
    pick->base = {};
    pick->born = ++clock_;
    return pick->base;
}

} // namespace xdpcap::text
