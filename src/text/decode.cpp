#include "text/decode.hpp"

#include <cstring>
#include <iterator>
#include <string_view>

#include "text/application.hpp"
#include "text/tcp_flows.hpp"

namespace xdpcap::text {

namespace {

using namespace std::string_view_literals;

constexpr uint16_t kEtherIPv4 = 0x0800;
constexpr uint16_t kEtherArp = 0x0806;
constexpr uint16_t kEtherRarp = 0x8035;
constexpr uint16_t kEtherIPv6 = 0x86dd;
constexpr uint16_t kEtherVlan = 0x8100;
constexpr uint16_t kEtherQinQ = 0x88a8;
constexpr uint16_t kEtherQinQOld = 0x9100;
constexpr size_t kEtherHeader = 14;
// Deeper stacks of tags or IPv6 extension headers are not walked.
constexpr int kMaxVlanTags = 8;
constexpr int kMaxExtensionHeaders = 16;

constexpr uint8_t kProtoIcmp = 1;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoIcmp6 = 58;

// A captured span: reads are checked against `size`, never past it.
struct Bytes {
    const uint8_t* data;
    size_t size;

    bool has(size_t offset, size_t n) const noexcept { return offset <= size && n <= size - offset; }
    uint8_t u8(size_t offset) const noexcept { return data[offset]; }
    uint16_t u16(size_t offset) const noexcept
    {
        return static_cast<uint16_t>(data[offset] << 8 | data[offset + 1]);
    }
    uint32_t u32(size_t offset) const noexcept
    {
        return uint32_t{data[offset]} << 24 | uint32_t{data[offset + 1]} << 16 | uint32_t{data[offset + 2]} << 8 |
            data[offset + 3];
    }
    Bytes from(size_t offset) const noexcept
    {
        return offset <= size ? Bytes{data + offset, size - offset} : Bytes{data + size, 0};
    }
    Bytes first(size_t n) const noexcept { return Bytes{data, n < size ? n : size}; }
};

// Formatted addresses live on the stack: at most an IPv6 address.
struct AddressText {
    char text[48];
    size_t length = 0;
    std::string_view view() const noexcept { return {text, length}; }
};

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

// The endpoints as tcpdump writes them: "A.port > B.port: ", or without
// addresses "port > port: " (after IPv6 extension headers), or "A > B: ".
struct Endpoints {
    const AddressText* src;
    const AddressText* dst;
    bool addresses; // false: ports only
    // The enclosing IP header's addresses, as bytes (4 or 16 of them).
    const uint8_t* src_raw = nullptr;
    const uint8_t* dst_raw = nullptr;
    uint8_t address_size = 0;
};

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

// TCP options as tcpdump prints them: the names, values and checks of its
// print-tcp.c. `opts` is what was captured of the `room` option bytes the
// header length promises; `whole_segment`: the payload was captured too.
// Returns false where tcpdump ends the packet's
// line early (a malformed option, or the capture ending inside one).
bool put_tcp_options(Writer& w, const Bytes& opts, size_t room, bool reverse, TcpFlows::Base base,
                     bool whole_segment) noexcept
{
    enum : uint8_t {
        kEol = 0, kNop = 1, kMss = 2, kWscale = 3, kSackOk = 4, kSack = 5, kEcho = 6, kEchoReply = 7,
        kTimestamp = 8, kCc = 11, kCcNew = 12, kCcEcho = 13, kMd5 = 19, kScps = 20, kUto = 28, kAo = 29,
        kMptcp = 30, kFastOpen = 34, kExperiment = 254,
    };
    w.put(", options ["sv);
    bool listed = false;
    size_t at = 0;
    const auto truncated = [&] {
        w.put(" [|tcp]"sv);
        if (listed)
            w.put('>');
        return false;
    };
    const auto bad = [&] {
        w.put("[bad opt]"sv);
        if (listed)
            w.put(']');
        return false;
    };
    const auto fastopen = [&](size_t from, size_t n) {
        if (n == 0) {
            w.put(" cookiereq"sv);
        } else if (n % 2 != 0 || n < 4 || n > 16) {
            w.put(" (invalid)"sv);
        } else {
            w.put(" cookie "sv);
            for (size_t i = 0; i < n; ++i)
                w.hex_byte(opts.u8(from + i));
        }
    };
    while (room > 0) {
        if (listed)
            w.put(',');
        // Past the capture before the kind or length: tcpdump's whole-line cut.
        if (!opts.has(at, 1)) {
            w.put(" [|tcp]"sv);
            return false;
        }
        const uint8_t kind = opts.u8(at++);
        size_t length = 1;
        if (kind != kEol && kind != kNop) {
            if (!opts.has(at, 1)) {
                w.put(" [|tcp]"sv);
                return false;
            }
            length = opts.u8(at++);
            if (length < 2 || length > room)
                return bad();
            --room;
        }
        --room;
        // The option's data: `need` bytes must be within the header and captured.
        const auto check = [&](size_t need) { return need > room ? 0 : opts.has(at, need) ? 1 : 2; };
        size_t data = 0;
        switch (kind) {
        case kEol: w.put("eol"sv); break;
        case kNop: w.put("nop"sv); break;
        case kMss: w.put("mss"sv); break;
        case kWscale: w.put("wscale"sv); break;
        case kSackOk: w.put("sackOK"sv); break;
        case kSack: w.put("sack"sv); break;
        case kEcho: w.put("echo"sv); break;
        case kEchoReply: w.put("echoreply"sv); break;
        case kTimestamp: w.put("TS"sv); break;
        case kCc: w.put("cc"sv); break;
        case kCcNew: w.put("ccnew"sv); break;
        case kCcEcho: break; // tcpdump's table names it ""
        case kMd5: w.put("md5"sv); break;
        case kScps: w.put("scps"sv); break;
        case kUto: w.put("uto"sv); break;
        case kAo: w.put("tcp-ao"sv); break;
        case kMptcp: w.put("mptcp"sv); break;
        case kFastOpen: w.put("tfo"sv); break;
        case kExperiment: w.put("exp"sv); break;
        default:
            w.put("unknown-"sv);
            w.dec(kind);
            break;
        }
        switch (kind) {
        case kMss:
        case kWscale:
        case kEcho:
        case kEchoReply:
        case kCc:
        case kCcNew:
        case kCcEcho:
        case kScps:
        case kUto:
        case kTimestamp:
        case kMd5: {
            data = kind == kWscale ? 1 : kind == kMss || kind == kScps || kind == kUto ? 2 : kind == kTimestamp ? 8
                : kind == kMd5 ? 16 : 4;
            if (const int c = check(data); c != 1)
                return c == 0 ? bad() : truncated();
            if (kind == kMss) {
                w.put(' ');
                w.dec(opts.u16(at));
            } else if (kind == kWscale) {
                w.put(' ');
                w.dec(opts.u8(at));
            } else if (kind == kScps) {
                w.put(" cap "sv);
                w.hex(opts.u8(at), 2);
                w.put(" id "sv);
                w.dec(opts.u8(at + 1));
            } else if (kind == kUto) {
                const uint16_t value = opts.u16(at);
                w.put(" 0x"sv);
                w.hex(value);
                w.put(' ');
                // The low bit says minutes (1) or seconds (0).
                w.dec(value & 1 ? (value >> 1) * 60u : value >> 1);
            } else if (kind == kTimestamp) {
                w.put(" val "sv);
                w.dec(opts.u32(at));
                w.put(" ecr "sv);
                w.dec(opts.u32(at + 4));
            } else if (kind == kMd5) {
                // tcpdump cannot check it without the whole segment and
                // the shared secret (-M).
                w.put(whole_segment ? " shared secret not supplied with -M, can't check - "sv
                                    : " snaplen too short, can't check - "sv);
                for (size_t i = 0; i < 16; ++i)
                    w.hex_byte(opts.u8(at + i));
            } else {
                w.put(' ');
                w.dec(opts.u32(at));
            }
            break;
        }
        case kSack:
            data = length - 2;
            if (data % 8 != 0) {
                w.put(" invalid sack"sv);
                break;
            }
            w.put(' ');
            w.dec(data / 8);
            w.put(' ');
            for (size_t i = 0; i < data; i += 8) {
                if (const int c = check(i + 4); c != 1)
                    return c == 0 ? bad() : truncated();
                if (const int c = check(i + 8); c != 1)
                    return c == 0 ? bad() : truncated();
                const uint32_t relative_to = reverse ? base.seq : base.ack;
                w.put('{');
                w.dec(static_cast<uint32_t>(opts.u32(at + i) - relative_to));
                w.put(':');
                w.dec(static_cast<uint32_t>(opts.u32(at + i + 4) - relative_to));
                w.put('}');
            }
            break;
        case kAo:
            data = length - 2;
            if (data < 2) {
                w.put(" (invalid)"sv);
                break;
            }
            for (size_t i = 0; i < data; ++i) {
                if (const int c = check(i + 1); c != 1)
                    return c == 0 ? bad() : truncated();
                if (i == 0) {
                    w.put(" keyid "sv);
                    w.dec(opts.u8(at));
                } else if (i == 1) {
                    w.put(" rnextkeyid "sv);
                    w.dec(opts.u8(at + 1));
                } else {
                    if (i == 2)
                        w.put(" mac 0x"sv);
                    w.hex_byte(opts.u8(at + i));
                }
            }
            break;
        case kEol:
        case kNop:
        case kSackOk:
            break;
        case kFastOpen:
            data = length - 2;
            if (const int c = check(data); c != 1)
                return c == 0 ? bad() : truncated();
            w.put(' ');
            fastopen(at, data);
            break;
        case kExperiment:
            data = length - 2;
            if (const int c = check(data); c != 1)
                return c == 0 ? bad() : truncated();
            if (data < 2)
                return bad();
            w.put('-');
            if (opts.u16(at) == 0xf989) { // TCP Fast Open, RFC 7413
                w.put("tfo"sv);
                fastopen(at + 2, data - 2);
            } else {
                w.hex(opts.u16(at), 4);
            }
            break;
        case kMptcp:
            // tcpdump decodes MPTCP's subtypes; here the bytes stand as for
            // an option it does not know.
        default:
            data = length - 2;
            if (data)
                w.put(" 0x"sv);
            for (size_t i = 0; i < data; ++i) {
                if (const int c = check(i + 1); c != 1)
                    return c == 0 ? bad() : truncated();
                w.hex_byte(opts.u8(at + i));
            }
            break;
        }
        at += data;
        room -= data;
        if (data + (kind == kEol || kind == kNop ? 1 : 2) != length) {
            w.put("[len "sv);
            w.dec(length);
            w.put(']');
        }
        listed = true;
        if (kind == kEol)
            break;
    }
    w.put(']');
    return true;
}

// The connection's first sequence numbers, found or recorded as tcpdump does
// on every segment with ACK; seq and ack become relative to them.
TcpFlows::Base relative_sequence(TcpFlows& flows, const Endpoints& e, uint16_t sport, uint16_t dport, bool syn,
                                 uint32_t& seq, uint32_t& ack, bool& reverse) noexcept
{
    const size_t n = e.address_size;
    reverse = sport > dport || (sport == dport && std::memcmp(e.src_raw, e.dst_raw, n) > 0);
    TcpFlows::Key key;
    key.family = n == 16 ? 6 : 4;
    std::memcpy(key.src, reverse ? e.dst_raw : e.src_raw, n);
    std::memcpy(key.dst, reverse ? e.src_raw : e.dst_raw, n);
    key.ports = reverse ? uint32_t{dport} << 16 | sport : uint32_t{sport} << 16 | dport;
    TcpFlows::Base* base = flows.find(key);
    if (!base || syn) {
        base = &flows.insert(key);
        if (reverse) {
            base->ack = seq;
            base->seq = ack - 1;
        } else {
            base->seq = seq;
            base->ack = ack - 1;
        }
    } else if (reverse) {
        seq -= base->ack;
        ack -= base->seq;
    } else {
        seq -= base->seq;
        ack -= base->ack;
    }
    return *base;
}

// `length`: the segment's length by the IP header (captured or not).
void print_tcp(Writer& w, const Endpoints& e, const Bytes& l4, size_t length, const DecodeOptions& o) noexcept
{
    if (!l4.has(0, 4)) {
        // Without its ports tcpdump writes the mark without a space.
        put_endpoints(w, e, l4, false);
        w.put("[|tcp]"sv);
        return;
    }
    put_endpoints(w, e, l4, true);
    if (!l4.has(0, 20)) {
        put_truncated(w, "tcp"sv);
        return;
    }
    const auto segment = static_cast<uint32_t>(length);
    const uint32_t header = uint32_t{l4.u8(12)} >> 4 << 2;
    if (header < 20) {
        w.put(" tcp "sv);
        w.dec(static_cast<uint32_t>(segment - header));
        w.put(" [bad hdr length "sv);
        w.dec(header);
        w.put(" - too short, < 20]"sv);
        return;
    }
    if (o.quick) {
        w.put("tcp "sv);
        w.dec(static_cast<uint32_t>(segment - header));
        if (header > segment) {
            w.put(" [bad hdr length "sv);
            w.dec(header);
            w.put(" - too long, > "sv);
            w.dec(segment);
            w.put(']');
        }
        return;
    }
    const uint8_t flags = l4.u8(13);
    enum : uint8_t { FIN = 1, SYN = 2, RST = 4, PSH = 8, ACK = 16, URG = 32, ECE = 64, CWR = 128 };
    w.put("Flags ["sv);
    if (flags == 0)
        w.put("none"sv);
    // tcpdump's letters and order.
    constexpr struct {
        uint8_t bit;
        char letter;
    } kLetters[] = {{FIN, 'F'}, {SYN, 'S'}, {RST, 'R'}, {PSH, 'P'}, {ACK, '.'}, {URG, 'U'}, {ECE, 'E'}, {CWR, 'W'}};
    for (const auto& l : kLetters) {
        if (flags & l.bit)
            w.put(l.letter);
    }
    w.put(']');
    uint32_t seq = l4.u32(4);
    uint32_t ack = l4.u32(8);
    bool reverse = false;
    TcpFlows::Base base;
    if (o.tcp_flows && (flags & ACK) && e.address_size)
        base = relative_sequence(*o.tcp_flows, e, l4.u16(0), l4.u16(2), (flags & SYN) != 0, seq, ack, reverse);
    if (header > segment) {
        w.put(" [bad hdr length "sv);
        w.dec(header);
        w.put(" - too long, > "sv);
        w.dec(segment);
        w.put(']');
        return;
    }
    const uint32_t data = segment - header;
    if (data > 0 || (flags & (SYN | FIN | RST))) {
        w.put(", seq "sv);
        w.dec(seq);
        if (data > 0) {
            w.put(':');
            w.dec(static_cast<uint32_t>(seq + data));
        }
    }
    if (flags & ACK) {
        w.put(", ack "sv);
        w.dec(ack);
    }
    w.put(", win "sv);
    w.dec(l4.u16(14));
    if (flags & URG) {
        w.put(", urg "sv);
        w.dec(l4.u16(18));
    }
    if (header > 20 && !put_tcp_options(w, l4.first(header).from(20), header - 20, reverse, base, l4.has(0, segment)))
        return;
    w.put(", length "sv);
    w.dec(data);
    // A reset's data is not decoded (tcpdump prints it with -v only).
    if (data > 0 && !(flags & RST)) {
        const Bytes payload = l4.from(header);
        print_tcp_application(w, l4.u16(0), l4.u16(2), payload.data, payload.size, data);
    }
}

// `length`: the datagram's length by the IP header; `fragmented`: more
// fragments follow, so a UDP length beyond this one is no error.
void print_udp(Writer& w, const Endpoints& e, const Bytes& l4, size_t length, bool fragmented) noexcept
{
    if (!l4.has(0, 4)) {
        put_endpoints(w, e, l4, false);
        put_truncated(w, "udp"sv);
        return;
    }
    put_endpoints(w, e, l4, true);
    // tcpdump's checks, in its order and words.
    if (length < 8) {
        w.put("truncated-udp "sv);
        w.dec(length);
        return;
    }
    if (!l4.has(0, 6)) {
        put_truncated(w, "udp"sv);
        return;
    }
    size_t udp_length = l4.u16(4);
    if (udp_length == 0 && length > 65535)
        udp_length = length; // an IPv6 jumbogram
    if (udp_length < 8) {
        w.put("truncated-udplength "sv);
        w.dec(udp_length);
        return;
    }
    if (!l4.has(0, 8)) {
        put_truncated(w, "udp"sv);
        return;
    }
    udp_length -= 8;
    const size_t room = length - 8;
    if (udp_length > room && !fragmented) {
        w.put("UDP, bad length "sv);
        w.dec(udp_length);
        w.put(" > "sv);
        w.dec(room);
        return;
    }
    w.put("UDP, length "sv);
    w.dec(udp_length);
}

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

void print_icmp(Writer& w, const Endpoints& e, const Bytes& l4, size_t length) noexcept
{
    put_endpoints(w, e, l4, false);
    char text[256];
    Writer message(text, sizeof text);
    if (!icmp_message(message, l4)) {
        put_truncated(w, "icmp"sv);
        return;
    }
    w.put("ICMP "sv);
    w.put(message.view());
    w.put(", length "sv);
    w.dec(length);
}

void put_hex_lines(Writer& w, const uint8_t* bytes, size_t n, bool ascii) noexcept;

// tcpdump's hex lines for data it does not decode: "\n\t0x0000:  0105 ...",
// eight 16-bit groups a line, over what was captured.
void put_unknown_data(Writer& w, const Bytes& data, size_t length) noexcept
{
    put_hex_lines(w, data.data, length < data.size ? length : data.size, false);
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

// Returns false where tcpdump's printer runs out of captured bytes: the
// caller ends the line with " [|icmp6]".
bool icmp6_body(Writer& w, uint8_t type, const Bytes& l4, size_t length) noexcept
{
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
            if (!l4.has(4, 2) || !put_address(" [gaddr "sv, l4, 8) || !l4.has(26, 2))
                return false;
            if (const uint16_t sources = l4.u16(26)) {
                if (length < 28 + size_t{sources} * 16) {
                    w.put(" [invalid number of sources]"sv);
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
        return put_address(type == 135 ? ", who has "sv : ", tgt is "sv, l4, 8);
    case 137:
        return put_address(", "sv, l4, 24) && put_address(" to "sv, l4, 8); // destination, then target
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
        return true;
    case 144:
    case 146:
        if (!l4.has(4, 2))
            return false;
        w.put(", id 0x"sv);
        w.hex(l4.u16(4), 4);
        return true;
    case 133:
    case 134:
    case 141:
    case 142:
    case 145:
    case 147:
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

// tcpdump 4.99's ICMPv6 line, without -v: printed as it goes, so a cut
// leaves what was printed before " [|icmp6]". Types whose bodies tcpdump
// decodes in depth (router renumbering, node information, RPL) are named
// only; a type it does not know is dumped in hex, as tcpdump dumps it.
void print_icmp6(Writer& w, const Endpoints& e, const Bytes& l4, size_t length) noexcept
{
    put_endpoints(w, e, l4, false);
    if (!l4.has(0, 1)) {
        put_truncated(w, "icmp6"sv);
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
            put_truncated(w, "icmp6"sv);
            return;
        }
        w.put(", length "sv);
        w.dec(length);
        put_unknown_data(w, l4, length);
        return;
    }
    if (!icmp6_body(w, type, l4, length)) {
        put_truncated(w, "icmp6"sv);
        return;
    }
    // An unknown unreachable code ends with its dump, without the length.
    if (type == 1 && l4.u8(1) > 4)
        return;
    w.put(", length "sv);
    w.dec(length);
}

// Transport (or any other protocol) after IPv4 or IPv6. `l4` is what was
// captured of the payload, `length` its length by the IP header.
void print_transport(Writer& w, uint8_t protocol, const Endpoints& e, const Bytes& l4, size_t length,
                     bool fragmented, const DecodeOptions& o) noexcept
{
    switch (protocol) {
    case kProtoTcp:
        print_tcp(w, e, l4, length, o);
        return;
    case kProtoUdp:
        print_udp(w, e, l4, length, fragmented);
        return;
    case kProtoIcmp:
        print_icmp(w, e, l4, length);
        return;
    case kProtoIcmp6:
        print_icmp6(w, e, l4, length);
        return;
    default:
        put_endpoints(w, e, l4, false);
        put_protocol(w, protocol);
        w.put(", length "sv);
        w.dec(length);
        return;
    }
}

// `frame_length`: what the frame held from this header on, captured or not.
void print_ipv4(Writer& w, const Bytes& ip, size_t frame_length, const DecodeOptions& o) noexcept
{
    // tcpdump's checks, in its order and words.
    if (ip.has(0, 1) && ip.u8(0) >> 4 != 4) {
        if (ip.u8(0) >> 4 == 6) {
            w.put("IP6, wrong link-layer encapsulation"sv);
        } else {
            w.put("IP"sv);
            w.dec(ip.u8(0) >> 4);
        }
        w.put(" (invalid)"sv);
        return;
    }
    // Nothing of the header captured: tcpdump's mark alone.
    if (!ip.has(0, 1)) {
        put_truncated(w, "ip"sv);
        return;
    }
    if (!o.link_header)
        w.put("IP "sv);
    if (!ip.has(0, 20)) {
        put_truncated(w, "ip"sv);
        return;
    }
    if (frame_length < 20) {
        w.put("truncated-ip "sv);
        w.dec(frame_length);
        return;
    }
    const size_t header = size_t{ip.u8(0) & 15u} * 4;
    if (header < 20) {
        w.put("bad-hlen "sv);
        w.dec(header);
        return;
    }
    // The frame ends before the length the header gives: said, and the
    // header's length is used, as tcpdump does. Zero (a BIG TCP super-frame
    // as well) is a bad length to tcpdump, and here.
    const size_t total = ip.u16(2);
    if (frame_length < total) {
        w.put("truncated-ip - "sv);
        w.dec(total - frame_length);
        w.put(" bytes missing! "sv);
    }
    if (total < header) {
        w.put("bad-len "sv);
        w.dec(total);
        return;
    }
    if (!ip.has(0, header)) {
        put_truncated(w, "ip"sv);
        return;
    }
    const AddressText src = ipv4_text(ip.data + 12);
    const AddressText dst = ipv4_text(ip.data + 16);
    const Endpoints e{&src, &dst, true, ip.data + 12, ip.data + 16, 4};
    const uint8_t protocol = ip.u8(9);
    const uint16_t fragment = ip.u16(6);
    const size_t offset = size_t{fragment & 0x1fffu} * 8;
    const bool more = (fragment & 0x2000) != 0;
    // Ethernet padding beyond the IP length is not part of the payload.
    const Bytes payload = ip.first(total).from(header);
    const size_t length = total - header;
    if (offset == 0) {
        print_transport(w, protocol, e, payload, length, more, o);
    } else {
        // A later fragment carries no transport header.
        put_endpoints(w, e, payload, false);
        put_protocol(w, protocol);
        w.put(", length "sv);
        w.dec(length);
    }
    if (offset != 0 || more) {
        // tcpdump -v's notation: (frag id:length@offset, + if more follow)
        w.put(" (frag "sv);
        w.dec(ip.u16(4));
        w.put(':');
        w.dec(length);
        w.put('@');
        w.dec(offset);
        if (more)
            w.put('+');
        w.put(')');
    }
}

void print_ipv6(Writer& w, const Bytes& ip, size_t frame_length, const DecodeOptions& o) noexcept
{
    // tcpdump reads the whole fixed header before it writes "IP6".
    if (!ip.has(0, 40)) {
        put_truncated(w, "ip6"sv);
        return;
    }
    if (!o.link_header)
        w.put("IP6 "sv);
    if (ip.u8(0) >> 4 != 6) {
        w.put("version error: "sv);
        w.dec(ip.u8(0) >> 4);
        w.put(" != 6"sv);
        return;
    }
    if (ip.u16(4) != 0 && frame_length < 40u + ip.u16(4)) {
        w.put("truncated-ip6 - "sv);
        w.dec(40u + ip.u16(4) - frame_length);
        w.put(" bytes missing!"sv);
    }
    // Zero: a jumbogram (BIG TCP); the frame says how long.
    const size_t payload_length = ip.u16(4) != 0 ? ip.u16(4) : frame_length > 40 ? frame_length - 40 : 0;
    const Bytes packet = ip.first(40 + payload_length);
    const AddressText src = ipv6_text(ip.data + 8);
    const AddressText dst = ipv6_text(ip.data + 24);
    uint8_t next = ip.u8(6);
    size_t offset = 40;
    bool extensions = false;
    bool fragmented = false;
    auto start_extensions = [&] {
        if (!extensions) {
            put_endpoints(w, Endpoints{&src, &dst, true}, packet, false);
            extensions = true;
        }
    };
    for (int i = 0; i < kMaxExtensionHeaders; ++i) {
        if (next == 0 || next == 60 || next == 43 || next == 51) {
            start_extensions();
            const std::string_view name = next == 0 ? "HBH"sv : next == 60 ? "DSTOPT"sv : next == 43 ? "RT6"sv : "AH"sv;
            if (!packet.has(offset, next == 43 ? 4 : 2)) {
                w.put(name);
                put_truncated(w, next == 0 ? "hbhopt"sv : next == 60 ? "dstopt"sv : next == 43 ? "rt6"sv : "ah"sv);
                return;
            }
            w.put(name);
            if (next == 43) {
                w.put(" (type="sv);
                w.dec(packet.u8(offset + 2));
                w.put(", segleft="sv);
                w.dec(packet.u8(offset + 3));
                w.put(')');
            }
            w.put(' ');
            // AH counts 4-byte units (minus 2), the others 8-byte units (minus 1).
            const size_t length = next == 51 ? (size_t{packet.u8(offset + 1)} + 2) * 4
                                             : (size_t{packet.u8(offset + 1)} + 1) * 8;
            next = packet.u8(offset);
            offset += length;
            continue;
        }
        if (next == 44) {
            start_extensions();
            fragmented = true;
            if (!packet.has(offset, 8)) {
                w.put("frag "sv);
                put_truncated(w, "frag6"sv);
                return;
            }
            const size_t fragment_offset = size_t{packet.u16(offset + 2) & 0xfff8u};
            const size_t rest = offset + 8 <= 40 + payload_length ? 40 + payload_length - offset - 8 : 0;
            w.put("frag ("sv);
            w.dec(fragment_offset);
            w.put('|');
            w.dec(rest);
            w.put(')');
            if (fragment_offset != 0)
                return;
            w.put(' ');
            next = packet.u8(offset);
            offset += 8;
            continue;
        }
        break;
    }
    if (next == 59) {
        start_extensions();
        w.put("no next header"sv);
        return;
    }
    const size_t length = offset <= 40 + payload_length ? 40 + payload_length - offset : 0;
    print_transport(w, next, Endpoints{&src, &dst, !extensions, packet.data + 8, packet.data + 24, 16},
                    packet.from(offset), length, fragmented, o);
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

const char* arp_hardware_name(uint16_t hardware) noexcept
{
    switch (hardware) {
    case 1: return "Ethernet";
    case 6: return "TokenRing";
    case 7: return "ArcNet";
    case 15: return "FrameRelay";
    case 23: return "Strip";
    case 24: return "IEEE 1394";
    case 19: return "ATM";
    case 32: return "InfiniBand";
    default: return nullptr;
    }
}

// ARP and RARP (ethertype 0x8035) alike, as tcpdump 4.99 prints them: any
// hardware and protocol address lengths; an address family it cannot show
// as IPv4 by its types and lengths; an unknown operation dumped in hex.
void print_arp(Writer& w, const Bytes& arp, size_t length, const DecodeOptions& o) noexcept
{
    if (!arp.has(0, 8)) {
        put_truncated(w, "arp"sv);
        return;
    }
    const uint16_t hardware = arp.u16(0);
    const uint16_t protocol = arp.u16(2);
    const size_t hln = arp.u8(4);
    const size_t pln = arp.u8(5);
    const uint16_t op = arp.u16(6);
    const size_t sha = 8, spa = sha + hln, tha = spa + pln, tpa = tha + hln;
    if (!arp.has(0, tpa + pln)) {
        put_truncated(w, "arp"sv);
        return;
    }
    if (!o.link_header)
        w.put("ARP, "sv);
    constexpr uint16_t kEtherTrail = 0x1000;
    if ((protocol != kEtherIPv4 && protocol != kEtherTrail) || pln != 4 || hln == 0) {
        if (const char* name = arp_hardware_name(hardware)) {
            w.put(std::string_view(name));
        } else {
            w.put("Unknown Hardware ("sv);
            w.dec(hardware);
            w.put(')');
        }
        w.put(" (len "sv);
        w.dec(hln);
        w.put("), "sv);
        if (const char* name = ethertype_name(protocol)) {
            w.put(std::string_view(name));
        } else {
            w.put("Unknown Protocol (0x"sv);
            w.hex(protocol, 4);
            w.put(')');
        }
        w.put(" (len "sv);
        w.dec(pln);
        w.put("), length "sv);
        w.dec(length);
        return;
    }
    // tcpdump's names; 5 to 7 are none of its.
    constexpr std::string_view kOps[] = {"Request"sv, "Reply"sv, "Reverse Request"sv, "Reverse Reply"sv, ""sv, ""sv,
                                         ""sv, "Inverse Request"sv, "Inverse Reply"sv, "NACK Reply"sv};
    if (op >= 1 && op <= std::size(kOps) && !kOps[op - 1].empty()) {
        w.put(kOps[op - 1]);
    } else {
        w.put("Unknown ("sv);
        w.dec(op);
        w.put(')');
    }
    w.put(' ');
    switch (op) {
    case 1: {
        w.put("who-has "sv);
        w.put(ipv4_text(arp.data + tpa).view());
        bool zero = true;
        for (size_t i = 0; i < hln; ++i)
            zero = zero && arp.u8(tha + i) == 0;
        if (!zero) {
            w.put(" ("sv);
            put_link_address(w, arp.data + tha, hln);
            w.put(')');
        }
        w.put(" tell "sv);
        w.put(ipv4_text(arp.data + spa).view());
        break;
    }
    case 2:
        w.put(ipv4_text(arp.data + spa).view());
        w.put(" is-at "sv);
        put_link_address(w, arp.data + sha, hln);
        break;
    case 3:
    case 8:
        w.put("who-is "sv);
        put_link_address(w, arp.data + tha, hln);
        w.put(" tell "sv);
        put_link_address(w, arp.data + sha, hln);
        break;
    case 4:
        put_link_address(w, arp.data + tha, hln);
        w.put(" at "sv);
        w.put(ipv4_text(arp.data + tpa).view());
        break;
    case 9:
        put_link_address(w, arp.data + sha, hln);
        w.put(" at "sv);
        w.put(ipv4_text(arp.data + spa).view());
        break;
    default:
        put_hex_lines(w, arp.data, arp.size, true);
        return;
    }
    w.put(", length "sv);
    w.dec(length);
}

} // namespace

// STP BPDUs as tcpdump 4.99 prints them without -v: the protocol, the BPDU
// type, the flags and the sender's bridge and port.
void print_stp(Writer& w, const Bytes& bpdu, size_t length) noexcept
{
    if (length < 4) {
        w.put(" (invalid)"sv);
        return;
    }
    if (!bpdu.has(0, 3)) {
        w.put(" [|stp]"sv);
        return;
    }
    if (bpdu.u16(0) != 0) {
        w.put("unknown STP version, length "sv);
        w.dec(length);
        return;
    }
    const uint8_t version = bpdu.u8(2);
    w.put("STP "sv);
    switch (version) {
    case 0: w.put("802.1d"sv); break;
    case 2: w.put("802.1w"sv); break;
    case 3: w.put("802.1s"sv); break;
    case 4: w.put("802.1Q/SPB"sv); break;
    default:
        w.put("Unknown STP protocol (0x"sv);
        w.hex(version, 2);
        w.put(')');
        return;
    }
    if (!bpdu.has(3, 1)) {
        w.put(" [|stp]"sv);
        return;
    }
    const uint8_t type = bpdu.u8(3);
    w.put(", "sv);
    switch (type) {
    case 0x00: w.put("Config"sv); break;
    case 0x02: w.put("Rapid STP"sv); break;
    case 0x80: w.put("Topology Change"sv); return;
    default:
        w.put("Unknown BPDU Type (0x"sv);
        w.hex(type, 2);
        w.put(')');
        return;
    }
    const bool rapid = type == 0x02;
    if (rapid && version != 2 && version != 0) {
        // MSTP and SPB: the CIST flags only, without -v.
        if (length < 102 || !bpdu.has(4, 1)) {
            w.put(length < 102 ? " (invalid)"sv : " [|stp]"sv);
            return;
        }
    } else if (length < (rapid ? 36u : 35u)) {
        w.put(" (invalid)"sv);
        return;
    }
    if (!bpdu.has(4, 1)) {
        w.put(" [|stp]"sv);
        return;
    }
    const uint8_t flags = bpdu.u8(4);
    w.put(rapid && version >= 3 ? ", CIST Flags ["sv : ", Flags ["sv);
    constexpr struct {
        uint8_t bit;
        std::string_view name;
    } kFlags[] = {{0x01, "Topology change"sv}, {0x02, "Proposal"sv}, {0x10, "Learn"sv},
                  {0x20, "Forward"sv},         {0x40, "Agreement"sv}, {0x80, "Topology change ACK"sv}};
    bool any = false;
    for (const auto& f : kFlags) {
        if (flags & f.bit) {
            w.put(any ? ", "sv : ""sv);
            w.put(f.name);
            any = true;
        }
    }
    if (!any)
        w.put("none"sv);
    w.put(']');
    if (rapid && version >= 3) {
        w.put(", length "sv);
        w.dec(length);
        return;
    }
    if (!bpdu.has(17, 10)) {
        w.put(" [|stp]"sv);
        return;
    }
    w.put(", bridge-id "sv);
    w.hex_byte(bpdu.u8(17));
    w.hex_byte(bpdu.u8(18));
    w.put('.');
    put_mac(w, bpdu.data + 19);
    w.put('.');
    w.hex(bpdu.u16(25), 4);
    w.put(", length "sv);
    w.dec(length);
}

// An 802.3 frame's LLC header, as far as tcpdump's words for it are
// decoded: SNAP with an ethertype (decoded on), the spanning tree and IP
// SAPs. False: another SAP or control field, left to the caller.
bool print_llc(Writer& w, const Bytes& llc, size_t length, const DecodeOptions& o) noexcept
{
    const uint8_t dsap = llc.u8(0);
    const uint8_t ssap = llc.u8(1);
    if (o.link_header) {
        const std::string_view name = dsap == 0xaa ? "SNAP"sv : dsap == 0x42 ? "STP"sv : "IP"sv;
        w.put("LLC, dsap "sv);
        w.put(name);
        w.put(" (0x"sv);
        w.hex(dsap & 0xfe, 2);
        w.put(dsap & 1 ? ") Group, ssap "sv : ") Individual, ssap "sv);
        w.put(name);
        w.put(" (0x"sv);
        w.hex(ssap & 0xfe, 2);
        w.put(ssap & 1 ? ") Response, ctrl 0x03: "sv : ") Command, ctrl 0x03: "sv);
    }
    const Bytes data = llc.from(3);
    const size_t rest = length - 3;
    if (dsap == 0x42) {
        print_stp(w, data, rest);
        return true;
    }
    if (dsap == 0x06) {
        print_ipv4(w, data, rest, o);
        return true;
    }
    // SNAP: an organisation code and a protocol; code 0 carries an ethertype.
    if (!data.has(0, 5) || rest < 5) {
        w.put(" [|snap]"sv);
        return true;
    }
    const uint32_t oui = uint32_t{data.u8(0)} << 16 | data.u16(1);
    const uint16_t ethertype = data.u16(3);
    if (o.link_header) {
        w.put("oui "sv);
        w.put(oui == 0 ? "Ethernet"sv : "Unknown"sv);
        w.put(" (0x"sv);
        w.hex(oui, 6);
        w.put(oui == 0 ? "), ethertype "sv : "), pid "sv);
        if (const char* name = oui == 0 ? ethertype_name(ethertype) : nullptr)
            w.put(std::string_view(name));
        else
            w.put("Unknown"sv);
        w.put(" (0x"sv);
        w.hex(ethertype, 4);
        w.put("), length "sv);
        w.dec(rest - 5);
        w.put(": "sv);
    }
    const Bytes inner = data.from(5);
    if (oui == 0 && ethertype == kEtherIPv4)
        print_ipv4(w, inner, rest - 5, o);
    else if (oui == 0 && ethertype == kEtherIPv6)
        print_ipv6(w, inner, rest - 5, o);
    else if (oui == 0 && (ethertype == kEtherArp || ethertype == kEtherRarp))
        print_arp(w, inner, rest - 5, o);
    else {
        w.put("SNAP, oui 0x"sv);
        w.hex(oui, 6);
        w.put(", type 0x"sv);
        w.hex(ethertype, 4);
        w.put(", length "sv);
        w.dec(rest);
    }
    return true;
}

size_t decode_frame(Writer& w, const uint8_t* data, uint32_t caplen, uint32_t origlen,
                    const DecodeOptions& o) noexcept
{
    const Bytes frame{data, caplen};
    if (!frame.has(0, kEtherHeader)) {
        put_truncated(w, "ether"sv);
        return caplen;
    }
    uint16_t type = frame.u16(12);
    if (o.link_header) {
        put_mac(w, data + 6);
        w.put(" > "sv);
        put_mac(w, data);
        w.put(", "sv);
        // A tag cut short: tcpdump says no more of the link header.
        if ((type == kEtherVlan || type == kEtherQinQ || type == kEtherQinQOld) && !frame.has(kEtherHeader, 4)) {
            put_truncated(w, "vlan"sv);
            return caplen;
        }
        if (type < 0x0600) {
            w.put("802.3"sv);
        } else if (o.quick) {
            put_ethertype(w, type, false);
        } else {
            w.put("ethertype "sv);
            put_ethertype(w, type, true);
        }
        // An 802.3 frame's length is its length field, as tcpdump gives it.
        w.put(", length "sv);
        w.dec(type <= 1500 ? type : origlen);
    }
    size_t offset = kEtherHeader;
    bool separator = o.link_header; // ": " still owed after the link header
    auto begin_payload = [&] {
        if (separator)
            w.put(": "sv);
        separator = false;
    };
    for (int tag = 0; tag < kMaxVlanTags && (type == kEtherVlan || type == kEtherQinQ || type == kEtherQinQOld);
         ++tag) {
        begin_payload();
        if (!frame.has(offset, 4)) {
            put_truncated(w, "vlan"sv);
            return caplen;
        }
        const uint16_t tci = frame.u16(offset);
        type = frame.u16(offset + 2);
        w.put("vlan "sv);
        w.dec(tci & 0x0fffu);
        w.put(", p "sv);
        w.dec(tci >> 13);
        if (tci & 0x1000)
            w.put(", DEI"sv);
        w.put(", ethertype "sv);
        put_ethertype(w, type, o.link_header);
        w.put(", "sv);
        offset += 4;
    }
    const Bytes payload = frame.from(offset);
    const size_t length = origlen > offset ? origlen - offset : 0;
    switch (type) {
    case kEtherIPv4:
        begin_payload();
        print_ipv4(w, payload, length, o);
        break;
    case kEtherIPv6:
        begin_payload();
        print_ipv6(w, payload, length, o);
        break;
    case kEtherArp:
    case kEtherRarp:
        begin_payload();
        print_arp(w, payload, length, o);
        break;
    default:
        // 802.3: the length field bounds the LLC data (padding is not part of it).
        if (type <= 1500) {
            const size_t llc_length = length < type ? length : type;
            const Bytes llc = payload.first(llc_length);
            if (llc.has(0, 3) && llc_length >= 3) {
                const bool known = (llc.u8(0) == 0xaa && llc.u8(1) == 0xaa && llc.u8(2) == 0x03) ||
                    (llc.u8(0) == 0x42 && llc.u8(1) == 0x42 && llc.u8(2) == 0x03) ||
                    (llc.u8(0) == 0x06 && llc.u8(1) == 0x06 && llc.u8(2) == 0x03);
                if (known) {
                    begin_payload();
                    print_llc(w, llc, llc_length, o);
                    break;
                }
            }
        }
        // Not decoded: with -e the link header already said what it is.
        if (separator)
            break;
        if (type < 0x0600) {
            w.put("802.3"sv);
        } else {
            w.put("ethertype "sv);
            put_ethertype(w, type, true);
        }
        // The frame's length, as tcpdump's link-level header gives it.
        w.put(", length "sv);
        w.dec(origlen);
        break;
    }
    return offset;
}

void dump_frame(Writer& w, const uint8_t* data, uint32_t caplen, size_t link_length, const DecodeOptions& o) noexcept
{
    const uint8_t level = o.hex_ascii ? o.hex_ascii : o.hex ? o.hex : o.ascii;
    if (level == 0)
        return;
    const size_t start = level > 1 ? 0 : link_length < caplen ? link_length : caplen;
    const uint8_t* bytes = data + start;
    const size_t n = caplen - start;
    if (!o.hex_ascii && !o.hex) {
        // ASCII: line breaks kept (a CR before LF dropped), other
        // unprintable bytes as '.'.
        w.put('\n');
        for (size_t i = 0; i < n; ++i) {
            const uint8_t c = bytes[i];
            if (c == '\r') {
                if (i + 1 == n || bytes[i + 1] != '\n')
                    w.put('.');
            } else if ((c >= 0x21 && c <= 0x7e) || c == ' ' || c == '\t' || c == '\n') {
                w.put(static_cast<char>(c));
            } else {
                w.put('.');
            }
        }
        return;
    }
    put_hex_lines(w, bytes, n, o.hex_ascii != 0);
}

} // namespace xdpcap::text
