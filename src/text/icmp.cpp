// ICMP and ICMPv6 as tcpdump 4.99 prints them, with -v and without.
#include "text/layers.hpp"

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <utility>

namespace xdpcap::text::detail {

using namespace std::string_view_literals;

namespace {

// tcpdump 4.99's clock notation for ICMP timestamps (milliseconds since
// midnight UTC): hours are not wrapped.
void put_icmp_time(Writer& m, uint32_t ms) noexcept
{
    const uint32_t seconds = ms / 1000;
    if (seconds / 3600 < 10)
        m.put('0');
    m.put(seconds / 3600, ':');
    m.padded(seconds / 60 % 60, 2);
    m.put(':');
    m.padded(seconds % 60, 2);
    m.put('.');
    m.padded(ms % 1000, 3);
}

// What an ICMP message's printer reads: the header and the IP packet an
// error quotes from kQuoted on. The message goes to `m`.
struct IcmpFields {
    Writer& m;
    Cursor c;
    uint8_t type;
    uint8_t code;
    std::string_view name;
};
constexpr size_t kQuoted = 8;

// The quoted packet's destination.
AddressText quoted_dst(IcmpFields& f) noexcept
{
    return ipv4_text(f.c.address(kQuoted + 16, 4));
}

bool icmp_echo(IcmpFields& f) noexcept
{
    const uint16_t id = f.c.u16(4);
    const uint16_t seq = f.c.u16(6);
    f.m.put(f.type == 8 ? "echo request, id "sv : "echo reply, id "sv, id, ", seq "sv, seq);
    return f.c.ok();
}

bool icmp_unreachable(IcmpFields& f) noexcept
{
    Cursor& c = f.c;
    const uint8_t code = f.code;
    // "net"/"host" before the address, and what follows it, by code.
    constexpr struct {
        std::string_view before;
        std::string_view after;
    } kUnreachable[] = {
        {"net "sv, " unreachable"sv},
        {"host "sv, " unreachable"sv},
        {""sv, ""sv}, // protocol: below
        {""sv, ""sv}, // port: below
        {""sv, ""sv}, // need to frag: below
        {""sv, " unreachable - source route failed"sv},
        {"net "sv, " unreachable - unknown"sv},
        {"host "sv, " unreachable - unknown"sv},
        {""sv, " unreachable - source host isolated"sv},
        {"net "sv, " unreachable - admin prohibited"sv},
        {"host "sv, " unreachable - admin prohibited"sv},
        {"net "sv, " unreachable - tos prohibited"sv},
        {"host "sv, " unreachable - tos prohibited"sv},
        {"host "sv, " unreachable - admin prohibited filter"sv},
        {"host "sv, " unreachable - host precedence violation"sv},
        {"host "sv, " unreachable - precedence cutoff"sv},
    };
    const AddressText dst = quoted_dst(f);
    if (code == 2 || code == 3) {
        const uint8_t protocol = c.u8(kQuoted + 9);
        if (code == 2) {
            f.m.put(dst.view(), " protocol "sv, protocol, " unreachable"sv);
            return c.ok();
        }
        const size_t header = size_t{c.u8(kQuoted) & 15u} * 4;
        const uint16_t port = c.u16(kQuoted + header + 2);
        f.m.put(dst.view());
        if (protocol == kProtoTcp || protocol == kProtoUdp)
            f.m.put(protocol == kProtoTcp ? " tcp port "sv : " udp port "sv);
        else
            f.m.put(" protocol "sv, protocol, " port "sv);
        f.m.put(port, " unreachable"sv);
    } else if (code == 4) {
        const uint16_t mtu = c.u16(6);
        f.m.put(dst.view(), " unreachable - need to frag"sv);
        if (mtu)
            f.m.put(" (mtu "sv, mtu, ')');
    } else if (code < std::size(kUnreachable)) {
        f.m.put(kUnreachable[code].before, dst.view(), kUnreachable[code].after);
    } else {
        f.m.put(dst.view(), " unreachable - #"sv, code);
    }
    return c.ok();
}

bool icmp_redirect(IcmpFields& f) noexcept
{
    const AddressText dst = quoted_dst(f);
    const AddressText gateway = ipv4_text(f.c.address(4, 4));
    constexpr std::string_view kRedirect[] = {"redirect "sv, "redirect "sv, "redirect-tos "sv, "redirect-tos "sv};
    constexpr std::string_view kTo[] = {" to net "sv, " to host "sv, " to net "sv, " to host "sv};
    if (f.code < 4)
        f.m.put(kRedirect[f.code], dst.view(), kTo[f.code]);
    else
        f.m.put("redirect-#"sv, f.code, ' ', dst.view(), " to "sv);
    f.m.put(gateway.view());
    return f.c.ok();
}

bool icmp_router_advertisement(IcmpFields& f) noexcept
{
    Cursor& c = f.c;
    const uint32_t lifetime = c.u16(6);
    const uint8_t count = c.u8(4);
    const uint8_t entry_size = c.u8(5);
    f.m.put("router advertisement lifetime "sv);
    if (lifetime >= 3600) {
        f.m.put(lifetime / 3600, ':');
        f.m.padded(lifetime % 3600 / 60, 2);
        f.m.put(':');
        f.m.padded(lifetime % 60, 2);
    } else if (lifetime >= 60) {
        f.m.put(lifetime / 60, ':');
        f.m.padded(lifetime % 60, 2);
    } else {
        f.m.dec(lifetime);
    }
    f.m.put(' ', count, ':');
    if (entry_size != 2) {
        f.m.put(" [size "sv, entry_size, ']');
        return c.ok();
    }
    for (size_t i = 0; i < count && c.ok(); ++i) {
        const size_t at = 8 + 8 * i;
        const AddressText router = ipv4_text(c.address(at, 4));
        f.m.put(" {"sv, router.view(), ' ', c.u32(at + 4), '}');
    }
    return c.ok();
}

bool icmp_time_exceeded(IcmpFields& f) noexcept
{
    if (f.code < 2)
        f.m.put(f.code == 0 ? "time exceeded in-transit"sv : "ip reassembly time exceeded"sv);
    else
        f.m.put("time exceeded-#"sv, f.code);
    return f.c.need(kQuoted + 16, 4);
}

bool icmp_parameter_problem(IcmpFields& f) noexcept
{
    if (f.code)
        f.m.put("parameter problem - code "sv, f.code);
    else
        f.m.put("parameter problem - octet "sv, f.c.u8(4));
    return f.c.ok();
}

bool icmp_timestamp(IcmpFields& f) noexcept
{
    Cursor& c = f.c;
    f.m.put(f.type == 13 ? "time stamp query id "sv : "time stamp reply id "sv, c.u16(4), " seq "sv, c.u16(6));
    if (f.type == 14) {
        const uint32_t times[] = {c.u32(8), c.u32(12), c.u32(16)};
        f.m.put(": org "sv);
        put_icmp_time(f.m, times[0]);
        f.m.put(", recv "sv);
        put_icmp_time(f.m, times[1]);
        f.m.put(", xmit "sv);
        put_icmp_time(f.m, times[2]);
    }
    return c.ok();
}

bool icmp_mask_reply(IcmpFields& f) noexcept
{
    f.m.put("address mask is 0x"sv, Hex{f.c.u32(8), 8});
    return f.c.ok();
}

bool icmp_named(IcmpFields& f) noexcept
{
    f.m.put(f.name);
    return true;
}

using IcmpBody = bool (*)(IcmpFields&) noexcept;
constexpr struct {
    uint8_t type;
    IcmpBody body;
    std::string_view name; // what icmp_named() writes
} kIcmpTypes[] = {
    {0, icmp_echo, {}},
    {3, icmp_unreachable, {}},
    {4, icmp_named, "source quench"sv},
    {5, icmp_redirect, {}},
    {8, icmp_echo, {}},
    {9, icmp_router_advertisement, {}},
    {10, icmp_named, "router solicitation"sv},
    {11, icmp_time_exceeded, {}},
    {12, icmp_parameter_problem, {}},
    {13, icmp_timestamp, {}},
    {14, icmp_timestamp, {}},
    {15, icmp_named, "information request"sv},
    {16, icmp_named, "information reply"sv},
    {17, icmp_named, "address mask request"sv},
    {18, icmp_mask_reply, {}},
};

// The ICMP message as tcpdump words it, written into `m`; false when a field
// it needs was not captured (tcpdump then prints none of it).
bool icmp_message(Writer& m, const Bytes& l4) noexcept
{
    if (!l4.has(0, 2))
        return false;
    IcmpFields f{m, Cursor(l4), l4.u8(0), l4.u8(1), {}};
    for (const auto& t : kIcmpTypes) {
        if (t.type == f.type) {
            f.name = t.name;
            return t.body(f);
        }
    }
    m.put("type-#"sv, f.type);
    return true;
}

// The upper-layer header an ICMPv6 error quotes, found as tcpdump finds it:
// through hop-by-hop, destination, routing, first-fragment and AH headers to
// TCP or UDP; false where the chain leaves the capture or leads elsewhere.
bool quoted_transport(const Bytes& ip6, uint8_t& protocol, size_t& at) noexcept
{
    if (!ip6.has(6, 1))
        return false;
    protocol = ip6.u8(6);
    at = 40;
    for (int headers = 0; headers < 64 && at < ip6.size; ++headers) {
        switch (protocol) {
        case kProtoTcp:
        case kProtoUdp:
            return ip6.has(at + 2, 2);
        case 0:  // hop-by-hop
        case 60: // destination options
        case 43: // routing
            if (!ip6.has(at + 1, 1))
                return false;
            protocol = ip6.u8(at);
            at += (size_t{ip6.u8(at + 1)} + 1) * 8;
            break;
        case 44: // fragment: only the first one carries the header
            if (!ip6.has(at + 2, 2) || (ip6.u16(at + 2) & 0xfff8) != 0)
                return false;
            protocol = ip6.u8(at);
            at += 8;
            break;
        case 51: // AH
            if (!ip6.has(at + 1, 1))
                return false;
            protocol = ip6.u8(at);
            at += (size_t{ip6.u8(at + 1)} + 2) * 4;
            break;
        default:
            return false;
        }
    }
    return false;
}

void put_lifetime(Writer& w, uint32_t seconds) noexcept
{
    if (seconds == 0xffffffff) {
        w.put("infinity"sv);
    } else {
        w.put(seconds, 's');
    }
}

std::string_view router_preference(uint8_t flags) noexcept
{
    constexpr std::string_view kNames[] = {"medium"sv, "high"sv, "rsv"sv, "low"sv};
    return kNames[(flags >> 3) & 3];
}

// How a list ends where tcpdump's printer ends it: with all of it, with its
// own mark for a cut, or abandoning the packet.
enum class ListEnd { Complete, Cut, Abandoned };

// A neighbour discovery option being printed: `option` from its type on,
// `size` bytes of it captured, `units` of 8 bytes.
struct NdOption {
    Writer& w;
    const Bytes& l4;
    size_t start; // the first option's offset
    size_t at;    // this one's
    Bytes option;
    size_t units;
    size_t size;
};
// How an option's printer ends: the list goes on, or ends as ListEnd says.
enum class NdNext { Next, Cut, Abandoned };

NdNext nd_link_address(NdOption& n) noexcept
{
    for (size_t i = 2; i < n.size; ++i) {
        if (i > 2)
            n.w.put(':');
        n.w.hex_byte(n.option.u8(i));
    }
    return NdNext::Next;
}

NdNext nd_prefix_information(NdOption& n) noexcept
{
    if (!n.option.has(0, 32))
        return NdNext::Abandoned;
    n.w.put(ipv6_text(n.option.data + 16).view(), '/', n.option.u8(2));
    if (n.units != 4)
        n.w.put("badlen"sv);
    n.w.put(", Flags ["sv);
    put_flag_names(n.w, n.option.u8(3), {{0x80, "onlink"sv}, {0x40, "auto"sv}, {0x20, "router"sv}});
    n.w.put("], valid time "sv);
    put_lifetime(n.w, n.option.u32(4));
    n.w.put(", pref. time "sv);
    put_lifetime(n.w, n.option.u32(8));
    return NdNext::Next;
}

NdNext nd_redirected_header(NdOption& n) noexcept
{
    // tcpdump dumps from the first option on, this one's length.
    put_unknown_data(n.w, n.l4.from(n.start), n.size, "\n\t    "sv);
    return NdNext::Next;
}

NdNext nd_mtu(NdOption& n) noexcept
{
    n.w.put(' ', n.option.u32(4));
    if (n.units != 1)
        n.w.put("bad option length"sv);
    return NdNext::Next;
}

NdNext nd_rdnss(NdOption& n) noexcept
{
    n.w.put(" lifetime "sv, n.option.u32(4), "s,"sv);
    for (size_t i = 0; i < (n.units - 1) / 2; ++i)
        n.w.put(" addr: "sv, ipv6_text(n.option.data + 8 + 16 * i).view());
    return NdNext::Next;
}

NdNext nd_dnssl(NdOption& n) noexcept
{
    n.w.put(" lifetime "sv, n.option.u32(4), "s, domain(s):"sv);
    size_t name = 8;
    while (name < n.size && n.option.u8(name) != 0) {
        n.w.put(' ');
        name = put_domain_name(n.w, n.l4, n.at + name, n.start);
        if (name == kNoName)
            return NdNext::Cut;
        name -= n.at;
    }
    return NdNext::Next;
}

NdNext nd_advertisement_interval(NdOption& n) noexcept
{
    n.w.put(' ', n.option.u32(4), "ms"sv);
    return NdNext::Next;
}

NdNext nd_home_agent_information(NdOption& n) noexcept
{
    n.w.put(" preference "sv, n.option.u16(4), ", lifetime "sv, n.option.u16(6));
    return NdNext::Next;
}

NdNext nd_route_information(NdOption& n) noexcept
{
    if (n.units > 3)
        return NdNext::Cut;
    uint8_t prefix[16] = {};
    for (size_t i = 0; i < (n.units - 1) * 8; ++i)
        prefix[i] = n.option.u8(8 + i);
    n.w.put(' ', ipv6_text(prefix).view(), '/', n.option.u8(2), ", pref="sv, router_preference(n.option.u8(3)),
            ", lifetime="sv);
    put_lifetime(n.w, n.option.u32(4));
    return NdNext::Next;
}

// The options tcpdump's icmp6_opt_print names: type, name, printer.
constexpr struct {
    uint8_t type;
    std::string_view name;
    NdNext (*print)(NdOption&) noexcept;
} kNdOptions[] = {
    {1, "source link-address"sv, nd_link_address},
    {2, "destination link-address"sv, nd_link_address},
    {3, "prefix info"sv, nd_prefix_information},
    {4, "redirected header"sv, nd_redirected_header},
    {5, "mtu"sv, nd_mtu},
    {25, "rdnss"sv, nd_rdnss},
    {31, "dnssl"sv, nd_dnssl},
    {7, "advertisement interval"sv, nd_advertisement_interval},
    {8, "homeagent information"sv, nd_home_agent_information},
    {24, "route info"sv, nd_route_information},
};

// Neighbour discovery options from `start` (tcpdump's icmp6_opt_print, -v).
ListEnd put_nd_options(Writer& w, const Bytes& l4, size_t start, size_t length, const DecodeOptions& o) noexcept
{
    // tcpdump's count of what is left is signed.
    long rest = static_cast<long>(length) - static_cast<long>(start);
    size_t at = start;
    while (at < l4.size) {
        if (!l4.has(at + 1, 1))
            return ListEnd::Cut;
        if (rest <= 0)
            return ListEnd::Complete;
        const uint8_t type = l4.u8(at);
        const size_t units = l4.u8(at + 1);
        if (units == 0 || !l4.has(at, units * 8))
            return ListEnd::Cut;
        NdOption n{w, l4, start, at, l4.from(at), units, units * 8};
        const auto* known = std::find_if(std::begin(kNdOptions), std::end(kNdOptions),
                                         [&](const auto& k) { return k.type == type; });
        const bool unknown = known == std::end(kNdOptions);
        w.put("\n\t  "sv, unknown ? "unknown"sv : known->name, " option ("sv, type, "), length "sv, n.size, " ("sv,
              units, "): "sv);
        if (unknown && o.verbose <= 1) {
            put_unknown_data(w, n.option.from(2), n.size - 2, "\n\t  "sv);
            return ListEnd::Complete;
        }
        switch (unknown ? NdNext::Next : known->print(n)) {
        case NdNext::Cut:
            return ListEnd::Cut;
        case NdNext::Abandoned:
            return ListEnd::Abandoned;
        default:
            break;
        }
        if (o.verbose > 1)
            put_unknown_data(w, n.option.from(2), n.size - 2, "\n\t    "sv);
        at += n.size;
        rest -= static_cast<long>(n.size);
    }
    return ListEnd::Complete;
}

// What an ICMPv6 type's printer reads and where it writes. A printer
// returns false where tcpdump's runs out of captured bytes: the caller ends
// the line with " [|icmp6]", as tcpdump's own mark where `checked_cut` is set.
struct Icmp6Fields {
    Writer& w;
    const Bytes& l4;
    size_t length;
    const DecodeOptions& o;
    uint8_t type;
    uint8_t code;
    bool checked_cut = false;

