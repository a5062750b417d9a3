// Linux cooked captures (libpcap's "any" device): the SLL and SLL2 headers
// as tcpdump 4.99's sll_if_print() and sll2_if_print() show them, then the
// payload by its protocol field, as after an Ethernet header.
#include "text/layers.hpp"

namespace xdpcap::text::detail {

using namespace std::string_view_literals;

namespace {

constexpr size_t kSllHeader = 16;
constexpr size_t kSll2Header = 20;
constexpr size_t kMacLength = 6;
// Protocol values below 1536 that say what follows instead of an ethertype.
constexpr uint16_t kProtocol8023 = 0x0001; // Novell's 802.3 without LLC (IPX)
constexpr uint16_t kProtocol8022 = 0x0004; // an 802.2 LLC header

// The fields of either header, in host order.
struct Cooked {
    bool v2;
    size_t header;
    uint16_t packet_type;
    uint16_t hardware_type;
    size_t address_length;
    const uint8_t* address;
    uint16_t protocol;
    uint32_t ifindex; // SLL2 only
};

Cooked read_header(const Bytes& frame, bool v2) noexcept
{
    if (v2)
        return Cooked{true, kSll2Header, frame.u8(10), frame.u16(8), frame.u8(11), frame.data + 12, frame.u16(0),
                      frame.u32(4)};
    return Cooked{false, kSllHeader, frame.u16(0), frame.u16(2), frame.u16(4), frame.data + 6, frame.u16(14), 0};
}

// The kernel's PACKET_* types as tcpdump abbreviates them.
std::string_view packet_type_name(uint16_t type) noexcept
{
    switch (type) {
    case 0: return "In"sv;
    case 1: return "B"sv;
    case 2: return "M"sv;
    case 3: return "P"sv;
    case 4: return "Out"sv;
    default: return "?"sv;
    }
}

// printf's "%-*s" (left) or "%*s" (right) into a field of `width`.
void put_padded(Writer& w, std::string_view s, size_t width, bool left) noexcept
{
    if (left)
        w.put(s);
    for (size_t i = s.size(); i < width; ++i)
        w.put(' ');
    if (!left)
        w.put(s);
}

// What -e shows of the header (and, without -e, a payload not decoded):
// SLL's packet type or SLL2's interface index, the sender's MAC, the
// protocol and the frame's length.
void put_cooked_header(Writer& w, const Cooked& c, size_t length, bool quick) noexcept
{
    if (c.v2) {
        w.put("ifindex "sv, c.ifindex, ' ');
    } else {
        put_padded(w, packet_type_name(c.packet_type), 3, false);
        w.put(' ');
    }
    // Only a 6-byte address is shown, whatever the hardware type.
    if (c.address_length == kMacLength) {
        put_mac(w, c.address);
        w.put(' ');
    }
    if (quick)
        return;
    if (c.protocol == kProtocol8023) {
        w.put("802.3"sv);
    } else if (c.protocol == kProtocol8022) {
        w.put("802.2"sv);
    } else if (c.protocol <= 1500) {
        w.put("ethertype Unknown (0x"sv, Hex{c.protocol, 4}, ')');
    } else {
        w.put("ethertype "sv);
        put_ethertype(w, c.protocol, true);
    }
    w.put(", length "sv, length, ": "sv);
}

} // namespace

size_t print_linux_cooked(Writer& w, const Bytes& frame, size_t frame_length, bool v2, const DecodeOptions& o) noexcept
{
    if (abandoned_at(w, frame, 0, v2 ? kSll2Header : kSllHeader, v2 ? "sll2"sv : "sll"sv, o))
        return 0;
    const Cooked c = read_header(frame, v2);
    if (v2) {
        // The interface's name on this host, as tcpdump: the index may name
        // another interface here than where the capture was made.
        std::string_view name = o.interface_names ? o.interface_names->name(c.ifindex) : std::string_view();
        put_padded(w, name.empty() ? "?"sv : name, 5, true);
        w.put(' ');
        put_padded(w, packet_type_name(c.packet_type), 3, true);
        w.put(' ');
    }
    if (o.link_header)
        put_cooked_header(w, c, frame_length, o.quick);

    size_t header = c.header;
    Bytes payload = frame.from(header);
    size_t length = frame_length - header;
    // Radiotap (ARPHRD_IEEE80211_RADIOTAP) is not decoded: its bytes are
    // shown as data of an unknown type.
    constexpr uint16_t kHardwareRadiotap = 803;
    uint16_t type = c.hardware_type == kHardwareRadiotap ? 0 : c.protocol;
    // 802.1Q tags libpcap put back after the header; deeper stacks than
    // Ethernet's are shown as data.
    for (int tag = 0; type == kEtherVlan; ++tag) {
        if (payload.size < 4) {
            put_truncated(w, "vlan"sv);
            return header + payload.size;
        }
        if (tag == kMaxVlanTags) {
            type = 0;
            break;
        }
        if (o.link_header)
            put_vlan_tci(w, payload.u16(0));
        type = payload.u16(2);
        if (type <= 1500)
            type = kProtocol8022;
        if (!o.quick) {
            const char* name = ethertype_name(type);
            w.put("ethertype "sv, name ? std::string_view(name) : "Unknown"sv, ", "sv);
        }
        payload = payload.from(4);
        length -= 4;
        header += 4;
    }
    if (type == kProtocol8022) {
        const long llc = print_llc(w, payload, length, nullptr, o);
        if (llc >= 0)
            return header + static_cast<size_t>(llc);
        // An LLC payload not decoded: dumped from the LLC header on.
    } else if (type > 1500) {
        if (print_ethertype_payload(w, type, payload, length, o))
            return header;
        // Without -e, tcpdump names the header's fields for a type it
        // does not decode.
        if (!o.link_header)
            put_cooked_header(w, c, length + c.header, o.quick);
    }
    // Other protocols below 1536 (IPX among them) are not decoded either.
    if (default_data_wanted(o))
        put_hex_lines(w, payload.data, payload.size, true);
    return header;
}

} // namespace xdpcap::text::detail
