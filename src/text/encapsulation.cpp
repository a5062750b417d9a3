// The encapsulations of XDP load balancers and overlays, as tcpdump 4.99
// prints them without -v: GRE (versions 0 and 1, with PPTP's PPP), VXLAN,
// OTV, Geneve and MPLS, each followed by the packet it carries. tcpdump's
// VXLAN, OTV and MPLS printers abandon a cut packet (put_abandoned); its
// GRE and Geneve printers check and mark the cut themselves.
#include "text/layers.hpp"

#include <utility>

namespace xdpcap::text::detail {

using namespace std::string_view_literals;

namespace {

constexpr uint16_t kGreChecksum = 0x8000;
constexpr uint16_t kGreRouting = 0x4000;
constexpr uint16_t kGreKey = 0x2000;
constexpr uint16_t kGreSequence = 0x1000;
constexpr uint16_t kGreAck = 0x0080;
constexpr uint16_t kEtherPpp = 0x880b;

// ", proto IPv4 (0x0800)": the payload type that GRE and Geneve give with -e.
void put_payload_type(Writer& w, uint16_t type) noexcept
{
    w.put(", proto "sv);
    const char* name = ethertype_name(type);
    w.put(name ? std::string_view(name) : "unknown"sv, " (0x"sv, Hex{type, 4}, ')');
}

// ", Flags [key present, sequence# present]": GRE's flags as -v names them.
void put_gre_flags(Writer& w, uint16_t flags) noexcept
{
    w.put(", Flags ["sv);
    put_flag_names(w, flags, {{kGreChecksum, "checksum present"sv}, {kGreRouting, "routing present"sv},
                              {kGreKey, "key present"sv}, {kGreSequence, "sequence# present"sv},
                              {0x0800, "source routing present"sv}, {kGreAck, "ack present"sv}});
    w.put(']');
}

// Where the GRE header ends and its payload starts: ": ", or with -v a new
// line.
void put_gre_separator(Writer& w, const DecodeOptions& o) noexcept
{
    w.put(o.verbose ? "\n\t"sv : ": "sv);
}

// A GRE header read field by field, as tcpdump checks it: each field must
// be both captured and within the length the IP header gives.
struct GreReader {
    const Bytes& gre;
    size_t at;
    size_t left; // by the length

