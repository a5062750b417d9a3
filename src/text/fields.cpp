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
    if (n == 0) {
        w.put("<empty>"sv);
        return;
    }
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

// tcpdump 4.99's names for ethertypes (its ethertype_values); nullptr for
// others.
const char* ethertype_name(uint16_t type) noexcept
{
    switch (type) {
    case 0x0800: return "IPv4";
    case 0x8847: return "MPLS unicast";
    case 0x8848: return "MPLS multicast";
    case 0x86dd: return "IPv6";
    case 0x8100: return "802.1Q";
    case 0x9100: return "802.1Q-9100";
    case 0x88a8: return "802.1Q-QinQ";
    case 0x9200: return "802.1Q-9200";
    case 0x88e5: return "802.1AE MACsec";
    case 0x0200: return "PUP";
    case 0x0806: return "ARP";
    case 0x8035: return "Reverse ARP";
    case 0x0600: return "NS";
    case 0x0500: return "Sprite";
    case 0x1000: return "Trail";
    case 0x6001: return "MOP DL";
    case 0x6002: return "MOP RC";
    case 0x6003: return "DN";
    case 0x6004: return "LAT";
    case 0x6007: return "SCA";
    case 0x6558: return "TEB";
    case 0x8038: return "Lanbridge";
    case 0x803c: return "DEC DNS";
    case 0x803e: return "DEC DTS";
    case 0x805b: return "VEXP";
    case 0x805c: return "VPROD";
    case 0x809b: return "Appletalk";
    case 0x80f3: return "Appletalk ARP";
    case 0x8137: return "IPX";
    case 0x880b: return "PPP";
    case 0x8808: return "MPCP";
    case 0x8809: return "Slow Protocols";
    case 0x8863: return "PPPoE D";
    case 0x8864: return "PPPoE S";
    case 0x888e: return "EAPOL";
    case 0x8899: return "Realtek protocols";
    case 0x886f: return "MS NLB heartbeat";
    case 0x8870: return "Jumbo";
    case 0x894f: return "NSH";
    case 0x9000: return "Loopback";
    case 0xfefe: return "OSI";
    case 0x00fe: return "GRE-OSI";
    case 0xabcd: return "CFM (old)";
    case 0x8902: return "CFM";
    case 0x893a: return "IEEE1905.1";
    case 0x88cc: return "LLDP";
    case 0x88ca: return "TIPC";
    case 0x0707: return "GeoNet (old)";
    case 0x8947: return "GeoNet";
    case 0x1111: return "CALM FAST";
    case 0x88a2: return "AoE";
    case 0x88f7: return "PTP";
    case 0xd28b: return "Arista Vendor Specific Protocol";
    default: return nullptr;
    }
}

// "IPv4 (0x0800)", or "Unknown (0x88b5)"; `with_number` false: the name
// alone where there is one.
void put_ethertype(Writer& w, uint16_t type, bool with_number) noexcept
{
    const char* name = ethertype_name(type);
    w.put(name ? std::string_view(name) : "Unknown"sv);
    if (with_number || !name) {
        w.put(" (0x"sv, Hex{type, 4}, ')');
    }
}