    // `prefix` and the address at `at`, or (not captured) nothing: tcpdump
    // reads a field before it prints the words around it.
    bool address(std::string_view prefix, size_t at) noexcept
    {
        if (!l4.has(at, 16))
            return false;
        w.put(prefix, ipv6_text(l4.data + at).view());
        return true;
    }
    // Neighbour discovery options from `start`.
    bool options(size_t start) noexcept
    {
        const ListEnd end = put_nd_options(w, l4, start, length, o);
        checked_cut = end == ListEnd::Cut;
        return end == ListEnd::Complete;
    }
    // A list of `n` addresses from `at`, as " { A B }".
    bool address_list(size_t at, size_t n) noexcept
    {
        w.put(" {"sv);
        for (size_t i = 0; i < n; ++i) {
            if (!address(" "sv, at + 16 * i))
                return false;
        }
        w.put(" }"sv);
        return true;
    }
};
// An error's quoted IPv6 packet: its source and destination.
constexpr size_t kQuoted6 = 8;
constexpr size_t kQuotedSrc = kQuoted6 + 8;
constexpr size_t kQuotedDst = kQuoted6 + 24;

bool icmp6_unreachable(Icmp6Fields& f) noexcept
{
    switch (f.code) {
    case 0:
        f.w.put(", unreachable route"sv);
        return f.address(" "sv, kQuotedDst);
    case 1:
        f.w.put(",  unreachable prohibited"sv);
        return f.address(" "sv, kQuotedDst);
    case 3:
        f.w.put(", unreachable address"sv);
        return f.address(" "sv, kQuotedDst);
    case 2:
        f.w.put(", beyond scope"sv);
        if (!f.l4.has(kQuotedSrc, 32))
            return false;
        f.address(" "sv, kQuotedDst);
        return f.address(", source address "sv, kQuotedSrc);
    case 4: {
        f.w.put(", unreachable port"sv);
        uint8_t protocol = 0;
        size_t at = 0;
        if (!quoted_transport(f.l4.from(kQuoted6), protocol, at) || !f.address(", "sv, kQuotedDst))
            return false;
        f.w.put(protocol == kProtoTcp ? " tcp port "sv : " udp port "sv, f.l4.u16(kQuoted6 + at + 2));
        return true;
    }
    default:
        f.w.put(", unknown unreach code ("sv, f.code, ')');
        if (f.o.verbose <= 1)
            put_unknown_data(f.w, f.l4, f.length);
        return true;
    }
}

bool icmp6_packet_too_big(Icmp6Fields& f) noexcept
{
    if (!f.l4.has(4, 4))
        return false;
    f.w.put(", mtu "sv, f.l4.u32(4));
    return true;
}

bool icmp6_time_exceeded(Icmp6Fields& f) noexcept
{
    if (f.code == 0)
        return f.address(" for "sv, kQuotedDst);
    if (f.code == 1)
        f.w.put(" (reassembly)"sv);
    else
        f.w.put(", unknown code ("sv, f.code, ')');
    return true;
}

bool icmp6_parameter_problem(Icmp6Fields& f) noexcept
{
    if (!f.l4.has(kQuotedDst, 16))
        return false;
    constexpr std::string_view kWhat[] = {", erroneous - octet "sv, ", next header - octet "sv,
                                          ", option - octet "sv, ", incomplete header chain - octet "sv};
    if (f.code >= std::size(kWhat)) {
        f.w.put(", code-#"sv, f.code);
        return true;
    }
    if (!f.l4.has(4, 4))
        return false;
    f.w.put(kWhat[f.code], f.l4.u32(4));
    return true;
}

bool icmp6_echo(Icmp6Fields& f) noexcept
{
    Cursor c(f.l4);
    const uint16_t id = c.u16(4);
    const uint16_t seq = c.u16(6);
    if (c.ok())
        f.w.put(", id "sv, id, ", seq "sv, seq);
    return c.ok();
}

// MLD's fields as tcpdump 4.99 prints them (straight after the type name).
bool icmp6_mld(Icmp6Fields& f) noexcept
{
    if (f.l4.has(0, 24))
        f.w.put("max resp delay: "sv, f.l4.u16(4), " addr: "sv, ipv6_text(f.l4.data + 8).view());
    return true;
}

// An MLDv2 query: its maximum response code and QQIC in their
// floating-point forms above 32767 and 127.
bool icmp6_mld2_query(Icmp6Fields& f) noexcept
{
    const Bytes& l4 = f.l4;
    Writer& w = f.w;
    w.put(" v2"sv);
    if (!l4.has(4, 2))
        return false;
    if (f.o.verbose) {
        const uint32_t code = l4.u16(4);
        w.put(" [max resp delay="sv,
              code < 32768 ? code : ((code & 0x0fff) | 0x1000) << (((code & 0x7000) >> 12) + 3), ']');
    }
    if (!f.address(" [gaddr "sv, 8))
        return false;
    if (f.o.verbose) {
        // Byte by byte, as tcpdump reads them: the flags may print before
        // the QQIC is found cut.
        if (!l4.has(24, 1))
            return false;
        const uint8_t flags = l4.u8(24);
        if (flags & 0x08)
            w.put(" sflag"sv);
        if (flags & 0x07)
            w.put(" robustness="sv, flags & 0x07);
        if (!l4.has(25, 1))
            return false;
        const uint32_t qqic = l4.u8(25);
        w.put(" qqi="sv, qqic < 128 ? qqic : ((qqic & 0x0f) | 0x10) << (((qqic & 0x70) >> 4) + 3));
    }
    if (!l4.has(26, 2))
        return false;
    if (const uint16_t sources = l4.u16(26)) {
        if (f.length < 28 + size_t{sources} * 16)
            w.put(" [invalid number of sources]"sv);
        else if (f.o.verbose <= 1)
            w.put(", "sv, sources, " source(s)"sv);
        else if (!f.address_list(28, sources))
            return false;
    }
    w.put(']');
    return true;
}

bool icmp6_mld_query(Icmp6Fields& f) noexcept
{
    if (f.length == 24)
        return icmp6_mld(f);
    if (f.length >= 28)
        return icmp6_mld2_query(f);
    f.w.put(" unknown-version (len "sv, f.length, ") "sv);
    return true;
}

// One group record of an MLDv2 report at `group`; the next one's offset, 0
// where the line ends with the record, kNoName where the capture does.
size_t mld2_group_record(Icmp6Fields& f, size_t group) noexcept
{
    Writer& w = f.w;
    if (f.length < group + 20) {
        w.put(" [invalid number of groups]"sv);
        return 0;
    }
    if (!f.address(" [gaddr "sv, group + 4))
        return kNoName;
    constexpr std::string_view kRecordTypes[] = {"is_in"sv, "is_ex"sv, "to_in"sv, "to_ex"sv, "allow"sv, "block"sv};
    const uint8_t record_type = f.l4.u8(group);
    w.put(' ');
    if (record_type >= 1 && record_type <= 6)
        w.put(kRecordTypes[record_type - 1]);
    else
        w.put(" [v2-report-#"sv, record_type, ']');
    const size_t sources = f.l4.u16(group + 2);
    if (f.length < group + 20 + sources * 16) {
        w.put(" [invalid number of sources "sv, sources, ']');
        return 0;
    }
    if (f.o.verbose == 1)
        w.put(", "sv, sources, " source(s)"sv);
    else if (!f.address_list(group + 20, sources))
        return kNoName;
    w.put(']');
    return group + 20 + sources * 16;
}

bool icmp6_mld2_report(Icmp6Fields& f) noexcept
{
    if (f.length < 8) {
        f.w.put(" [invalid len "sv, f.length, ']');
        return true;
    }
    if (!f.l4.has(6, 2))
        return false;
    const uint16_t groups = f.l4.u16(6);
    f.w.put(", "sv, groups, " group record(s)"sv);
    if (!f.o.verbose)
        return true;
    size_t group = 8;
    for (size_t i = 0; i < groups; ++i) {
        group = mld2_group_record(f, group);
        if (group == 0 || group == kNoName)
            return group == 0;
    }
    return true;
}

bool icmp6_neighbor(Icmp6Fields& f) noexcept
{
    if (!f.address(f.type == 135 ? ", who has "sv : ", tgt is "sv, 8))
        return false;
    if (!f.o.verbose)
        return true;
    if (f.type == 136) {
        f.w.put(", Flags ["sv);
        put_flag_names(f.w, f.l4.u32(4),
                       {{0x80000000, "router"sv}, {0x40000000, "solicited"sv}, {0x20000000, "override"sv}});
        f.w.put(']');
    }
    return f.options(24);
}

bool icmp6_redirect(Icmp6Fields& f) noexcept
{
    // The destination, then the target.
    if (!f.address(", "sv, 24) || !f.address(" to "sv, 8))
        return false;
    return !f.o.verbose || f.options(40);
}

bool icmp6_router_solicitation(Icmp6Fields& f) noexcept
{
    return !f.o.verbose || f.options(8);
}

bool icmp6_router_advertisement(Icmp6Fields& f) noexcept
{
    if (!f.o.verbose)
        return true;
    if (!f.l4.has(0, 16))
        return false;
    const Bytes& l4 = f.l4;
    f.w.put("\n\thop limit "sv, l4.u8(4), ", Flags ["sv);
    put_flag_names(f.w, l4.u8(5),
                   {{0x80, "managed"sv}, {0x40, "other stateful"sv}, {0x20, "home agent"sv}, {0x02, "ipv6 only"sv}});
    f.w.put("], pref "sv, router_preference(l4.u8(5)), ", router lifetime "sv, l4.u16(6), "s, reachable time "sv,
            l4.u32(8), "ms, retrans timer "sv, l4.u32(12), "ms"sv);
    return f.options(16);
}

// The id of home agent discovery and mobile prefix messages.
bool icmp6_id(Icmp6Fields& f) noexcept
{
    if (!f.l4.has(4, 2))
        return false;
    f.w.put(", id 0x"sv, Hex{f.l4.u16(4), 4});
    return true;
}

bool icmp6_ha_discovery_reply(Icmp6Fields& f) noexcept
{
    if (!f.o.verbose)
        return true;
    if (!icmp6_id(f))
        return false;
    for (size_t at = 8; at < f.length; at += 16) {
        if (!f.address(", "sv, at))
            return false;
    }
    return true;
}

bool icmp6_mobile_prefix_advertisement(Icmp6Fields& f) noexcept
{
    if (!f.o.verbose)
        return true;
    if (!icmp6_id(f) || !f.l4.has(6, 2))
        return false;
    const uint16_t flags = f.l4.u16(6);
    if (flags & 0xc000)
        f.w.put(' ');
    if (flags & 0x8000)
        f.w.put('M');
    if (flags & 0x4000)
        f.w.put('O');
    return f.options(8);
}

using Icmp6Body = bool (*)(Icmp6Fields&) noexcept;
// The types tcpdump names; those whose bodies tcpdump decodes in depth
// (router renumbering, node information, RPL) are named only. With -v the
// length follows the name of the types whose bodies -v extends.
struct Icmp6Type {
    uint8_t type;
    std::string_view name;
    Icmp6Body body; // nullptr: nothing after the name
    bool verbose_length = false;
};
constexpr Icmp6Type kIcmp6Types[] = {
    {1, "destination unreachable"sv, icmp6_unreachable},
    {2, "packet too big"sv, icmp6_packet_too_big},
    {3, "time exceeded in-transit"sv, icmp6_time_exceeded},
    {4, "parameter problem"sv, icmp6_parameter_problem},
    {128, "echo request"sv, icmp6_echo},
    {129, "echo reply"sv, icmp6_echo},
    {130, "multicast listener query"sv, icmp6_mld_query},
    {131, "multicast listener report"sv, icmp6_mld},
    {132, "multicast listener done"sv, icmp6_mld},
    {133, "router solicitation"sv, icmp6_router_solicitation, true},
    {134, "router advertisement"sv, icmp6_router_advertisement, true},
    {135, "neighbor solicitation"sv, icmp6_neighbor, true},
    {136, "neighbor advertisement"sv, icmp6_neighbor, true},
    {137, "redirect"sv, icmp6_redirect, true},
    {138, "router renumbering"sv, nullptr},
    {139, "node information query"sv, nullptr},
    {140, "node information reply"sv, nullptr},
    {141, "inverse neighbor solicitation"sv, nullptr},
    {142, "inverse neighbor advertisement"sv, nullptr},
    {143, "multicast listener report v2"sv, icmp6_mld2_report},
    {144, "ha discovery request"sv, icmp6_id},
    {145, "ha discovery reply"sv, icmp6_ha_discovery_reply, true},
    {146, "mobile router solicitation"sv, icmp6_id},
    {147, "mobile router advertisement"sv, icmp6_mobile_prefix_advertisement, true},
    {155, "RPL"sv, nullptr},
    {200, "mtrace response"sv, nullptr},
    {201, "mtrace message"sv, nullptr},
};

const Icmp6Type* icmp6_type(uint8_t type) noexcept
{
    for (const Icmp6Type& t : kIcmp6Types) {
        if (t.type == type)
            return &t;
    }
    return nullptr;
}

// False where tcpdump's printer runs out of captured bytes (see Icmp6Fields).
bool icmp6_body(Writer& w, const Icmp6Type& t, const Bytes& l4, size_t length, const DecodeOptions& o,
                bool& checked_cut) noexcept
{
    if (!l4.has(1, 1))
        return false;
    if (!t.body)
        return true;
    Icmp6Fields f{w, l4, length, o, t.type, l4.u8(1)};
    const bool complete = t.body(f);
    checked_cut = f.checked_cut;
    return complete;
}

// Where tcpdump's ICMP printer checks a field and prints its own mark
// rather than abandoning the packet (DecodeOptions::abandoned): the quoted
// protocol of a port unreachable, a router advertisement, a time exceeded's
// quoted destination, a timestamp reply's transmit time.
bool icmp_cut_is_checked(const Bytes& l4) noexcept
{
    if (!l4.has(0, 2))
        return false;
    switch (l4.u8(0)) {
    case 3:
        return l4.u8(1) == 3 && !l4.has(17, 1);
    case 9:
    case 11:
    case 14:
        return true;
    default:
        return false;
    }
}

// The same for ICMPv6: a port unreachable's quoted headers, a parameter
// problem's quoted destination.
bool icmp6_cut_is_checked(const Bytes& l4) noexcept
{
    if (!l4.has(0, 2))
        return false;
    return (l4.u8(0) == 1 && l4.u8(1) == 4) || (l4.u8(0) == 4 && !l4.has(32, 16));
}

// RFC 4884's extension structure after an error's first 128 quoted bytes:
// tcpdump prints it with -v where its length field or its checksum says
// it is there.
constexpr size_t kIcmpExtensionOffset = 136;

void put_icmp_extensions(Writer& w, const Bytes& l4, size_t length, const DecodeOptions& o) noexcept
{
    if (!l4.has(0, kIcmpExtensionOffset + 5)) {
        put_truncated(w, "icmp"sv);
        return;
    }
    size_t rest = length - kIcmpExtensionOffset;
    const bool whole = l4.has(kIcmpExtensionOffset, rest);
    InternetChecksum sum;
    if (whole)
        sum.add(l4.data + kIcmpExtensionOffset, rest);
    if (l4.u8(5) == 0 && whole && sum.value() != 0)
        return;
    const uint8_t version = l4.u8(kIcmpExtensionOffset) >> 4;
    w.put("\n\tICMP Multi-Part extension v"sv, version);
    if (version != 2) {
        w.put(" packet not supported"sv);
        return;
    }
    if (whole) {
        w.put(", checksum 0x"sv, Hex{l4.u16(kIcmpExtensionOffset + 2), 4},
              sum.value() != 0 ? " (incorrect), length "sv : " (correct), length "sv, rest);
    }
    rest -= 4;
    size_t at = kIcmpExtensionOffset + 4;
    while (rest > 4) {
        if (!l4.has(at, 4)) {
            put_truncated(w, "icmp"sv);
            return;
        }
        size_t object_length = l4.u16(at);
        const uint8_t object_class = l4.u8(at + 2);
        const uint8_t object_type = l4.u8(at + 3);
        at += 4;
        w.put("\n\t  "sv,
              object_class == 1 ? "MPLS Stack Entry"sv : object_class == 2 ? "Interface Identification"sv : "unknown"sv,
              " Object ("sv, object_class, "), Class-Type: "sv, object_type, ", length "sv, object_length);
        rest -= 4;
        if (object_class == 0 || object_length < 4)
            return;
        object_length -= 4;
        if (object_class == 1 && object_type == 1) {
            if (abandoned_at(w, l4, at, 4, "icmp"sv, o))
                return;
            const uint32_t entry = l4.u32(at);
            w.put("\n\t    label "sv, entry >> 12, ", tc "sv, (entry >> 9) & 7);
            if (entry & 0x100)
                w.put(", [S]"sv);
            w.put(", ttl "sv, entry & 0xff);
        } else {
            put_unknown_data(w, l4.from(at), object_length, "\n\t    "sv);
        }
        if (rest < object_length)
            break;
        rest -= object_length;
        at += object_length;
    }
}

} // namespace

void print_icmp(Writer& w, const Endpoints& e, const Bytes& l4, size_t length, bool fragmented,
                const DecodeOptions& o) noexcept
{
    put_endpoints(w, e, l4, false);
    char text[256];
    Writer message(text, sizeof text);
    if (!icmp_message(message, l4)) {
        if (icmp_cut_is_checked(l4))
            put_truncated(w, "icmp"sv);
        else
            put_abandoned(w, "icmp"sv, o);
        return;
    }
    w.put("ICMP "sv, message.view(), ", length "sv, length);
    if (!o.verbose)
        return;
    if (!fragmented && l4.has(0, length)) {
        InternetChecksum sum;
        sum.add(l4.data, length);
        // A sum the NIC is to fill in is not wrong yet.
        if (const uint16_t computed = sum.value(); computed != 0 && !o.checksum_not_ready) {
            if (abandoned_at(w, l4, 2, 2, "icmp"sv, o))
                return;
            w.put(" (wrong icmp cksum "sv, Hex{l4.u16(2)}, " (->"sv, Hex{checksum_should_be(l4.u16(2), computed)},
                  ")!)"sv);
        }
    }
    // An error's quoted packet, as an IP packet of its own.
    const uint8_t type = l4.u8(0);
    if (type == 3 || type == 4 || type == 5 || type == 11 || type == 12) {
        w.put("\n\t"sv);
        const Bytes quoted = l4.from(8);
        if (abandoned_at(w, quoted, 2, 2, "icmp"sv, o))
            return;
        DecodeOptions inner;
        if (!nest(o, inner))
            return;
        const size_t quoted_length = quoted.u16(2);
        print_ipv4(w, quoted.first(quoted_length), quoted_length, inner);
    }
    if ((type == 3 || type == 11 || type == 12) && length > kIcmpExtensionOffset)
        put_icmp_extensions(w, l4, length, o);
}

// tcpdump 4.99's ICMPv6 line, without -v: printed as it goes, so a cut
// leaves what was printed before " [|icmp6]". Types whose bodies tcpdump
// decodes in depth (router renumbering, node information, RPL) are named
// only; a type it does not know is dumped in hex, as tcpdump dumps it.
void print_icmp6(Writer& w, const Endpoints& e, const Bytes& l4, size_t length, bool fragmented,
                 const DecodeOptions& o) noexcept
{
    put_endpoints(w, e, l4, false);
    if (length == 0) {
        w.put("ICMP6, length 0 (invalid)"sv);
        return;
    }
    if (o.verbose && !fragmented && l4.has(0, length)) {
        // tcpdump reads the checksum field first.
        if (abandoned_at(w, l4, 2, 2, "icmp6"sv, o))
            return;
        uint16_t should_be = 0;
        const ChecksumCheck check = check_transport(e, kProtoIcmp6, l4, length, o, should_be);
        put_checksum_verdict(w, "icmp6"sv, check, l4.u16(2), should_be);
    }
    if (abandoned_at(w, l4, 0, 1, "icmp6"sv, o))
        return;
    const uint8_t type = l4.u8(0);
    w.put("ICMP6, "sv);
    const Icmp6Type* t = icmp6_type(type);
    if (!t) {
        w.put("unknown icmp6 type ("sv, type, ')');
        if (abandoned_at(w, l4, 1, 1, "icmp6"sv, o))
            return;
        w.put(", length "sv, length);
        if (o.verbose <= 1)
            put_unknown_data(w, l4, length);
        return;
    }
    w.put(t->name);
    if (o.verbose && t->verbose_length)
        w.put(", length "sv, length);
    bool checked_cut = false;
    if (!icmp6_body(w, *t, l4, length, o, checked_cut)) {
        if (checked_cut || icmp6_cut_is_checked(l4))
            put_truncated(w, "icmp6"sv);
        else
            put_abandoned(w, "icmp6"sv, o);
        return;
    }
    // An unknown unreachable code ends with its dump, without the length.
    if (o.verbose || (type == 1 && l4.u8(1) > 4))
        return;
    w.put(", length "sv, length);
}

} // namespace xdpcap::text::detail
