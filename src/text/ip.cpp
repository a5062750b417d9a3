// IPv4 and IPv6 headers, IP options, extension headers and fragments, as
// tcpdump 4.99 prints them, with -v and without.
#include "text/layers.hpp"

#include <utility>

namespace xdpcap::text::detail {

using namespace std::string_view_literals;

namespace {

enum : uint8_t {
    kOptEol = 0, kOptNop = 1, kOptRecordRoute = 7, kOptTimestamp = 68, kOptTraceroute = 82,
    kOptSecurity = 130, kOptLooseRoute = 131, kOptStrictRoute = 137, kOptRouterAlert = 148,
};

// How an IP option list ends for tcpdump: listed, or cut by the capture
// inside an option (" [truncated-option]"), or before its type or length
// (the packet is abandoned).
enum class OptionsEnd { Listed, Truncated, Abandoned };

// A recorded or source route: its addresses, a comma after each one the
// pointer has passed. `opt` is the whole option (`length` bytes, captured
// or not).
OptionsEnd put_route(Writer& w, const Bytes& opt, size_t length) noexcept
{
    if (length < 3) {
        w.put(" [bad length "sv, length, ']');
        return OptionsEnd::Listed;
    }
    if ((length + 1) & 3) {
        w.put(" [bad length "sv, length, ']');
    }
    // tcpdump's pointer is unsigned: a zero pointer field wraps.
    const uint32_t pointer = uint32_t{opt.u8(2)} - 1;
    if (pointer < 3 || ((pointer + 1) & 3) || pointer > length + 1) {
        w.put(" [bad ptr "sv, opt.u8(2), ']');
    }
    for (size_t at = 3; at < length; at += 4) {
        if (!opt.has(at, 4))
            return OptionsEnd::Truncated;
        w.put(' ', ipv4_text(opt.data + at).view());
        if (pointer > at)
            w.put(',');
    }
    return OptionsEnd::Listed;
}

OptionsEnd put_timestamps(Writer& w, const Bytes& opt, size_t length) noexcept
{
    if (length < 4) {
        w.put("[bad length "sv, length, ']');
        return OptionsEnd::Listed;
    }
    w.put(" TS{"sv);
    const uint8_t flags = opt.u8(3);
    const size_t hop = (flags & 15) != 0 ? 8 : 4;
    if ((length - 4) & (hop - 1)) {
        w.put("[bad length "sv, length, ']');
    }
    // tcpdump's pointer is unsigned: a zero pointer field wraps.
    const uint32_t pointer = uint32_t{opt.u8(2)} - 1;
    size_t at = 0;
    if (pointer < 4 || ((pointer - 4) & (hop - 1)) || pointer > length + 1) {
        w.put("[bad ptr "sv, opt.u8(2), ']');
    }
    switch (flags & 15) {
    case 0: w.put("TSONLY"sv); break;
    case 1: w.put("TS+ADDR"sv); break;
    case 3: w.put("PRESPEC"sv); break;
    default:
        w.put("[bad ts type "sv);
        w.put(flags & 15, ']');
        break;
    }
    if ((flags & 15) == 0 || (flags & 15) == 1 || (flags & 15) == 3) {
        std::string_view mark = " "sv;
        for (at = 4; at < length; at += hop) {
            if (pointer == at)
                mark = " ^ "sv;
            if (!opt.has(at, hop))
                return OptionsEnd::Truncated;
            w.put(mark, opt.u32(at + hop - 4), '@');
            if (hop == 8)
                w.put(ipv4_text(opt.data + at).view());
            mark = " "sv;
        }
    }
    if (pointer == at)
        w.put(" ^ "sv);
    if (flags >> 4) {
        w.put(" ["sv, flags >> 4, " hops not recorded]} "sv);
    } else {
        w.put('}');
    }
    return OptionsEnd::Listed;
}

// tcpdump's -v list of IPv4 options: `opts` is what was captured of the
// `length` option bytes the header length gives.
OptionsEnd put_ip_options(Writer& w, const Bytes& opts, size_t length) noexcept
{
    size_t at = 0;
    while (length > 0) {
        if (at > 0)
            w.put(',');
        if (!opts.has(at, 1))
            return OptionsEnd::Abandoned;
        const uint8_t code = opts.u8(at);
        switch (code) {
        case kOptEol: w.put("EOL"sv); break;
        case kOptNop: w.put("NOP"sv); break;
        case kOptTimestamp: w.put("timestamp"sv); break;
        case kOptSecurity: w.put("security"sv); break;
        case kOptRecordRoute: w.put("RR"sv); break;
        case kOptStrictRoute: w.put("SSRR"sv); break;
        case kOptLooseRoute: w.put("LSRR"sv); break;
        case kOptRouterAlert: w.put("RA"sv); break;
        case kOptTraceroute: w.put("traceroute"sv); break;
        default:
            w.put("unknown "sv);
            w.dec(code);
            break;
        }
        size_t option_length = 1;
        if (code != kOptEol && code != kOptNop) {
            if (!opts.has(at + 1, 1))
                return OptionsEnd::Abandoned;
            option_length = opts.u8(at + 1);
            if (option_length < 2) {
                w.put(" [bad length "sv, option_length, ']');
                return OptionsEnd::Listed;
            }
        }
        if (option_length > length) {
            w.put(" [bad length "sv, option_length, ']');
            return OptionsEnd::Listed;
        }
        if (!opts.has(at, option_length))
            return OptionsEnd::Truncated;
        const Bytes option = opts.from(at);
        OptionsEnd end = OptionsEnd::Listed;
        switch (code) {
        case kOptEol:
            return OptionsEnd::Listed;
        case kOptTimestamp:
            end = put_timestamps(w, option, option_length);
            break;
        case kOptRecordRoute:
        case kOptStrictRoute:
        case kOptLooseRoute:
            end = put_route(w, option, option_length);
            break;
        case kOptRouterAlert:
            if (option_length < 4) {
                w.put(" [bad length "sv, option_length, ']');
            } else if (option.u16(2) != 0) {
                w.put(" value "sv, option.u16(2));
            }
            break;
        default:
            break;
        }
        if (end != OptionsEnd::Listed)
            return end;
        at += option_length;
        length -= option_length;
    }
    return OptionsEnd::Listed;
}

// The destination a TCP or UDP checksum covers: a source route's last
// address, as tcpdump finds it, else the header's.
const uint8_t* ipv4_checksum_destination(const Bytes& ip, size_t header) noexcept
{
    size_t length = header - 20;
    size_t at = 20;
    while (length != 0) {
        if (!ip.has(at, 1))
            break;
        const uint8_t code = ip.u8(at);
        if (code == kOptEol)
            break;
        size_t option_length = 1;
        if (code != kOptNop) {
            if (!ip.has(at + 1, 1))
                break;
            option_length = ip.u8(at + 1);
            if (option_length < 2)
                break;
        }
        if (length < option_length || !ip.has(at, option_length))
            break;
        if ((code == kOptStrictRoute || code == kOptLooseRoute) && option_length >= 7)
            return ip.data + at + option_length - 4;
        at += option_length;
        length -= option_length;
    }
    return ip.data + 16;
}

// tcpdump's -v header fields: "(tos 0x0, ttl 64, id 1, offset 0, flags
// [DF], proto TCP (6), length 60)" and a new line. `ip` ends where the
// header's total length does. False where the line ends here.
bool put_ipv4_details(Writer& w, const Bytes& ip, size_t header, const DecodeOptions& o) noexcept
{
    const uint8_t tos = ip.u8(1);
    w.put("(tos 0x"sv, Hex{tos});
    constexpr std::string_view kEcn[] = {""sv, ",ECT(1)"sv, ",ECT(0)"sv, ",CE"sv};
    w.put(kEcn[tos & 3]);
    if (ip.u8(8) >= 1) {
        w.put(", ttl "sv, ip.u8(8));
    }
    const uint16_t fragment = ip.u16(6);
    w.put(", id "sv, ip.u16(4), ", offset "sv, size_t{fragment & 0x1fffu} * 8, ", flags ["sv);
    put_flag_names(w, fragment, {{0x2000, "+"sv}, {0x4000, "DF"sv}, {0x8000, "rsvd"sv}});
    const uint8_t protocol = ip.u8(9);
    w.put("], proto "sv);
    const char* name = ip_protocol_verbose_name(protocol);
    w.put(std::string_view(name ? name : "unknown"), " ("sv, protocol, "), length "sv, ip.u16(2));
    bool truncated = false;
    if (header > 20) {
        w.put(", options ("sv);
        const OptionsEnd end = put_ip_options(w, ip.from(20), header - 20);
        if (end == OptionsEnd::Abandoned) {
            put_abandoned(w, "ip"sv, o);
            return false;
        }
        if (end == OptionsEnd::Truncated) {
            w.put(" [truncated-option]"sv);
            truncated = true;
        }
        w.put(')');
    }
    if (o.verify_checksums && ip.has(0, header)) {
        InternetChecksum sum;
        sum.add(ip.data, header);
        if (const uint16_t computed = sum.value(); computed != 0) {
            w.put(", bad cksum "sv, Hex{ip.u16(10)}, " (->"sv, Hex{checksum_should_be(ip.u16(10), computed)}, ")!"sv);
        }
    }
    w.put(")\n    "sv);
    if (truncated) {
        w.put(ipv4_text(ip.data + 12).view(), " > "sv, ipv4_text(ip.data + 16).view(), ": "sv);
        put_truncated(w, "ip"sv);
        return false;
    }
    return true;
}

} // namespace

// `frame_length`: what the frame held from this header on, captured or not.
void print_ipv4(Writer& w, const Bytes& ip, size_t frame_length, const DecodeOptions& o) noexcept
{
    // tcpdump's checks, in its order and words.
    if (ip.has(0, 1) && ip.u8(0) >> 4 != 4) {
        if (ip.u8(0) >> 4 == 6) {
            w.put("IP6, wrong link-layer encapsulation"sv);
        } else {
            w.put("IP"sv, ip.u8(0) >> 4);
        }
        w.put(" (invalid)"sv);
        return;
    }
    // Nothing of the header captured: tcpdump's mark alone.
    if (abandoned_at(w, ip, 0, 1, "ip"sv, o))
        return;
    if (!o.link_header)
        w.put("IP "sv);
    if (!ip.has(0, 20)) {
        put_truncated(w, "ip"sv);
        return;
    }
    if (frame_length < 20) {
        w.put("truncated-ip "sv, frame_length);
        return;
    }
    const size_t header = size_t{ip.u8(0) & 15u} * 4;
    if (header < 20) {
        w.put("bad-hlen "sv, header);
        return;
    }
    // The frame ends before the length the header gives: said, and the
    // header's length is used, as tcpdump does. Zero (a BIG TCP super-frame
    // as well) is a bad length to tcpdump, and here.
    const size_t total = ip.u16(2);
    if (frame_length < total) {
        w.put("truncated-ip - "sv, total - frame_length, " bytes missing! "sv);
    }
    if (total < header) {
        w.put("bad-len "sv, total);
        return;
    }
    if (o.verbose && !put_ipv4_details(w, ip.first(total), header, o))
        return;
    const AddressText src = ipv4_text(ip.data + 12);
    const AddressText dst = ipv4_text(ip.data + 16);
    const uint8_t protocol = ip.u8(9);
    const uint16_t fragment = ip.u16(6);
    const size_t offset = size_t{fragment & 0x1fffu} * 8;
    const bool more = (fragment & 0x2000) != 0;
    // Ethernet padding beyond the IP length is not part of the payload.
    const Bytes packet = ip.first(total);
    const size_t length = total - header;
    if (offset == 0 && !packet.has(0, header)) {
        // Options cut by the capture: tcpdump says so and abandons the packet.
        if (protocol != kProtoTcp && protocol != kProtoUdp && protocol != 33 && protocol != 132)
            put_endpoints(w, Endpoints{&src, &dst, true}, packet, false);
        w.put(" [remaining caplen("sv, packet.size, ") < header length("sv, header, ")]"sv);
        put_abandoned(w, "ip"sv, o);
        return;
    }
    const Endpoints e{&src, &dst, true, ip.data + 12, ip.data + 16, 4,
                      header > 20 ? ipv4_checksum_destination(ip, header) : nullptr};
    const Bytes payload = packet.from(header);
    if (offset == 0) {
        print_transport(w, protocol, e, payload, length, more, o);
    } else {
        // A later fragment carries no transport header: tcpdump (-n) gives
        // the protocol's number alone.
        put_endpoints(w, e, payload, false);
        w.put("ip-proto-"sv, protocol);
    }
}

namespace {

enum : uint8_t { kHopByHop = 0, kRouting = 43, kFragment = 44, kAh = 51, kNoNextHeader = 59, kDestination = 60 };

// The length of the option or sub-option at `i` (a pad of one byte has no
// length byte); 0 where it runs past `length`.
size_t ipv6_option_size(const Bytes& b, size_t i, size_t length) noexcept
{
    if (b.u8(i) == 0)
        return 1;
    if (i + 1 >= length)
        return 0;
    const size_t n = size_t{b.u8(i + 1)} + 2;
    return i + n > length ? 0 : n;
}

// The sub-options of a home address option (tcpdump's ip6_sopt_print).
bool put_ipv6_sub_options(Writer& w, const Bytes& b, size_t length) noexcept
{
    for (size_t i = 0, n = 0; i < length; i += n) {
        n = ipv6_option_size(b, i, length);
        if (n == 0)
            return false;
        switch (b.u8(i)) {
        case 0:
            w.put(", pad1"sv);
            break;
        case 1:
            if (length - i < 2) {
                w.put(", padn: trunc"sv);
                return false;
            }
            w.put(", padn"sv);
            break;
        default:
            if (length - i < 2) {
                w.put(", sopt_type "sv, b.u8(i), ": trunc)"sv);
                return false;
            }
            w.put(", sopt_type 0x"sv, Hex{b.u8(i), 2}, ": len="sv, b.u8(i + 1), ""sv);
            break;
        }
    }
    return true;
}

// What a header's options say of a jumbogram: its length where valid.
struct JumboOption {
    uint32_t& payload_length;
    bool& jumbo;
    bool hop_by_hop;
    bool seen = false;
};

// A jumbo payload option at `i` (RFC 2675), `room` bytes from it on: valid
// once, in a hop-by-hop header, with a zero payload length and >= 65536.
bool put_jumbo_option(Writer& w, const Bytes& b, size_t i, size_t room, JumboOption& j, bool verbose) noexcept
{
    if (room < 6) {
        w.put("(jumbo: trunc)"sv);
        return false;
    }
    if (b.u8(i + 1) != 4) {
        w.put("(jumbo: invalid len "sv, b.u8(i + 1), ')');
        return false;
    }
    const uint32_t value = b.u32(i + 2);
    std::string_view why = ""sv;
    if (j.seen) {
        why = " - already seen"sv;
    } else {
        j.seen = true;
        if (!j.hop_by_hop) {
            why = " - not a hop-by-hop option"sv;
        } else if (j.payload_length != 0) {
            why = " - payload len != 0"sv;
        } else if (value < 65536) {
            why = " - < 65536"sv;
        } else {
            j.jumbo = true;
            j.payload_length = value;
        }
    }
    if (verbose)
        w.put("(jumbo: "sv, value, why, ") "sv);
    return true;
}

// A home address option at `i`, `n` bytes long, `room` bytes from it on.
bool put_home_address_option(Writer& w, const Bytes& b, size_t i, size_t n, size_t room, bool verbose) noexcept
{
    if (room < 18) {
        w.put("(homeaddr: trunc)"sv);
        return false;
    }
    if (b.u8(i + 1) < 16) {
        w.put("(homeaddr: invalid len "sv, b.u8(i + 1), ')');
        return false;
    }
    if (verbose) {
        w.put("(homeaddr: "sv, ipv6_text(b.data + i + 2).view());
        if (b.u8(i + 1) > 16 && !put_ipv6_sub_options(w, b.from(i + 18), n - 18))
            return false;
        w.put(')');
    }
    return true;
}

// Hop-by-hop or destination options, all captured (tcpdump's
// ip6_opt_process): named with -v, malformed ones always. A valid jumbo
// payload option of a hop-by-hop header gives the payload's length. False
// where tcpdump ends the packet.
bool put_ipv6_options(Writer& w, const Bytes& b, size_t length, bool hop_by_hop, uint32_t& payload_length,
                      bool& jumbo, bool verbose) noexcept
{
    enum : uint8_t { kPad1 = 0, kPadN = 1, kRouterAlert = 5, kJumbo = 0xc2, kHomeAddress = 0xc9 };
    JumboOption jumbo_option{payload_length, jumbo, hop_by_hop};
    for (size_t i = 0, n = 0; i < length; i += n) {
        const uint8_t type = b.u8(i);
        n = ipv6_option_size(b, i, length);
        if (n == 0)
            return false;
        const size_t room = length - i;
        switch (type) {
        case kPad1:
            if (verbose)
                w.put("(pad1)"sv);
            break;
        case kPadN:
            if (room < 2) {
                w.put("(padn: trunc)"sv);
                return false;
            }
            if (verbose)
                w.put("(padn)"sv);
            break;
        case kRouterAlert:
            if (room < 4) {
                w.put("(rtalert: trunc)"sv);
                return false;
            }
            if (b.u8(i + 1) != 2) {
                w.put("(rtalert: invalid len "sv, b.u8(i + 1), ')');
                return false;
            }
            if (verbose)
                w.put("(rtalert: 0x"sv, Hex{b.u16(i + 2), 4}, ") "sv);
            break;
        case kJumbo:
            if (!put_jumbo_option(w, b, i, room, jumbo_option, verbose))
                return false;
            break;
        case kHomeAddress:
            if (!put_home_address_option(w, b, i, n, room, verbose))
                return false;
            break;
        default:
            if (room < 2) {
                w.put("(type "sv, type, ": trunc)"sv);
                return false;
            }
            if (verbose)
                w.put("(opt_type 0x"sv, Hex{type, 2}, ": len="sv, b.u8(i + 1), ')');
            break;
        }
    }
    if (verbose)
        w.put(' ');
    return true;
}

// A routing header (tcpdump's rt6_print) from its first byte, `route`.
// Returns its length, or 0 where the line ends; `final_destination` gets
// the address a transport checksum covers.
size_t put_routing_header(Writer& w, const Bytes& route, const DecodeOptions& o,
                          const uint8_t*& final_destination) noexcept
{
    if (!route.has(0, 1)) {
        put_truncated(w, "ip6"sv);
        return 0;
    }
    w.put("RT6"sv);
    if (!route.has(0, 4)) {
        if (route.has(1, 1)) {
            w.put(" (len="sv, route.u8(1), ""sv);
            if (route.has(2, 1)) {
                w.put(", type="sv, route.u8(2), ""sv);
                if (route.u8(2) == 0)
                    w.put(" [Deprecated]"sv);
            }
        }
        put_abandoned(w, "rt6"sv, o);
        return 0;
    }
    const uint8_t units = route.u8(1);
    const uint8_t type = route.u8(2);
    w.put(" (len="sv, units, ""sv, ", type="sv, type, ""sv);
    if (type == 0)
        w.put(" [Deprecated]"sv);
    w.put(", segleft="sv, route.u8(3), ""sv);
    if (type != 0 && type != 2 && type != 4) {
        w.put(" (unknown type) (invalid)"sv);
        return 0;
    }
    if (!route.has(4, 4)) {
        if (type == 4 && route.has(4, 1))
            w.put(", last-entry="sv, route.u8(4), ""sv);
        if (type == 4 && route.has(5, 1) && (route.u8(5) || o.verbose)) {
            w.put(", flags=0x"sv, Hex{route.u8(5)});
        }
        put_abandoned(w, "rt6"sv, o);
        return 0;
    }
    if (type == 4) {
        w.put(", last-entry="sv, route.u8(4), ""sv);
        if (route.u8(5) || o.verbose) {
            w.put(", flags=0x"sv, Hex{route.u8(5)});
        }
        w.put(", tag="sv, Hex{route.u16(6)});
    } else if (route.u32(4) || o.verbose) {
        w.put(", rsv=0x"sv, Hex{route.u32(4)});
    }
    if (units % 2 == 1) {
        w.put(" (invalid length "sv, units, ") (invalid)"sv);
        return 0;
    }
    for (unsigned i = 0; i < units / 2u; ++i) {
        if (abandoned_at(w, route, 8 + 16 * i, 16, "rt6"sv, o))
            return 0;
        w.put(", ["sv, i, "]"sv, ipv6_text(route.data + 8 + 16 * i).view());
        // Type 0 and 2 list the hops in order, segment routing backwards.
        if (type != 4 || i == 0)
            final_destination = route.data + 8 + 16 * i;
    }
    w.put(") "sv);
    return (size_t{units} + 1) * 8;
}

} // namespace

namespace {

// tcpdump's -v line of the fixed header: class, flow label, hop limit, next
// header and payload length.
void put_ipv6_details(Writer& w, const Bytes& ip) noexcept
{
    const uint32_t flow = ip.u32(0);
    const uint8_t next = ip.u8(6);
    w.put('(');
    if (flow & 0x0ff00000)
        w.put("class 0x"sv, Hex{(flow & 0x0ff00000) >> 20, 2}, ", "sv);
    if (flow & 0x000fffff)
        w.put("flowlabel 0x"sv, Hex{flow & 0x000fffff, 5}, ", "sv);
    const char* name = ip_protocol_verbose_name(next);
    w.put("hlim "sv, ip.u8(7), ", next-header "sv, name ? name : "unknown", " ("sv, next, ") payload length: "sv,
          ip.u16(4), ") "sv);
}

// The walk over an IPv6 packet's extension headers (tcpdump's ip6_print).
struct Ipv6Walk {
    Writer& w;
    const DecodeOptions& o;
    const Bytes& ip;
    Bytes packet;
    size_t total;
    uint8_t next;
    uint32_t payload_length;
    size_t offset = 40;
    const uint8_t* checksum_dst = nullptr;
    bool fragmented = false;
    bool jumbo = false;
    bool hop_by_hop_seen = false;