// The link header's type as tcpdump's ether_type_print() writes it:
// "ethertype IPv4 (0x0800)", with -q "IPv4" or "Unknown Ethertype (0x88b5)".
void put_link_ethertype(Writer& w, uint16_t type, bool quick) noexcept
{
    const char* name = ethertype_name(type);
    if (!quick) {
        w.put("ethertype "sv);
        put_ethertype(w, type, true);
    } else if (name) {
        w.put(std::string_view(name));
    } else {
        w.put("Unknown Ethertype (0x"sv, Hex{type, 4}, ')');
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

const char* ip_protocol_verbose_name(uint8_t protocol) noexcept
{
    switch (protocol) {
    case 0: return "Options";
    case kProtoIcmp: return "ICMP";
    case 2: return "IGMP";
    case kProtoIpip: return "IPIP";
    case kProtoTcp: return "TCP";
    case 8: return "EGP";
    case 9: return "IGRP";
    case kProtoUdp: return "UDP";
    case 33: return "DCCP";
    case kProtoIpv6: return "IPv6";
    case 43: return "Routing";
    case 44: return "Fragment";
    case 46: return "RSVP";
    case kProtoGre: return "GRE";
    case 50: return "ESP";
    case 51: return "AH";
    case 55: return "Mobile IP";
    case kProtoIcmp6: return "ICMPv6";
    case 62: return "Mobile IP (old)";
    case 88: return "EIGRP";
    case 89: return "OSPF";
    case 103: return "PIM";
    case 108: return "Compressed IP";
    case 112: return "VRRP";
    case 113: return "PGM";
    case 132: return "SCTP";
    case 135: return "Mobility";
    case 143: return "Ethernet";
    default: return nullptr;
    }
}

void InternetChecksum::add(const uint8_t* bytes, size_t n) noexcept
{
    size_t i = 0;
    if (odd_ && n > 0) {
        sum_ += bytes[0];
        odd_ = false;
        i = 1;
    }
    for (; i + 1 < n; i += 2)
        sum_ += static_cast<uint32_t>(bytes[i] << 8 | bytes[i + 1]);
    if (i < n) {
        sum_ += static_cast<uint32_t>(bytes[i] << 8);
        odd_ = true;
    }
}

uint16_t InternetChecksum::value() const noexcept
{
    uint64_t sum = sum_;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum & 0xffff);
}

uint16_t checksum_should_be(uint16_t field, uint16_t computed) noexcept
{
    uint32_t sum = uint32_t{field} + computed;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(sum);
}

uint16_t transport_checksum(const Endpoints& e, uint8_t protocol, const Bytes& l4, size_t length) noexcept
{
    InternetChecksum sum;
    sum.add(e.src_raw, e.address_size);
    sum.add(e.checksum_dst ? e.checksum_dst : e.dst_raw, e.address_size);
    sum.add16(static_cast<uint16_t>(length >> 16));
    sum.add16(static_cast<uint16_t>(length));
    sum.add16(protocol);
    sum.add(l4.data, length);
    return sum.value();
}

ChecksumCheck check_transport(const Endpoints& e, uint8_t protocol, const Bytes& l4, size_t length,
                              const DecodeOptions& o, uint16_t& should_be) noexcept
{
    // tcpdump's -K leaves ICMPv6's sum checked.
    if ((!o.verify_checksums && protocol != kProtoIcmp6) || !e.address_size || !l4.has(0, length))
        return ChecksumCheck::NotChecked;
    const uint16_t computed = transport_checksum(e, protocol, l4, length);
    if (computed == 0)
        return ChecksumCheck::Correct;
    should_be = checksum_should_be(l4.u16(protocol == kProtoUdp ? 6 : protocol == kProtoTcp ? 16 : 2), computed);
    return o.checksum_not_ready ? ChecksumCheck::Offloaded : ChecksumCheck::Incorrect;
}

void put_escaped(Writer& w, const uint8_t* bytes, size_t n) noexcept
{
    for (size_t i = 0; i < n; ++i) {
        uint8_t c = bytes[i];
        if (c >= 0x80) {
            c &= 0x7f;
            w.put("M-"sv);
        }
        if (c < 0x20 || c == 0x7f) {
            c ^= 0x40;
            w.put('^');
        }
        w.put(static_cast<char>(c));
    }
}

bool put_nul_padded(Writer& w, const Bytes& b, size_t at, size_t n) noexcept
{
    for (size_t i = at; i < at + n; ++i) {
        if (!b.has(i, 1))
            return false;
        if (b.u8(i) == 0)
            break;
        put_escaped(w, b.data + i, 1);
    }
    return true;
}

void put_flag_names(Writer& w, uint32_t value, FlagNames names, std::string_view none) noexcept
{
    bool any = false;
    for (const auto& [bit, name] : names) {
        if (value & bit) {
            if (any)
                w.put(", "sv);
            w.put(name);
            any = true;
        }
    }
    if (!any)
        w.put(none);
}

void put_checksum_verdict(Writer& w, std::string_view protocol, ChecksumCheck check, uint16_t field,
                          uint16_t should_be) noexcept
{
    switch (check) {
    case ChecksumCheck::NotChecked:
        return;
    case ChecksumCheck::Correct:
        w.put('[');
        w.put(protocol, " sum ok] "sv);
        return;
    case ChecksumCheck::Incorrect:
        w.put("[bad "sv);
        w.put(protocol, " cksum 0x"sv, Hex{field, 4}, " -> 0x"sv, Hex{should_be, 4}, "!] "sv);
        return;
    case ChecksumCheck::Offloaded:
        w.put('[');
        w.put(protocol, " sum offloaded] "sv);
        return;
    }
}

void put_protocol(Writer& w, uint8_t protocol) noexcept
{
    if (const char* name = ip_protocol_name(protocol)) {
        w.put(std::string_view(name));
    } else {
        w.put("ip-proto-"sv, protocol);
    }
}

// tcpdump's mark for a header the capture cut short, with its space.
void put_vlan_tci(Writer& w, uint16_t tci) noexcept
{
    w.put("vlan "sv, tci & 0x0fffu, ", p "sv, tci >> 13);
    if (tci & 0x1000)
        w.put(", DEI"sv);
    w.put(", "sv);
}

void put_truncated(Writer& w, std::string_view what) noexcept
{
    w.put(" [|"sv, what, ']');
}

void put_endpoints(Writer& w, const Endpoints& e, const Bytes& l4, bool with_ports) noexcept
{
    if (with_ports) {
        if (e.addresses) {
            w.put(e.src->view(), '.');
        }
        w.put(l4.u16(0), " > "sv);
        if (e.addresses) {
            w.put(e.dst->view(), '.');
        }
        w.dec(l4.u16(2));
    } else if (e.addresses) {
        w.put(e.src->view(), " > "sv, e.dst->view());
    }
    if (with_ports || e.addresses)
        w.put(": "sv);
}

// tcpdump's hex lines ("\n\t0x0010:  0001 0200 ..."), sixteen bytes a line,
// with the ASCII column of -X when `ascii`.
void put_hex_lines(Writer& w, const uint8_t* bytes, size_t n, bool ascii, std::string_view indent) noexcept
{
    for (size_t line = 0; line < n; line += 16) {
        const size_t count = n - line < 16 ? n - line : 16;
        w.put(indent, "0x"sv, Hex{line, 4}, ": "sv);
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
void put_unknown_data(Writer& w, const Bytes& data, size_t length, std::string_view indent) noexcept
{
    put_hex_lines(w, data.data, length < data.size ? length : data.size, false, indent);
}

void put_default_data(Writer& w, const Bytes& data, size_t length, std::string_view what) noexcept
{
    put_hex_lines(w, data.data, length < data.size ? length : data.size, true);
    if (length > data.size)
        put_truncated(w, what);
}

void put_abandoned(Writer& w, std::string_view what, const DecodeOptions& o) noexcept
{
    put_truncated(w, what);
    if (o.abandoned)
        *o.abandoned = true;
}

} // namespace xdpcap::text::detail

namespace xdpcap::text {

std::string escaped(std::string_view s)
{
    // At most "M-^X" for one byte.
    std::string out(s.size() * 4, '\0');
    Writer w(out.data(), out.size());
    detail::put_escaped(w, reinterpret_cast<const uint8_t*>(s.data()), s.size());
    out.resize(w.size());
    return out;
}

} // namespace xdpcap::text
