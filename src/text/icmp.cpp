// ICMP and ICMPv6 as tcpdump 4.99 prints them, with -v and without.
#include "text/layers.hpp"

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
    m.dec(seconds / 3600);
    m.put(':');
    m.padded(seconds / 60 % 60, 2);
    m.put(':');
    m.padded(seconds % 60, 2);
    m.put('.');
    m.padded(ms % 1000, 3);
}

// The ICMP message as tcpdump words it, written into `m`; false when a field
// it needs was not captured (tcpdump then prints none of it).
bool icmp_message(Writer& m, const Bytes& l4) noexcept
{
    if (!l4.has(0, 2))
        return false;
    const uint8_t type = l4.u8(0);
    const uint8_t code = l4.u8(1);
    const Bytes inner = l4.from(8); // the quoted IP header of errors
    const auto put_inner_dst = [&]() {
        if (!inner.has(16, 4))
            return false;
        m.put(ipv4_text(inner.data + 16).view());
        return true;
    };
    switch (type) {
    case 0:
    case 8:
        if (!l4.has(4, 4))
            return false;
        m.put(type == 8 ? "echo request, id "sv : "echo reply, id "sv);
        m.dec(l4.u16(4));
        m.put(", seq "sv);
        m.dec(l4.u16(6));
        return true;
    case 3: {
        if (code == 3) {
            if (!inner.has(9, 1))
                return false;
            const size_t header = size_t{inner.u8(0) & 15u} * 4;
            if (!inner.has(header + 2, 2))
                return false;
            const uint16_t port = inner.u16(header + 2);
            const uint8_t protocol = inner.u8(9);
            if (!put_inner_dst())
                return false;
            if (protocol == kProtoTcp || protocol == kProtoUdp) {
                m.put(protocol == kProtoTcp ? " tcp port "sv : " udp port "sv);
            } else {
                m.put(" protocol "sv);
                m.dec(protocol);
                m.put(" port "sv);
            }
            m.dec(port);
            m.put(" unreachable"sv);
            return true;
        }
        if (code == 4) {
            if (!l4.has(6, 2))
                return false;
            const uint16_t mtu = l4.u16(6);
            if (!put_inner_dst())
                return false;
            m.put(" unreachable - need to frag"sv);
            if (mtu) {
                m.put(" (mtu "sv);
                m.dec(mtu);
                m.put(')');
            }
            return true;
        }
        // "net"/"host" before the address, and what follows it, by code.
        constexpr struct {
            std::string_view before;
            std::string_view after;
        } kUnreachable[] = {
            {"net "sv, " unreachable"sv},
            {"host "sv, " unreachable"sv},
            {""sv, ""sv}, // protocol: below
            {""sv, ""sv}, // port: above
            {""sv, ""sv}, // need to frag: above
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
        if (code == 2) {
            if (!inner.has(9, 1) || !put_inner_dst())
                return false;
            m.put(" protocol "sv);
            m.dec(inner.u8(9));
            m.put(" unreachable"sv);
            return true;
        }
        if (code < std::size(kUnreachable)) {
            m.put(kUnreachable[code].before);
            if (!put_inner_dst())
                return false;
            m.put(kUnreachable[code].after);
            return true;
        }
        if (!put_inner_dst())
            return false;
        m.put(" unreachable - #"sv);
        m.dec(code);
        return true;
    }
    case 5: {
        if (!inner.has(16, 4) || !l4.has(4, 4))
            return false;
        const AddressText gateway = ipv4_text(l4.data + 4);
        constexpr std::string_view kRedirect[] = {"redirect "sv, "redirect "sv, "redirect-tos "sv, "redirect-tos "sv};
        constexpr std::string_view kTo[] = {" to net "sv, " to host "sv, " to net "sv, " to host "sv};
        if (code < 4) {
            m.put(kRedirect[code]);
        } else {
            m.put("redirect-#"sv);
            m.dec(code);
            m.put(' ');
        }
        put_inner_dst();
        m.put(code < 4 ? kTo[code] : " to "sv);
        m.put(gateway.view());
        return true;
    }
    case 9: {
        if (!l4.has(4, 4))
            return false;
        m.put("router advertisement lifetime "sv);
        const uint32_t lifetime = l4.u16(6);
        if (lifetime >= 3600) {
            m.dec(lifetime / 3600);
            m.put(':');
            m.padded(lifetime % 3600 / 60, 2);
            m.put(':');
            m.padded(lifetime % 60, 2);
        } else if (lifetime >= 60) {
            m.dec(lifetime / 60);
            m.put(':');
            m.padded(lifetime % 60, 2);
        } else {
            m.dec(lifetime);
        }
        const uint8_t count = l4.u8(4);
        m.put(' ');
        m.dec(count);
        m.put(':');
        if (l4.u8(5) != 2) {
            m.put(" [size "sv);
            m.dec(l4.u8(5));
            m.put(']');
            return true;
        }
        for (size_t i = 0; i < count; ++i) {
            const size_t at = 8 + 8 * i;
            if (!l4.has(at, 8))
                return false;
            m.put(" {"sv);
            m.put(ipv4_text(l4.data + at).view());
            m.put(' ');
            m.dec(l4.u32(at + 4));
            m.put('}');
        }
        return true;
    }
    case 11:
        if (!inner.has(16, 4))
            return false;
        if (code < 2) {
            m.put(code == 0 ? "time exceeded in-transit"sv : "ip reassembly time exceeded"sv);
        } else {
            m.put("time exceeded-#"sv);
            m.dec(code);
        }
        return true;
    case 12:
        if (code) {
            m.put("parameter problem - code "sv);
            m.dec(code);
            return true;
        }
        if (!l4.has(4, 1))
            return false;
        m.put("parameter problem - octet "sv);
        m.dec(l4.u8(4));
        return true;
    case 13:
        if (!l4.has(4, 4))
            return false;
        m.put("time stamp query id "sv);
        m.dec(l4.u16(4));
        m.put(" seq "sv);
        m.dec(l4.u16(6));
        return true;
    case 14:
        if (!l4.has(4, 16))
            return false;
        m.put("time stamp reply id "sv);
        m.dec(l4.u16(4));
        m.put(" seq "sv);
        m.dec(l4.u16(6));
        m.put(": org "sv);
        put_icmp_time(m, l4.u32(8));
        m.put(", recv "sv);
        put_icmp_time(m, l4.u32(12));
        m.put(", xmit "sv);
        put_icmp_time(m, l4.u32(16));
        return true;
    case 18:
        if (!l4.has(8, 4))
            return false;
        m.put("address mask is 0x"sv);
        m.hex(l4.u32(8), 8);
        return true;
    case 4:
        m.put("source quench"sv);
        return true;
    case 10:
        m.put("router solicitation"sv);
        return true;
    case 15:
        m.put("information request"sv);
        return true;
    case 16:
        m.put("information reply"sv);
        return true;
    case 17:
        m.put("address mask request"sv);
        return true;
    default:
        m.put("type-#"sv);
        m.dec(type);
        return true;
    }
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

// MLD's fields as tcpdump 4.99 prints them (straight after the type name).
void put_mld(Writer& w, const Bytes& l4) noexcept
{
    if (!l4.has(0, 24))
        return;
    w.put("max resp delay: "sv);
    w.dec(l4.u16(4));
    w.put(" addr: "sv);
    w.put(ipv6_text(l4.data + 8).view());
}

void put_lifetime(Writer& w, uint32_t seconds) noexcept
{
    if (seconds == 0xffffffff) {
        w.put("infinity"sv);
    } else {
        w.dec(seconds);
        w.put('s');
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

// Neighbour discovery options from `start` (tcpdump's icmp6_opt_print, -v).
ListEnd put_nd_options(Writer& w, const Bytes& l4, size_t start, size_t length, const DecodeOptions& o) noexcept
{
    enum : uint8_t {
        kSourceLinkAddress = 1, kTargetLinkAddress = 2, kPrefixInformation = 3, kRedirectedHeader = 4, kMtu = 5,
        kAdvertisementInterval = 7, kHomeAgentInformation = 8, kRouteInformation = 24, kRdnss = 25, kDnssl = 31,
    };
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
        const Bytes option = l4.from(at);
        const size_t size = units * 8;
        w.put("\n\t  "sv);
        switch (type) {
        case kSourceLinkAddress: w.put("source link-address"sv); break;
        case kTargetLinkAddress: w.put("destination link-address"sv); break;
        case kPrefixInformation: w.put("prefix info"sv); break;
        case kRedirectedHeader: w.put("redirected header"sv); break;
        case kMtu: w.put("mtu"sv); break;
        case kRdnss: w.put("rdnss"sv); break;
        case kDnssl: w.put("dnssl"sv); break;
        case kAdvertisementInterval: w.put("advertisement interval"sv); break;
        case kHomeAgentInformation: w.put("homeagent information"sv); break;
        case kRouteInformation: w.put("route info"sv); break;
        default: w.put("unknown"sv); break;
        }
        w.put(" option ("sv);
        w.dec(type);
        w.put("), length "sv);
        w.dec(size);
        w.put(" ("sv);
        w.dec(units);
        w.put("): "sv);
        switch (type) {
        case kSourceLinkAddress:
        case kTargetLinkAddress:
            for (size_t i = 2; i < size; ++i) {
                if (i > 2)
                    w.put(':');
                w.hex_byte(option.u8(i));
            }
            break;
        case kPrefixInformation:
            if (!option.has(0, 32))
                return ListEnd::Abandoned;
            w.put(ipv6_text(option.data + 16).view());
            w.put('/');
            w.dec(option.u8(2));
            if (units != 4)
                w.put("badlen"sv);
            w.put(", Flags ["sv);
            put_flag_names(w, option.u8(3), {{0x80, "onlink"sv}, {0x40, "auto"sv}, {0x20, "router"sv}});
            w.put("], valid time "sv);
            put_lifetime(w, option.u32(4));
            w.put(", pref. time "sv);
            put_lifetime(w, option.u32(8));
            break;
        case kRedirectedHeader:
            // tcpdump dumps from the first option on, this one's length.
            put_unknown_data(w, l4.from(start), size, "\n\t    "sv);
            break;
        case kMtu:
            w.put(' ');
            w.dec(option.u32(4));
            if (units != 1)
                w.put("bad option length"sv);
            break;
        case kRdnss:
            w.put(" lifetime "sv);
            w.dec(option.u32(4));
            w.put("s,"sv);
            for (size_t i = 0; i < (units - 1) / 2; ++i) {
                w.put(" addr: "sv);
                w.put(ipv6_text(option.data + 8 + 16 * i).view());
            }
            break;
        case kDnssl: {
            w.put(" lifetime "sv);
            w.dec(option.u32(4));
            w.put("s, domain(s):"sv);
            size_t name = 8;
            while (name < size && option.u8(name) != 0) {
                w.put(' ');
                name = put_domain_name(w, l4, at + name, start);
                if (name == kNoName)
                    return ListEnd::Cut;
                name -= at;
            }
            break;
        }
        case kAdvertisementInterval:
            w.put(' ');
            w.dec(option.u32(4));
            w.put("ms"sv);
            break;
        case kHomeAgentInformation:
            w.put(" preference "sv);
            w.dec(option.u16(4));
            w.put(", lifetime "sv);
            w.dec(option.u16(6));
            break;
        case kRouteInformation: {
            if (units > 3)
                return ListEnd::Cut;
            uint8_t prefix[16] = {};
            for (size_t i = 0; i < (units - 1) * 8; ++i)
                prefix[i] = option.u8(8 + i);
            w.put(' ');
            w.put(ipv6_text(prefix).view());
            w.put('/');
            w.dec(option.u8(2));
            w.put(", pref="sv);
            w.put(router_preference(option.u8(3)));
            w.put(", lifetime="sv);
            put_lifetime(w, option.u32(4));
            break;
        }
        default:
            if (o.verbose <= 1) {
                put_unknown_data(w, option.from(2), size - 2, "\n\t  "sv);
                return ListEnd::Complete;
            }
            break;
        }
        if (o.verbose > 1)
            put_unknown_data(w, option.from(2), size - 2, "\n\t    "sv);
        at += size;
        rest -= static_cast<long>(size);
    }
    return ListEnd::Complete;
}

// Returns false where tcpdump's printer runs out of captured bytes: the
// caller ends the line with " [|icmp6]", as tcpdump's own mark where
// `checked_cut` is set.
bool icmp6_body(Writer& w, uint8_t type, const Bytes& l4, size_t length, const DecodeOptions& o,
                bool& checked_cut) noexcept
{
    const auto options = [&](size_t start) {
        const ListEnd end = put_nd_options(w, l4, start, length, o);
        checked_cut = end == ListEnd::Cut;
        return end == ListEnd::Complete;
    };
    if (!l4.has(1, 1))
        return false;
    const uint8_t code = l4.u8(1);
    const Bytes quoted = l4.from(8); // the IPv6 packet an error quotes
    // `prefix` and the address, or (not captured) nothing: tcpdump reads
    // a field before it prints the words around it.
    const auto put_address = [&](std::string_view prefix, const Bytes& b, size_t at) {
        if (!b.has(at, 16))
            return false;
        w.put(prefix);
        w.put(ipv6_text(b.data + at).view());
        return true;
    };
    switch (type) {
    case 1:
        switch (code) {
        case 0:
        case 1:
        case 3:
            w.put(code == 0 ? ", unreachable route"sv : code == 1 ? ",  unreachable prohibited"sv
                                                                   : ", unreachable address"sv);
            return put_address(" "sv, quoted, 24);
        case 2:
            w.put(", beyond scope"sv);
            if (!quoted.has(8, 32))
                return false;
            put_address(" "sv, quoted, 24);
            return put_address(", source address "sv, quoted, 8);
        case 4: {
            w.put(", unreachable port"sv);
            uint8_t protocol = 0;
            size_t at = 0;
            if (!quoted_transport(quoted, protocol, at) || !put_address(", "sv, quoted, 24))
                return false;
            w.put(protocol == kProtoTcp ? " tcp port "sv : " udp port "sv);
            w.dec(quoted.u16(at + 2));
            return true;
        }
        default:
            w.put(", unknown unreach code ("sv);
            w.dec(code);
            w.put(')');
            if (o.verbose <= 1)
                put_unknown_data(w, l4, length);
            return true;
        }
    case 2:
        if (!l4.has(4, 4))
            return false;
        w.put(", mtu "sv);
        w.dec(l4.u32(4));
        return true;
    case 3:
        if (code == 0)
            return put_address(" for "sv, quoted, 24);
        if (code == 1) {
            w.put(" (reassembly)"sv);
        } else {
            w.put(", unknown code ("sv);
            w.dec(code);
            w.put(')');
        }
        return true;
    case 4: {
        if (!quoted.has(24, 16))
            return false;
        constexpr std::string_view kWhat[] = {", erroneous - octet "sv, ", next header - octet "sv,
                                              ", option - octet "sv, ", incomplete header chain - octet "sv};
        if (code >= std::size(kWhat)) {
            w.put(", code-#"sv);
            w.dec(code);
            return true;
        }
        if (!l4.has(4, 4))
            return false;
        w.put(kWhat[code]);
        w.dec(l4.u32(4));
        return true;
    }
    case 128:
    case 129:
        if (!l4.has(4, 4))
            return false;
        w.put(", id "sv);
        w.dec(l4.u16(4));
        w.put(", seq "sv);
        w.dec(l4.u16(6));
        return true;
    case 130:
        if (length == 24) {
            put_mld(w, l4);
        } else if (length >= 28) {
            w.put(" v2"sv);
            if (!l4.has(4, 2))
                return false;
            if (o.verbose) {
                // The maximum response code, in its floating-point form above 32767.
                const uint32_t code = l4.u16(4);
                w.put(" [max resp delay="sv);
                w.dec(code < 32768 ? code : ((code & 0x0fff) | 0x1000) << (((code & 0x7000) >> 12) + 3));
                w.put(']');
            }
            if (!put_address(" [gaddr "sv, l4, 8))
                return false;
            if (o.verbose) {
                // Byte by byte, as tcpdump reads them: the flags may print
                // before the QQIC is found cut.
                if (!l4.has(24, 1))
                    return false;
                const uint8_t flags = l4.u8(24);
                if (flags & 0x08)
                    w.put(" sflag"sv);
                if (flags & 0x07) {
                    w.put(" robustness="sv);
                    w.dec(flags & 0x07);
                }
                if (!l4.has(25, 1))
                    return false;
                const uint32_t qqic = l4.u8(25);
                w.put(" qqi="sv);
                w.dec(qqic < 128 ? qqic : ((qqic & 0x0f) | 0x10) << (((qqic & 0x70) >> 4) + 3));
            }
            if (!l4.has(26, 2))
                return false;
            if (const uint16_t sources = l4.u16(26)) {
                if (length < 28 + size_t{sources} * 16) {
                    w.put(" [invalid number of sources]"sv);
                } else if (o.verbose > 1) {
                    w.put(" {"sv);
                    for (size_t i = 0; i < sources; ++i) {
                        if (!put_address(" "sv, l4, 28 + 16 * i))
                            return false;
                    }
                    w.put(" }"sv);
                } else {
                    w.put(", "sv);
                    w.dec(sources);
                    w.put(" source(s)"sv);
                }
            }
            w.put(']');
        } else {
            w.put(" unknown-version (len "sv);
            w.dec(length);
            w.put(") "sv);
        }
        return true;
    case 131:
    case 132:
        put_mld(w, l4);
        return true;
    case 135:
    case 136:
        if (!put_address(type == 135 ? ", who has "sv : ", tgt is "sv, l4, 8))
            return false;
        if (!o.verbose)
            return true;
        if (type == 136) {
            w.put(", Flags ["sv);
            put_flag_names(w, l4.u32(4), {{0x80000000, "router"sv}, {0x40000000, "solicited"sv},
                                          {0x20000000, "override"sv}});
            w.put(']');
        }
        return options(24);
    case 137:
        // The destination, then the target.
        if (!put_address(", "sv, l4, 24) || !put_address(" to "sv, l4, 8))
            return false;
        return !o.verbose || options(40);
    case 133:
        return !o.verbose || options(8);
    case 134:
        if (!o.verbose)
            return true;
        if (!l4.has(0, 16))
            return false;
        w.put("\n\thop limit "sv);
        w.dec(l4.u8(4));
        w.put(", Flags ["sv);
        put_flag_names(w, l4.u8(5), {{0x80, "managed"sv}, {0x40, "other stateful"sv}, {0x20, "home agent"sv},
                                     {0x02, "ipv6 only"sv}});
        w.put("], pref "sv);
        w.put(router_preference(l4.u8(5)));
        w.put(", router lifetime "sv);
        w.dec(l4.u16(6));
        w.put("s, reachable time "sv);
        w.dec(l4.u32(8));
        w.put("ms, retrans timer "sv);
        w.dec(l4.u32(12));
        w.put("ms"sv);
        return options(16);
    case 145:
        if (!o.verbose)
            return true;
        if (!l4.has(4, 2))
            return false;
        w.put(", id 0x"sv);
        w.hex(l4.u16(4), 4);
        for (size_t at = 8; at < length; at += 16) {
            if (!put_address(", "sv, l4, at))
                return false;
        }
        return true;
    case 147: {
        if (!o.verbose)
            return true;
        if (!l4.has(4, 2))
            return false;
        w.put(", id 0x"sv);
        w.hex(l4.u16(4), 4);
        if (!l4.has(6, 2))
            return false;
        const uint16_t flags = l4.u16(6);
        if (flags & 0xc000)
            w.put(' ');
        if (flags & 0x8000)
            w.put('M');
        if (flags & 0x4000)
            w.put('O');
        return options(8);
    }
    case 143:
        if (length < 8) {
            w.put(" [invalid len "sv);
            w.dec(length);
            w.put(']');
            return true;
        }
        if (!l4.has(6, 2))
            return false;
        w.put(", "sv);
        w.dec(l4.u16(6));
        w.put(" group record(s)"sv);
        if (o.verbose) {
            size_t group = 8;
            for (size_t i = 0; i < l4.u16(6); ++i) {
                if (length < group + 20) {
                    w.put(" [invalid number of groups]"sv);
                    return true;
                }
                if (!put_address(" [gaddr "sv, l4, group + 4))
                    return false;
                constexpr std::string_view kRecordTypes[] = {"is_in"sv, "is_ex"sv, "to_in"sv,
                                                             "to_ex"sv, "allow"sv, "block"sv};
                const uint8_t record_type = l4.u8(group);
                w.put(' ');
                if (record_type >= 1 && record_type <= 6) {
                    w.put(kRecordTypes[record_type - 1]);
                } else {
                    w.put(" [v2-report-#"sv);
                    w.dec(record_type);
                    w.put(']');
                }
                const size_t sources = l4.u16(group + 2);
                if (length < group + 20 + sources * 16) {
                    w.put(" [invalid number of sources "sv);
                    w.dec(sources);
                    w.put(']');
                    return true;
                }
                if (o.verbose == 1) {
                    w.put(", "sv);
                    w.dec(sources);
                    w.put(" source(s)"sv);
                } else {
                    w.put(" {"sv);
                    for (size_t j = 0; j < sources; ++j) {
                        if (!put_address(" "sv, l4, group + 20 + 16 * j))
                            return false;
                    }
                    w.put(" }"sv);
                }
                group += 20 + sources * 16;
                w.put(']');
            }
        }
        return true;
    case 144:
    case 146:
        if (!l4.has(4, 2))
            return false;
        w.put(", id 0x"sv);
        w.hex(l4.u16(4), 4);
        return true;
    case 141:
    case 142:
        return true;
    default:
        return true;
    }
}

const char* icmp6_type_name(uint8_t type) noexcept
{
    switch (type) {
    case 1: return "destination unreachable";
    case 2: return "packet too big";
    case 3: return "time exceeded in-transit";
    case 4: return "parameter problem";
    case 128: return "echo request";
    case 129: return "echo reply";
    case 130: return "multicast listener query";
    case 131: return "multicast listener report";
    case 132: return "multicast listener done";
    case 133: return "router solicitation";
    case 134: return "router advertisement";
    case 135: return "neighbor solicitation";
    case 136: return "neighbor advertisement";
    case 137: return "redirect";
    case 138: return "router renumbering";
    case 139: return "node information query";
    case 140: return "node information reply";
    case 141: return "inverse neighbor solicitation";
    case 142: return "inverse neighbor advertisement";
    case 143: return "multicast listener report v2";
    case 144: return "ha discovery request";
    case 145: return "ha discovery reply";
    case 146: return "mobile router solicitation";
    case 147: return "mobile router advertisement";
    case 200: return "mtrace response";
    case 201: return "mtrace message";
    case 155: return "RPL";
    default: return nullptr;
    }
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
    w.put("\n\tICMP Multi-Part extension v"sv);
    w.dec(version);
    if (version != 2) {
        w.put(" packet not supported"sv);
        return;
    }
    if (whole) {
        w.put(", checksum 0x"sv);
        w.hex(l4.u16(kIcmpExtensionOffset + 2), 4);
        w.put(sum.value() != 0 ? " (incorrect), length "sv : " (correct), length "sv);
        w.dec(rest);
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
        w.put("\n\t  "sv);
        w.put(object_class == 1 ? "MPLS Stack Entry"sv : object_class == 2 ? "Interface Identification"sv : "unknown"sv);
        w.put(" Object ("sv);
        w.dec(object_class);
        w.put("), Class-Type: "sv);
        w.dec(object_type);
        w.put(", length "sv);
        w.dec(object_length);
        rest -= 4;
        if (object_class == 0 || object_length < 4)
            return;
        object_length -= 4;
        if (object_class == 1 && object_type == 1) {
            if (!l4.has(at, 4)) {
                put_abandoned(w, "icmp"sv, o);
                return;
            }
            const uint32_t entry = l4.u32(at);
            w.put("\n\t    label "sv);
            w.dec(entry >> 12);
            w.put(", tc "sv);
            w.dec((entry >> 9) & 7);
            if (entry & 0x100)
                w.put(", [S]"sv);
            w.put(", ttl "sv);
            w.dec(entry & 0xff);
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
    w.put("ICMP "sv);
    w.put(message.view());
    w.put(", length "sv);
    w.dec(length);
    if (!o.verbose)
        return;
    if (!fragmented && l4.has(0, length)) {
        InternetChecksum sum;
        sum.add(l4.data, length);
        // A sum the NIC is to fill in is not wrong yet.
        if (const uint16_t computed = sum.value(); computed != 0 && !o.checksum_not_ready) {
            if (!l4.has(2, 2)) {
                put_abandoned(w, "icmp"sv, o);
                return;
            }
            w.put(" (wrong icmp cksum "sv);
            w.hex(l4.u16(2));
            w.put(" (->"sv);
            w.hex(checksum_should_be(l4.u16(2), computed));
            w.put(")!)"sv);
        }
    }
    // An error's quoted packet, as an IP packet of its own.
    const uint8_t type = l4.u8(0);
    if (type == 3 || type == 4 || type == 5 || type == 11 || type == 12) {
        w.put("\n\t"sv);
        const Bytes quoted = l4.from(8);
        if (!quoted.has(2, 2)) {
            put_abandoned(w, "icmp"sv, o);
            return;
        }
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
        if (!l4.has(2, 2)) {
            put_abandoned(w, "icmp6"sv, o);
            return;
        }
        uint16_t should_be = 0;
        const ChecksumCheck check = check_transport(e, kProtoIcmp6, l4, length, o, should_be);
        put_checksum_verdict(w, "icmp6"sv, check, l4.u16(2), should_be);
    }
    if (!l4.has(0, 1)) {
        put_abandoned(w, "icmp6"sv, o);
        return;
    }
    const uint8_t type = l4.u8(0);
    w.put("ICMP6, "sv);
    if (const char* name = icmp6_type_name(type)) {
        w.put(std::string_view(name));
    } else {
        w.put("unknown icmp6 type ("sv);
        w.dec(type);
        w.put(')');
        if (!l4.has(1, 1)) {
            put_abandoned(w, "icmp6"sv, o);
            return;
        }
        w.put(", length "sv);
        w.dec(length);
        if (o.verbose <= 1)
            put_unknown_data(w, l4, length);
        return;
    }
    // With -v the length follows the name of the types whose bodies -v
    // extends, and no other.
    if (o.verbose && ((type >= 133 && type <= 137) || type == 145 || type == 147)) {
        w.put(", length "sv);
        w.dec(length);
    }
    bool checked_cut = false;
    if (!icmp6_body(w, type, l4, length, o, checked_cut)) {
        if (checked_cut || icmp6_cut_is_checked(l4))
            put_truncated(w, "icmp6"sv);
        else
            put_abandoned(w, "icmp6"sv, o);
        return;
    }
    // An unknown unreachable code ends with its dump, without the length.
    if (o.verbose || (type == 1 && l4.u8(1) > 4))
        return;
    w.put(", length "sv);
    w.dec(length);
}

} // namespace xdpcap::text::detail
