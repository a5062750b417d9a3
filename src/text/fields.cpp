// Addresses, names and marks that every layer of the text view writes.
#include "text/layers.hpp"

namespace xdpcap::text::detail {

using namespace std::string_view_literals;

AddressText ipv4_text(const uint8_t* a) noexcept
{
    AddressText t;
    Writer w(t.text, sizeof t.text);
    for (int i = 0; i < 4; ++i) {
        if (i)
            w.put('.');
        w.dec(a[i]);
    }
    t.length = w.size();
    return t;
}

// RFC 5952: lower case, no leading zeros, the longest run (two groups or
// more, the first of equals) of zero groups as "::"; mapped IPv4 dotted.
AddressText ipv6_text(const uint8_t* a) noexcept
{
    AddressText t;
    Writer w(t.text, sizeof t.text);
    uint16_t groups[8];
    for (int i = 0; i < 8; ++i)
        groups[i] = static_cast<uint16_t>(a[2 * i] << 8 | a[2 * i + 1]);
    int best = -1, best_length = 0;
    for (int i = 0; i < 8;) {
        if (groups[i] != 0) {
            ++i;
            continue;
        }
        int j = i;
        while (j < 8 && groups[j] == 0)
            ++j;
        if (j - i > best_length && j - i >= 2) {
            best = i;
            best_length = j - i;
        }
        i = j;
    }
    // An IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible (::a.b.c.d)
    // address ends in the IPv4 notation, as inet_ntop and tcpdump write it.
    const bool mapped = best == 0 && (best_length == 6 || (best_length == 5 && groups[5] == 0xffff));
    for (int i = 0; i < 8; ++i) {
        if (i == best) {
            w.put("::"sv);
            i += best_length - 1;
            continue;
        }
        if (mapped && i == 6) {
            if (i != best + best_length)
                w.put(':');
            const AddressText v4 = ipv4_text(a + 12);
            w.put(v4.view());
            break;
        }
        if (i != 0 && i != best + best_length)
            w.put(':');
        w.hex(groups[i]);
    }
    t.length = w.size();
    return t;
}

void put_mac(Writer& w, const uint8_t* m) noexcept
{
    for (int i = 0; i < 6; ++i) {
        if (i)
            w.put(':');
        w.hex_byte(m[i]);
    }
}

// A hardware address as tcpdump writes one: a MAC, or any other length as
// colon-separated hex bytes.
void put_link_address(Writer& w, const uint8_t* a, size_t n) noexcept
{
    if (n == 6) {
        put_mac(w, a);
        return;
    }
    for (size_t i = 0; i < n; ++i) {
        if (i)
            w.put(':');
        w.hex_byte(a[i]);
    }
}

// tcpdump's names for the ethertypes it knows; nullptr for others.
const char* ethertype_name(uint16_t type) noexcept
{
    switch (type) {
    case kEtherIPv4:
        return "IPv4";
    case kEtherArp:
        return "ARP";
    case kEtherIPv6:
        return "IPv6";
    case kEtherVlan:
        return "802.1Q";
    case kEtherQinQ:
        return "802.1Q-QinQ";
    case kEtherQinQOld:
        return "802.1Q-9100";
    case 0x8035:
        return "Reverse ARP";
    case 0x8847:
        return "MPLS unicast";
    case 0x8848:
        return "MPLS multicast";
    case 0x8863:
        return "PPPoE D";
    case 0x8864:
        return "PPPoE S";
    case 0x888e:
        return "EAPOL";
    case 0x88cc:
        return "LLDP";
    case 0x88f7:
        return "PTP";
    case 0x8809:
        return "Slow Protocols";
    case 0x9000:
        return "Loopback";
    default:
        return nullptr;
    }
}

// "IPv4 (0x0800)", or "Unknown (0x88b5)"; `with_number` false: the name
// alone where there is one.
void put_ethertype(Writer& w, uint16_t type, bool with_number) noexcept
{
    const char* name = ethertype_name(type);
    w.put(name ? std::string_view(name) : "Unknown"sv);
    if (with_number || !name) {
        w.put(" (0x"sv);
        w.hex(type, 4);
        w.put(')');
    }
}

const char* ip_protocol_name(uint8_t protocol) noexcept
{
    switch (protocol) {
    case kProtoIcmp:
        return "ICMP";
    case 2:
        return "IGMP";
    case 4:
        return "IPIP";
    case kProtoTcp:
        return "TCP";
    case kProtoUdp:
        return "UDP";
    case 41:
        return "IPv6";
    case 47:
        return "GRE";
    case 50:
        return "ESP";
    case 51:
        return "AH";
    case kProtoIcmp6:
        return "ICMP6";
    case 89:
        return "OSPF";
    case 103:
        return "PIM";
    case 112:
        return "VRRP";
    case 132:
        return "SCTP";
    case 136:
        return "UDPLite";
    default:
        return nullptr;
    }
}

void put_protocol(Writer& w, uint8_t protocol) noexcept
{
    if (const char* name = ip_protocol_name(protocol)) {
        w.put(std::string_view(name));
    } else {
        w.put("ip-proto-"sv);
        w.dec(protocol);
    }
}

// tcpdump's mark for a header the capture cut short, with its space.
void put_truncated(Writer& w, std::string_view what) noexcept
{
    w.put(" [|"sv);
    w.put(what);
    w.put(']');
}

void put_endpoints(Writer& w, const Endpoints& e, const Bytes& l4, bool with_ports) noexcept
{
    if (with_ports) {
        if (e.addresses) {
            w.put(e.src->view());
            w.put('.');
        }
        w.dec(l4.u16(0));
        w.put(" > "sv);
        if (e.addresses) {
            w.put(e.dst->view());
            w.put('.');
        }
        w.dec(l4.u16(2));
    } else if (e.addresses) {
        w.put(e.src->view());
        w.put(" > "sv);
        w.put(e.dst->view());
    }
    if (with_ports || e.addresses)
        w.put(": "sv);
}

// tcpdump's hex lines ("\n\t0x0010:  0001 0200 ..."), sixteen bytes a line,
// with the ASCII column of -X when `ascii`.
void put_hex_lines(Writer& w, const uint8_t* bytes, size_t n, bool ascii) noexcept
{
    for (size_t line = 0; line < n; line += 16) {
        const size_t count = n - line < 16 ? n - line : 16;
        w.put("\n\t0x"sv);
        w.hex(line, 4);
        w.put(": "sv);
        size_t width = 0;
        for (size_t i = 0; i < count; i += 2) {
            w.put(' ');
            w.hex_byte(bytes[line + i]);
            width += 3;
            if (i + 1 < count) {
                w.hex_byte(bytes[line + i + 1]);
                width += 2;
            }
        }
        if (!ascii)
            continue;
        for (; width < 40 + 2; ++width)
            w.put(' ');
        for (size_t i = 0; i < count; ++i) {
            const uint8_t c = bytes[line + i];
            w.put(c >= 0x21 && c <= 0x7e ? static_cast<char>(c) : '.');
        }
    }
}

// tcpdump's hex lines for data it does not decode: "\n\t0x0000:  0105 ...",
// eight 16-bit groups a line, over what was captured.
void put_unknown_data(Writer& w, const Bytes& data, size_t length) noexcept
{
    put_hex_lines(w, data.data, length < data.size ? length : data.size, false);
}

} // namespace xdpcap::text::detail