    bool take(size_t n) const noexcept { return gre.has(at, n) && left >= n; }
    void skip(size_t n) noexcept
    {
        at += n;
        left -= n;
    }
    // The next field, 2 or 4 bytes; false where it is not there.
    bool read(size_t n, uint32_t& value) noexcept
    {
        if (!take(n))
            return false;
        value = n == 2 ? gre.u16(at) : gre.u32(at);
        skip(n);
        return true;
    }
};

// One source route entry (RFC 1701) of IPv4 addresses or AS numbers, the
// current one starred. False where tcpdump runs out of bytes.
bool put_gre_route(Writer& w, uint16_t family, uint8_t offset, uint8_t length, const GreReader& r) noexcept
{
    if (family != 0x0800 && family != 0xfffe) {
        w.put(", (rtaf=0x"sv, Hex{family}, ')');
        return true;
    }
    const bool ip = family == 0x0800;
    const size_t unit = ip ? 4 : 2;
    w.put(ip ? ", (rtaf=ip"sv : ", (rtaf=asn"sv);
    bool whole = true;
    if (offset % unit != 0) {
        w.put(", badoffset="sv, offset);
    } else if (length % unit != 0) {
        w.put(", badlength="sv, length);
    } else if (offset >= length) {
        w.put(", badoff/len="sv, offset, '/', length);
    } else {
        for (size_t i = 0; i < length; i += unit) {
            if (!r.gre.has(r.at + i, unit) || r.left < i + unit) {
                whole = false;
                break;
            }
            w.put(i == offset ? " *"sv : " "sv);
            if (ip)
                w.put(ipv4_text(r.gre.data + r.at + i).view());
            else
                w.hex(r.gre.u16(r.at + i));
        }
    }
    w.put(')');
    return whole;
}

// Version 0 (RFC 2784, with RFC 1701's key, sequence number and routing)
// after its flags and payload type.
void print_gre_v0(Writer& w, GreReader& r, uint16_t flags, uint16_t type, size_t length, const DecodeOptions& o,
                  DecodeOptions& inner) noexcept
{
    const auto truncated = [&] { put_truncated(w, "gre"sv); };
    uint32_t value = 0;
    if (flags & (kGreChecksum | kGreRouting)) {
        if (!r.read(2, value))
            return truncated();
        if (o.verbose)
            w.put(", sum 0x"sv, Hex{value});
        if (!r.read(2, value))
            return truncated();
        w.put(", off 0x"sv, Hex{value});
    }
    if (flags & kGreKey) {
        if (!r.read(4, value))
            return truncated();
        w.put(", key=0x"sv, Hex{value});
    }
    if (flags & kGreSequence) {
        if (!r.read(4, value))
            return truncated();
        w.put(", seq "sv, value);
    }
    if (flags & kGreRouting) {
        for (;;) {
            if (!r.take(4))
                return truncated();
            const uint16_t family = r.gre.u16(r.at);
            const uint8_t offset = r.gre.u8(r.at + 2);
            const uint8_t route_length = r.gre.u8(r.at + 3);
            r.skip(4);
            if (family == 0 && route_length == 0)
                break;
            // Each entry is a level of nesting: it bounds the line.
            if (inner.depth >= kMaxEncapsulationDepth)
                return;
            ++inner.depth;
            if (!put_gre_route(w, family, offset, route_length, r) || r.left < route_length)
                return truncated();
            r.skip(route_length);
        }
    }
    if (o.link_header)
        put_payload_type(w, type);
    w.put(", length "sv, length);
    put_gre_separator(w, o);
    const Bytes payload = r.gre.from(r.at);
    switch (type) {
    case kEtherIPv4:
        print_ipv4(w, payload, r.left, inner);
        break;
    case kEtherIPv6:
        print_ipv6(w, payload, r.left, inner);
        break;
    case kEtherMpls:
        print_mpls(w, payload, r.left, inner);
        break;
    case kEtherTeb:
        print_ethernet(w, payload, r.left, inner);
        break;
    default:
        w.put("gre-proto-0x"sv, Hex{type});
        break;
    }
}

// A PPP frame in PPTP's GRE: the network protocols IP, IPv6 and MPLS are
// decoded; PPP's own control protocols are not.
void print_ppp(Writer& w, const Bytes& ppp, size_t length, const DecodeOptions& o) noexcept
{
    if (length < 2) {
        put_truncated(w, "ppp"sv);
        return;
    }
    if (abandoned_at(w, ppp, 0, 2, "ppp"sv, o))
        return;
    size_t at = 0;
    switch (ppp.u16(0)) {
    case 0x0003: // pppd's direction marks
    case 0x0103:
        if (o.link_header)
            w.put(ppp.u8(0) == 0 ? "In  "sv : "Out "sv);
        at = 2;
        break;
    case 0xff03: // address and control
        at = 2;
        break;
    default:
        break;
    }
    if (length - at < 2) {
        put_truncated(w, "ppp"sv);
        return;
    }
    if (abandoned_at(w, ppp, at, 1, "ppp"sv, o))
        return;
    // A protocol field of one byte where it is odd (compressed), else two.
    const size_t field = ppp.u8(at) % 2 == 1 ? 1 : 2;
    if (abandoned_at(w, ppp, at, field, "ppp"sv, o))
        return;
    const uint16_t protocol = field == 1 ? ppp.u8(at) : ppp.u16(at);
    at += field;
    const bool ipv4 = protocol == 0x0021 || protocol == kEtherIPv4;
    const bool ipv6 = protocol == 0x0057 || protocol == kEtherIPv6;
    const bool mpls = protocol == 0x0281 || protocol == 0x0283;
    if (o.link_header) {
        w.put(ipv4 ? "IP"sv : ipv6 ? "IP6"sv : mpls ? "MPLS"sv : "unknown"sv, " (0x"sv, Hex{protocol, 4},
              "), length "sv, length);
        if (!ipv4 && !ipv6 && !mpls)
            return;
        w.put(": "sv);
    }
    const Bytes payload = ppp.from(at);
    if (ipv4)
        print_ipv4(w, payload, length - at, o);
    else if (ipv6)
        print_ipv6(w, payload, length - at, o);
    else if (mpls)
        print_mpls(w, payload, length - at, o);
}

// Version 1: PPTP's enhanced GRE, a call with PPP inside, after its flags
// and payload type.
void print_gre_v1(Writer& w, GreReader& r, uint16_t flags, uint16_t type, size_t length, const DecodeOptions& o,
                  const DecodeOptions& inner) noexcept
{
    constexpr struct {
        uint16_t flag;
        std::string_view label;
        uint32_t mask;
    } kFields[] = {
        {kGreKey, ", call "sv, 0xffff}, {kGreSequence, ", seq "sv, 0xffffffff}, {kGreAck, ", ack "sv, 0xffffffff}};
    for (const auto& f : kFields) {
        if (!(flags & f.flag))
            continue;
        uint32_t value = 0;
        if (!r.read(4, value)) {
            put_truncated(w, "gre"sv);
            return;
        }
        w.put(f.label, value & f.mask);
    }
    if (!(flags & kGreSequence))
        w.put(", no-payload"sv);
    if (o.link_header)
        put_payload_type(w, type);
    w.put(", length "sv, length);
    if (!(flags & kGreSequence))
        return;
    put_gre_separator(w, o);
    if (type == kEtherPpp) {
        print_ppp(w, r.gre.from(r.at), r.left, inner);
        return;
    }
    w.put("gre-proto-0x"sv, Hex{type});
}

std::string_view geneve_option_class(uint16_t option_class) noexcept
{
    switch (option_class) {
    case 0x0100: return "Linux"sv;
    case 0x0101: return "Open vSwitch"sv;
    case 0x0102: return "Open Virtual Networking (OVN)"sv;
    case 0x0103: return "In-band Network Telemetry (INT)"sv;
    case 0x0104: return "VMware"sv;
    default:
        return option_class <= 0x00ff ? "Standard"sv : option_class >= 0xfff0 ? "Experimental"sv : "Unknown"sv;
    }
}

// Geneve's options as -v lists them (their data words from -vv on). False
// where the capture ends inside them: tcpdump abandons the packet.
bool put_geneve_options(Writer& w, const Bytes& opts, size_t length, const DecodeOptions& o) noexcept
{
    size_t at = 0;
    while (length > 0) {
        if (at > 0)
            w.put(", "sv);
        if (abandoned_at(w, opts, at, 4, "geneve"sv, o))
            return false;
        const uint16_t option_class = opts.u16(at);
        const uint8_t type = opts.u8(at + 2);
        const size_t option_length = 4 + size_t{opts.u8(at + 3) & 0x1fu} * 4;
        w.put("class "sv, geneve_option_class(option_class), " (0x"sv, Hex{option_class}, ") type 0x"sv, Hex{type});
        if (type & 0x80)
            w.put("(C)"sv);
        w.put(" len "sv, option_length);
        if (option_length > length) {
            w.put(" [bad length]"sv);
            return true;
        }
        if (o.verbose > 1 && option_length > 4) {
            w.put(" data"sv);
            for (size_t i = 4; i < option_length; i += 4) {
                w.put(' ', Hex{opts.u32(at + i), 8});
            }
        }
        at += option_length;
        length -= option_length;
    }
    return true;
}

} // namespace

void print_gre(Writer& w, const Bytes& gre, size_t length, const DecodeOptions& o) noexcept
{
    DecodeOptions inner;
    if (!nest(o, inner))
        return;
    if (!gre.has(0, 2) || length < 2) {
        put_truncated(w, "gre"sv);
        return;
    }
    const unsigned version = gre.u16(0) & 7u;
    w.put("GREv"sv, version);
    if (version > 1) {
        w.put(" ERROR: unknown-version"sv);
        return;
    }
    const uint16_t flags = gre.u16(0);
    if (o.verbose)
        put_gre_flags(w, flags);
    GreReader r{gre, 2, length - 2};
    uint32_t type = 0;
    if (!r.read(2, type)) {
        put_truncated(w, "gre"sv);
        return;
    }
    if (version == 0)
        print_gre_v0(w, r, flags, static_cast<uint16_t>(type), length, o, inner);
    else
        print_gre_v1(w, r, flags, static_cast<uint16_t>(type), length, o, inner);
}

namespace {

// A 24-bit field of VXLAN's or OTV's header: its bytes from `at`, its
// label, and what follows it.
struct Field24 {
    std::string_view label;
    size_t at;
    std::string_view after;
};

// VXLAN's and OTV's 8-byte header from its flags (the I bit, or `no_i`
// where it is clear) and its 24-bit fields, and the frame it carries on a
// line of its own. tcpdump abandons the packet at the first field not
// captured (`mark`).
void print_overlay(Writer& w, const Bytes& b, size_t length, std::string_view mark, std::string_view before,
                   std::string_view no_i, std::initializer_list<Field24> fields, const DecodeOptions& o,
                   const DecodeOptions& inner) noexcept
{
    if (abandoned_at(w, b, 0, 1, mark, o))
        return;
    const uint8_t flags = b.u8(0);
    w.put(before, "flags ["sv, flags & 0x08 ? "I"sv : no_i, "] (0x"sv, Hex{flags, 2}, "), "sv);
    for (const Field24& f : fields) {
        if (abandoned_at(w, b, f.at, 3, mark, o))
            return;
        w.put(f.label, b.u32(f.at - 1) & 0xffffffu, f.after);
    }
    if (abandoned_at(w, b, 7, 1, mark, o))
        return;
    print_ethernet(w, b.from(8), length - 8, inner);
}

} // namespace

void print_vxlan(Writer& w, const Bytes& vxlan, size_t length, const DecodeOptions& o) noexcept
{
    DecodeOptions inner;
    if (!nest(o, inner))
        return;
    w.put("VXLAN"sv);
    if (length < 8) {
        w.put(" (invalid)"sv);
        return;
    }
    print_overlay(w, vxlan, length, "vxlan"sv, ", "sv, "invalid"sv, {{"vni "sv, 4, "\n"sv}}, o, inner);
}

void print_otv(Writer& w, const Bytes& otv, size_t length, const DecodeOptions& o) noexcept
{
    DecodeOptions inner;
    if (!nest(o, inner))
        return;
    w.put("OTV, "sv);
    if (length < 8) {
        w.put("[length "sv, length, " < 8] (invalid)"sv);
        if (!otv.has(0, length))
            put_abandoned(w, "otv"sv, o);
        return;
    }
    print_overlay(w, otv, length, "otv"sv, ""sv, "."sv, {{"overlay "sv, 1, ", "sv}, {"instance "sv, 4, "\n"sv}}, o,
                  inner);
}

void print_geneve(Writer& w, const Bytes& geneve, size_t length, const DecodeOptions& o) noexcept
{
    DecodeOptions inner;
    if (!nest(o, inner))
        return;
    w.put("Geneve"sv);
    if (length < 8) {
        w.put(" [length "sv, length, " < 8] (invalid)"sv);
        return;
    }
    Cursor c(geneve);
    const uint8_t version_options = c.u8(0);
    const uint8_t flags = c.u8(1);
    const uint16_t type = c.u16(2);
    const uint32_t vni = c.u32(3) & 0xffffffu;
    const uint8_t reserved = c.u8(7);
    if (!c.ok()) {
        put_truncated(w, "geneve"sv);
        return;
    }
    if (version_options >> 6 != 0) {
        w.put(" ERROR: unknown-version "sv, version_options >> 6);
        return;
    }
    w.put(", Flags ["sv);
    static constexpr std::string_view kFlags[8] = {"O"sv, "C"sv, "R1"sv, "R2"sv, "R3"sv, "R4"sv, "R5"sv, "R6"sv};
    for (int bit = 0; bit < 8; ++bit) {
        if (flags & (0x80 >> bit))
            w.put(kFlags[bit]);
    }
    w.put(flags == 0 ? "none], vni 0x"sv : "], vni 0x"sv, Hex{vni});
    if (reserved)
        w.put(", rsvd 0x"sv, Hex{reserved});
    if (o.link_header)
        put_payload_type(w, type);
    const size_t options = size_t{version_options & 0x3fu} * 4;
    const size_t left = length - 8;
    if (left < options) {
        w.put(" truncated-geneve - "sv, options - left, " bytes missing"sv);
        return;
    }
    if (!geneve.has(8, options)) {
        put_truncated(w, "geneve"sv);
        return;
    }
    if (options > 0) {
        w.put(", options ["sv);
        if (o.verbose) {
            if (!put_geneve_options(w, geneve.from(8), options, o))
                return;
        } else {
            w.put(options, " bytes"sv);
        }
        w.put(']');
    }
    w.put(o.verbose ? "\n\t"sv : ": "sv);
    const Bytes payload = geneve.from(8 + options);
    if (print_ethertype_payload(w, type, payload, left - options, inner))
        return;
    if (type == kEtherTeb) {
        print_ethernet(w, payload, left - options, inner);
        return;
    }
    w.put("geneve-proto-0x"sv, Hex{type});
}

void print_mpls(Writer& w, const Bytes& mpls, size_t length, const DecodeOptions& o) noexcept
{
    DecodeOptions inner;
    if (!nest(o, inner))
        return;
    w.put("MPLS"sv);
    size_t at = 0;
    size_t left = length;
    uint32_t entry = 0;
    for (int labels = 0;; ++labels) {
        if (left < 4) {
            w.put(" (invalid)"sv);
            if (!mpls.has(at, left))
                put_abandoned(w, "mpls"sv, o);
            return;
        }
        if (abandoned_at(w, mpls, at, 4, "mpls"sv, o))
            return;
        if (labels == kMaxMplsLabels)
            return;
        entry = mpls.u32(at);
        // With -v each label after the first on a line of its own, the
        // reserved ones (0 to 15) named.
        w.put(labels > 0 && o.verbose ? "\n\t(label "sv : " (label "sv, entry >> 12);
        if (o.verbose && (entry >> 12) < 16) {
            constexpr std::string_view kReserved[4] = {"IPv4 explicit NULL"sv, "router alert"sv,
                                                       "IPv6 explicit NULL"sv, "implicit NULL"sv};
            w.put(" ("sv, (entry >> 12) < 4 ? kReserved[entry >> 12] : "rsvd"sv, ')');
        }
        w.put(", tc "sv, (entry >> 9) & 7u);
        if (entry & 0x100)
            w.put(", [S]"sv);
        w.put(", ttl "sv, entry & 0xffu, ')');
        at += 4;
        left -= 4;
        if (entry & 0x100)
            break;
    }
    // The bottom label says what follows only when it is one of the
    // reserved null labels; otherwise the first byte is taken as a guess.
    const Bytes payload = mpls.from(at);
    enum class Payload { Unknown, IPv4, IPv6 } kind = Payload::Unknown;
    switch (entry >> 12) {
    case 0:
    case 3:
        kind = Payload::IPv4;
        break;
    case 2:
        kind = Payload::IPv6;
        break;
    default:
        if (left < 1)
            return;
        if (abandoned_at(w, payload, 0, 1, "mpls"sv, o))
            return;
        if (payload.u8(0) >= 0x45 && payload.u8(0) <= 0x4f)
            kind = Payload::IPv4;
        else if (payload.u8(0) >= 0x60 && payload.u8(0) <= 0x6f)
            kind = Payload::IPv6;
        break;
    }
    switch (kind) {
    case Payload::IPv4:
        w.put(o.verbose ? "\n\t"sv : " "sv);
        print_ipv4(w, payload, left, inner);
        break;
    case Payload::IPv6:
        w.put(o.verbose ? "\n\t"sv : " "sv);
        print_ipv6(w, payload, left, inner);
        break;
    case Payload::Unknown:
        if (default_data_wanted(o))
            put_default_data(w, payload, left, "mpls"sv);
        break;
    }
}

} // namespace xdpcap::text::detail
