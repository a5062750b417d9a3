// The attributes of a netlink message (rtattr and nlattr share one layout:
// a 16-bit length, then a 16-bit type), walked in one place. Copied out
// field by field: a receive buffer need not be aligned.
#pragma once

#include <linux/netlink.h>

#include <cstdint>
#include <cstring>
#include <span>

namespace xdpcap {

// Calls visit(type, payload) for each attribute of `bytes`, the type
// without its flag bits, until one is malformed (too short, or past the
// end) or visit returns false. Returns false for a malformed one.
template <class Visit>
bool for_each_attribute(std::span<const uint8_t> bytes, Visit visit)
{
    size_t offset = 0;
    while (offset + NLA_HDRLEN <= bytes.size()) {
        nlattr attr;
        std::memcpy(&attr, bytes.data() + offset, sizeof attr);
        if (attr.nla_len < NLA_HDRLEN || attr.nla_len > bytes.size() - offset)
            return false;
        if (!visit(static_cast<uint16_t>(attr.nla_type & NLA_TYPE_MASK),
                   bytes.subspan(offset + NLA_HDRLEN, attr.nla_len - NLA_HDRLEN)))
            return true;
        offset += NLA_ALIGN(attr.nla_len);
    }
    return true;
}

// An attribute's payload as `T` when it holds one; `value` untouched
// otherwise.
template <class T>
void read_attribute(std::span<const uint8_t> payload, T& value)
{
    if (payload.size() >= sizeof value)
        std::memcpy(&value, payload.data(), sizeof value);
}

} // namespace xdpcap