    // Past a header of `length` bytes to the next; false (the line ended)
    // where the packet's length does not hold it.
    bool advance(size_t length) noexcept
    {
        if (total - offset < length) {
            put_truncated(w, "ip6"sv);
            return false;
        }
        next = packet.u8(offset);
        offset += length;
        return true;
    }
};

// A hop-by-hop (only first) or destination options header, the `index`th
// extension header; false where the line ends.
bool walk_options_header(Ipv6Walk& v, int index) noexcept
{
    Writer& w = v.w;
    const bool hop_by_hop = v.next == kHopByHop;
    if (hop_by_hop && v.hop_by_hop_seen) {
        w.put("[The Hop-by-Hop Options header was already found] (invalid)"sv);
        return false;
    }
    if (hop_by_hop && index > 0) {
        w.put("[The Hop-by-Hop Options header don't follow the IPv6 header] (invalid)"sv);
        return false;
    }
    v.hop_by_hop_seen = v.hop_by_hop_seen || hop_by_hop;
    const std::string_view mark = hop_by_hop ? "hbhopt"sv : "dstopt"sv;
    if (abandoned_at(w, v.packet, v.offset + 1, 1, mark, v.o))
        return false;
    const size_t length = (size_t{v.packet.u8(v.offset + 1)} + 1) * 8;
    bool complete = v.packet.has(v.offset, length);
    if (complete) {
        w.put(hop_by_hop ? "HBH "sv : "DSTOPT "sv);
        if (hop_by_hop || v.o.verbose)
            complete = put_ipv6_options(w, v.packet.from(v.offset + 2), length - 2, hop_by_hop, v.payload_length,
                                        v.jumbo, v.o.verbose != 0);
    }
    if (!complete)
        put_truncated(w, mark);
    if (hop_by_hop && v.payload_length == 0 && !v.jumbo) {
        w.put("[No valid Jumbo Payload Hop-by-Hop option found] (invalid)"sv);
        return false;
    }
    return complete && v.advance(length);
}

// A fragment header: only the first fragment's payload is decoded.
bool walk_fragment_header(Ipv6Walk& v) noexcept
{
    v.fragmented = true;
    const Bytes& packet = v.packet;
    const size_t offset = v.offset;
    if (!packet.has(offset, 4) || (v.o.verbose && !packet.has(offset, 8))) {
        put_abandoned(v.w, "frag6"sv, v.o);
        return false;
    }
    const uint16_t fragment_offset = packet.u16(offset + 2) & 0xfff8;
    // tcpdump's arithmetic, unsigned, from the header's payload length.
    const uint64_t rest = uint64_t{40} + v.ip.u16(4) - offset - 8;
    v.w.put("frag ("sv);
    if (v.o.verbose)
        v.w.put("0x"sv, Hex{packet.u32(offset + 4), 8}, ':');
    v.w.put(fragment_offset, '|', rest, ')');
    if (fragment_offset != 0)
        return false;
    v.w.put(' ');
    return packet.has(offset + 8, 1) && v.advance(8);
}

// Where the payload ends once the headers are walked: by a jumbo option,
// or at the fixed header where the length is zero without one. False
// where the line ends.
bool end_of_payload(Ipv6Walk& v, size_t frame_length, size_t& end) noexcept
{
    end = v.total;
    if (v.jumbo) {
        end = 40 + size_t{v.payload_length};
        if (end < v.offset) {
            put_truncated(v.w, "ip6"sv);
            return false;
        }
        if (frame_length < end)
            v.w.put("truncated-ip6 - "sv, end - frame_length, " bytes missing!"sv);
        v.packet = v.ip.first(end);
    } else if (v.ip.u16(4) == 0) {
        // No length: tcpdump takes the payload as empty, and a header
        // chain as cut.
        if (v.offset > 40) {
            put_truncated(v.w, "ip6"sv);
            return false;
        }
        end = 40;
        v.packet = v.ip.first(40);
    }
    return true;
}

} // namespace

void print_ipv6(Writer& w, const Bytes& ip, size_t frame_length, const DecodeOptions& o) noexcept
{
    // tcpdump reads the whole fixed header before it writes "IP6".
    if (!ip.has(0, 40)) {
        put_truncated(w, "ip6"sv);
        return;
    }
    if (frame_length < 40) {
        w.put("truncated-ip6 "sv, frame_length);
        return;
    }
    if (!o.link_header)
        w.put("IP6 "sv);
    if (ip.u8(0) >> 4 != 6) {
        w.put("version error: "sv, ip.u8(0) >> 4, " != 6"sv);
        return;
    }
    const uint32_t payload_length = ip.u16(4);
    if (payload_length != 0 && frame_length < 40u + payload_length)
        w.put("truncated-ip6 - "sv, 40u + payload_length - frame_length, " bytes missing!"sv);
    if (o.verbose)
        put_ipv6_details(w, ip);
    // Zero: a jumbogram, whose hop-by-hop option gives the length. tcpdump
    // walks the extension headers over all the frame has (and 40 more).
    const size_t total = payload_length != 0 ? 40 + size_t{payload_length} : frame_length + 40;
    Ipv6Walk v{w, o, ip, ip.first(total), total, ip.u8(6), payload_length};
    const AddressText src = ipv6_text(ip.data + 8);
    const AddressText dst = ipv6_text(ip.data + 24);
    // tcpdump names the addresses first unless TCP or UDP, which print
    // them with their ports.
    const uint8_t first = v.next;
    const bool addresses_first = first != kProtoTcp && first != kProtoUdp && first != 33 && first != 132;
    if (addresses_first)
        put_endpoints(w, Endpoints{&src, &dst, true}, v.packet, false);
    for (int i = 0; i < kMaxExtensionHeaders; ++i) {
        bool more = true;
        if (v.next == kHopByHop || v.next == kDestination) {
            more = walk_options_header(v, i);
        } else if (v.next == kRouting) {
            const size_t length = put_routing_header(w, v.packet.from(v.offset), o, v.checksum_dst);
            more = length != 0 && v.advance(length);
        } else if (v.next == kFragment) {
            more = walk_fragment_header(v);
        } else {
            break;
        }
        if (!more)
            return;
    }
    size_t end = 0;
    if (!end_of_payload(v, frame_length, end))
        return;
    if (v.next == kNoNextHeader) {
        w.put("no next header"sv);
        return;
    }
    const size_t length = v.offset <= end ? end - v.offset : 0;
    // Written above, or with the ports of TCP or UDP straight after the
    // header; after extension headers, ports alone.
    const bool extensions = first == kHopByHop || first == kDestination || first == kRouting || first == kFragment;
    const Endpoints e{&src, &dst, !addresses_first && !extensions, v.packet.data + 8, v.packet.data + 24, 16,
                      v.checksum_dst};
    print_transport(w, v.next, e, v.packet.from(v.offset), length, v.fragmented, o);
}

namespace {

// An authentication header (tcpdump's ah_print) and what it protects.
void print_ah(Writer& w, const Endpoints& e, const Bytes& ah, size_t length, bool fragmented,
              const DecodeOptions& o) noexcept
{
    put_endpoints(w, e, ah, false);
    if (!ah.has(0, 1)) {
        put_truncated(w, "ah"sv);
        return;
    }
    w.put("AH"sv);
    if (abandoned_at(w, ah, 1, 1, "ah"sv, o))
        return;
    const size_t header = (size_t{ah.u8(1)} + 2) * 4;
    w.put('(');
    if (o.verbose)
        w.put("length="sv, ah.u8(1), '(', header, "-bytes),"sv);
    if (abandoned_at(w, ah, 2, 2, "ah"sv, o))
        return;
    if (const uint16_t reserved = ah.u16(2))
        w.put("reserved=0x"sv, Hex{reserved}, "[MustBeZero],"sv);
    if (abandoned_at(w, ah, 4, 4, "ah"sv, o))
        return;
    w.put("spi=0x"sv, Hex{ah.u32(4), 8}, ',');
    if (abandoned_at(w, ah, 8, 4, "ah"sv, o))
        return;
    w.put("seq=0x"sv, Hex{ah.u32(8)}, ",icv=0x"sv);
    for (size_t at = 12; at < header; ++at) {
        if (abandoned_at(w, ah, at, 1, "ah"sv, o))
            return;
        w.hex_byte(ah.u8(at));
    }
    w.put("): "sv);
    DecodeOptions inner;
    if (!nest(o, inner))
        return;
    // Ports alone: tcpdump's TCP and UDP printers write the addresses only
    // where the IP header names TCP or UDP.
    const uint8_t next = ah.u8(0);
    Endpoints protected_endpoints = e;
    protected_endpoints.addresses = false;
    // tcpdump's unsigned length wraps where the header claims more.
    print_transport(w, next, protected_endpoints, ah.from(header), static_cast<uint32_t>(length - header),
                    fragmented, inner);
}

} // namespace

// Transport (or any other protocol) after IPv4 or IPv6. `l4` is what was
// captured of the payload, `length` its length by the IP header.
void print_transport(Writer& w, uint8_t protocol, const Endpoints& e, const Bytes& l4, size_t length,
                     bool fragmented, const DecodeOptions& o) noexcept
{
    const bool ipv6 = e.address_size == 16;
    switch (protocol) {
    case kProtoTcp:
        print_tcp(w, e, l4, length, fragmented, o);
        return;
    case kProtoUdp:
        print_udp(w, e, l4, length, fragmented, o);
        return;
    case kProtoIcmp:
    case kProtoIcmp6:
        if ((protocol == kProtoIcmp6) != ipv6) {
            put_endpoints(w, e, l4, false);
            w.put(ipv6 ? "[ICMP requires IPv4] (invalid)"sv : "[ICMPv6 requires IPv6] (invalid)"sv);
        } else if (ipv6) {
            print_icmp6(w, e, l4, length, fragmented, o);
        } else {
            print_icmp(w, e, l4, length, fragmented, o);
        }
        return;
    case kAh:
        print_ah(w, e, l4, length, fragmented, o);
        return;
    case kProtoEthernet: {
        put_endpoints(w, e, l4, false);
        if (!ipv6) {
            w.put("[Ethernet requires IPv6] (invalid)"sv);
            return;
        }
        DecodeOptions inner;
        if (nest(o, inner))
            print_ethernet(w, l4, length, inner);
        return;
    }
    case kProtoIpip:
    case kProtoIpv6:
    case kProtoGre: {
        put_endpoints(w, e, l4, false);
        if (protocol == kProtoGre) {
            print_gre(w, l4, length, o);
            return;
        }
        DecodeOptions inner;
        if (!nest(o, inner))
            return;
        if (protocol == kProtoIpip)
            print_ipv4(w, l4, length, inner);
        else
            print_ipv6(w, l4, length, inner);
        return;
    }
    default:
        put_endpoints(w, e, l4, false);
        // Protocols tcpdump decodes are named with their length; for the
        // others tcpdump has its own words, two spaces included.
        if (ip_protocol_name(protocol)) {
            put_protocol(w, protocol);
            w.put(", length "sv, length);
        } else {
            w.put(" ip-proto-"sv, protocol, ' ', length);
        }
        return;
    }
}

} // namespace xdpcap::text::detail
