// TCP and UDP as tcpdump 4.99 prints them.
#include "text/layers.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <utility>

#include "text/application.hpp"
#include "text/tcp_flows.hpp"

namespace xdpcap::text::detail {

using namespace std::string_view_literals;

namespace {

enum : uint8_t { kTcpFin = 1, kTcpSyn = 2, kTcpRst = 4, kTcpAck = 16, kTcpUrg = 32 };

// MPTCP's 64-bit keys and HMACs: hex with "0x".
void put_hex64(Writer& w, const Bytes& opt, size_t at) noexcept
{
    w.put("0x"sv, Hex{uint64_t{opt.u32(at)} << 32 | opt.u32(at + 4)});
}

// The printers of MPTCP's subtypes (tcpdump's mptcp_print): the option
// from its kind byte, all `length` bytes captured. False where tcpdump
// finds it malformed ("[bad opt]").
bool mptcp_capable(Writer& w, const Bytes& opt, size_t length, uint8_t tcp_flags) noexcept
{
    if (!((length == 12 || length == 4) && (tcp_flags & kTcpSyn)) &&
        !((length == 20 || length == 22) && (tcp_flags & (kTcpSyn | kTcpAck)) == kTcpAck))
        return false;
    const uint8_t version = opt.u8(2) & 0xf;
    if (version > 1) {
        w.put(" Unknown Version ("sv, version, ')');
        return true;
    }
    w.put(" v"sv, version);
    if (opt.u8(3) & 0x80)
        w.put(" csum"sv);
    if (length == 12 || length >= 20) {
        w.put(" {"sv);
        put_hex64(w, opt, 4);
        if (length >= 20) {
            w.put(',');
            put_hex64(w, opt, 12);
        }
        w.put('}');
    }
    return true;
}

bool mptcp_join(Writer& w, const Bytes& opt, size_t length, uint8_t tcp_flags) noexcept
{
    if (!(length == 12 && (tcp_flags & kTcpSyn)) &&
        !(length == 16 && (tcp_flags & (kTcpSyn | kTcpAck)) == (kTcpSyn | kTcpAck)) &&
        !(length == 24 && (tcp_flags & kTcpAck)))
        return false;
    if (length != 24)
        w.put(opt.u8(2) & 1 ? " backup id "sv : " id "sv, opt.u8(3));
    if (length == 12) {
        w.put(" token 0x"sv, Hex{opt.u32(4)}, " nonce 0x"sv, Hex{opt.u32(8)});
    } else if (length == 16) {
        w.put(" hmac "sv);
        put_hex64(w, opt, 4);
        w.put(" nonce 0x"sv, Hex{opt.u32(12)});
    } else {
        w.put(" hmac 0x"sv);
        for (size_t i = 4; i < 24; ++i)
            w.hex_byte(opt.u8(i));
    }
    return true;
}

// A DSS number of 4 or 8 bytes at `at`, as long as the option holds it.
bool put_dss_number(Writer& w, const Bytes& opt, size_t length, size_t& at, bool wide) noexcept
{
    const size_t n = wide ? 8 : 4;
    if (length - at < n)
        return false;
    w.dec(wide ? uint64_t{opt.u32(at)} << 32 | opt.u32(at + 4) : opt.u32(at));
    at += n;
    return true;
}

bool mptcp_dss(Writer& w, const Bytes& opt, size_t length, uint8_t tcp_flags) noexcept
{
    if (length < 4 || (tcp_flags & kTcpSyn))
        return false;
    const uint8_t flags = opt.u8(3);
    if (flags & 0x10)
        w.put(" fin"sv);
    size_t at = 4;
    if (flags & 0x01) {
        w.put(" ack "sv);
        if (!put_dss_number(w, opt, length, at, (flags & 0x02) != 0))
            return false;
    }
    if (flags & 0x04) {
        w.put(" seq "sv);
        if (!put_dss_number(w, opt, length, at, (flags & 0x08) != 0) || length - at < 4)
            return false;
        w.put(" subseq "sv);
        put_dss_number(w, opt, length, at, false);
        if (length - at < 2)
            return false;
        w.put(" len "sv, opt.u16(at));
        at += 2;
        if (length - at >= 2) {
            w.put(" csum 0x"sv, Hex{opt.u16(at)});
            at += 2;
        }
    }
    return at == length;
}

bool mptcp_add_address(Writer& w, const Bytes& opt, size_t length, uint8_t) noexcept
{
    const bool v4 = length == 8 || length == 10 || length == 16 || length == 18;
    const bool v6 = length == 20 || length == 22 || length == 28 || length == 30;
    if (!v4 && !v6)
        return false;
    constexpr std::pair<uint8_t, std::string_view> kEcho[] = {
        {6, "v0-ip6"sv}, {4, "v0-ip4"sv}, {1, "v1-echo"sv}, {0, "v1"sv}};
    std::string_view echo = "[bad version/echo]"sv;
    for (const auto& [bits, name] : kEcho) {
        if (bits == (opt.u8(2) & 0xf))
            echo = name;
    }
    const size_t address = v4 ? 4 : 16;
    w.put(' ', echo, " id "sv, opt.u8(3), ' ',
          v4 ? ipv4_text(opt.data + 4).view() : ipv6_text(opt.data + 4).view());
    const bool port = length == 10 || length == 18 || length == 22 || length == 30;
    if (port)
        w.put(':', opt.u16(4 + address));
    if (length == 16 || length == 18 || length == 28 || length == 30) {
        w.put(" hmac "sv);
        put_hex64(w, opt, 4 + address + (port ? 2 : 0));
    }
    return true;
}

bool mptcp_remove_address(Writer& w, const Bytes& opt, size_t length, uint8_t) noexcept
{
    if (length < 4)
        return false;
    w.put(" id"sv);
    for (size_t i = 3; i < length; ++i)
        w.put(' ', opt.u8(i));
    return true;
}

bool mptcp_priority(Writer& w, const Bytes& opt, size_t length, uint8_t) noexcept
{
    if (length != 3 && length != 4)
        return false;
    w.put(opt.u8(2) & 1 ? " backup"sv : " non-backup"sv);
    if (length == 4)
        w.put(" id "sv, opt.u8(3));
    return true;
}

bool mptcp_fail(Writer& w, const Bytes& opt, size_t length, uint8_t) noexcept
{
    if (length != 12)
        return false;
    w.put(" seq "sv, uint64_t{opt.u32(4)} << 32 | opt.u32(8));
    return true;
}

bool mptcp_fast_close(Writer& w, const Bytes& opt, size_t length, uint8_t) noexcept
{
    if (length != 12)
        return false;
    w.put(" key "sv);
    put_hex64(w, opt, 4);
    return true;
}

bool mptcp_unknown(Writer&, const Bytes&, size_t, uint8_t) noexcept
{
    return true;
}

// MPTCP's subtypes in order, and past them one for all unknown.
constexpr struct {
    std::string_view name;
    bool (*print)(Writer&, const Bytes&, size_t, uint8_t) noexcept;
} kMptcpSubtypes[] = {
    {"capable"sv, mptcp_capable},       {"join"sv, mptcp_join},         {"dss"sv, mptcp_dss},
    {"add-addr"sv, mptcp_add_address},  {"rem-addr"sv, mptcp_remove_address}, {"prio"sv, mptcp_priority},
    {"fail"sv, mptcp_fail},             {"fast-close"sv, mptcp_fast_close},  {"unknown"sv, mptcp_unknown},
};

// An MPTCP option (RFC 8684) from its kind byte, all `length` bytes
// captured: the length, the subtype and its fields.
bool put_mptcp(Writer& w, const Bytes& opt, size_t length, uint8_t tcp_flags) noexcept
{
    if (length < 3)
        return false;
    const auto& subtype = kMptcpSubtypes[std::min<size_t>(opt.u8(2) >> 4, std::size(kMptcpSubtypes) - 1)];
    w.put(' ', length, ' ', subtype.name);
    return subtype.print(w, opt, length, tcp_flags);
}

// How a TCP option's printer ends: printed, or the line ends with tcpdump's
// bad-option mark or its mark for a cut.
enum class OptionEnd { Printed, Bad, Cut };

// A TCP option being printed: its data from `at`, and what its printer
// needs; the printer sets `data` to the bytes it took.
struct TcpOption {
    Writer& w;
    const Bytes& opts;
    size_t at;
    size_t length; // from the kind on
    size_t room;   // option bytes the header holds from `at` on
    bool reverse;
    TcpFlows::Base base;
    bool whole_segment;
    uint8_t tcp_flags;
    std::string_view protocol; // renamed by MPTCP's printer (see put_tcp_options)
    size_t data = 0;

    // `need` data bytes: within the header (else Bad) and captured (else Cut).
    OptionEnd check(size_t need) const noexcept
    {
        return need > room ? OptionEnd::Bad : opts.has(at, need) ? OptionEnd::Printed : OptionEnd::Cut;
    }
    // A fixed-size option's data.
    OptionEnd fixed(size_t n) noexcept
    {
        data = n;
        return check(n);
    }
    // The data after the kind and length, however long.
    OptionEnd rest() noexcept
    {
        data = length - 2;
        return check(data);
    }
};

OptionEnd tcp_option_empty(TcpOption&) noexcept
{
    return OptionEnd::Printed;
}

// A number of `n` bytes in decimal: MSS, window scale, echo and the CC options.
OptionEnd tcp_option_number(TcpOption& t, size_t n) noexcept
{
    const OptionEnd end = t.fixed(n);
    if (end == OptionEnd::Printed)
        t.w.put(' ', n == 1 ? t.opts.u8(t.at) : n == 2 ? t.opts.u16(t.at) : t.opts.u32(t.at));
    return end;
}

OptionEnd tcp_option_mss(TcpOption& t) noexcept
{
    return tcp_option_number(t, 2);
}

OptionEnd tcp_option_wscale(TcpOption& t) noexcept
{
    return tcp_option_number(t, 1);
}

OptionEnd tcp_option_u32(TcpOption& t) noexcept
{
    return tcp_option_number(t, 4);
}

OptionEnd tcp_option_scps(TcpOption& t) noexcept
{
    const OptionEnd end = t.fixed(2);
    if (end == OptionEnd::Printed)
        t.w.put(" cap "sv, Hex{t.opts.u8(t.at), 2}, " id "sv, t.opts.u8(t.at + 1));
    return end;
}

OptionEnd tcp_option_uto(TcpOption& t) noexcept
{
    const OptionEnd end = t.fixed(2);
    if (end != OptionEnd::Printed)
        return end;
    const uint16_t value = t.opts.u16(t.at);
    // The low bit says minutes (1) or seconds (0).
    t.w.put(" 0x"sv, Hex{value}, ' ', value & 1 ? (value >> 1) * 60u : value >> 1);
    return end;
}

OptionEnd tcp_option_timestamp(TcpOption& t) noexcept
{
    const OptionEnd end = t.fixed(8);
    if (end == OptionEnd::Printed)
        t.w.put(" val "sv, t.opts.u32(t.at), " ecr "sv, t.opts.u32(t.at + 4));
    return end;
}

OptionEnd tcp_option_md5(TcpOption& t) noexcept
{
    const OptionEnd end = t.fixed(16);
    if (end != OptionEnd::Printed)
        return end;
    // tcpdump cannot check it without the whole segment and the shared
    // secret (-M).
    t.w.put(t.whole_segment ? " shared secret not supplied with -M, can't check - "sv
                            : " snaplen too short, can't check - "sv);
    for (size_t i = 0; i < 16; ++i)
        t.w.hex_byte(t.opts.u8(t.at + i));
    return end;
}

OptionEnd tcp_option_sack(TcpOption& t) noexcept
{
    t.data = t.length - 2;
    if (t.data % 8 != 0) {
        t.w.put(" invalid sack"sv);
        return OptionEnd::Printed;
    }
    t.w.put(' ', t.data / 8, ' ');
    const uint32_t relative_to = t.reverse ? t.base.seq : t.base.ack;
    for (size_t i = 0; i < t.data; i += 8) {
        if (const OptionEnd end = t.check(i + 4); end != OptionEnd::Printed)
            return end;
        if (const OptionEnd end = t.check(i + 8); end != OptionEnd::Printed)
            return end;
        t.w.put('{', static_cast<uint32_t>(t.opts.u32(t.at + i) - relative_to), ':',
                static_cast<uint32_t>(t.opts.u32(t.at + i + 4) - relative_to), '}');
    }
    return OptionEnd::Printed;
}

OptionEnd tcp_option_ao(TcpOption& t) noexcept
{
    t.data = t.length - 2;
    if (t.data < 2) {
        t.w.put(" (invalid)"sv);
        return OptionEnd::Printed;
    }
    for (size_t i = 0; i < t.data; ++i) {
        // The MAC's prefix comes before its first byte is checked.
        if (i == 2)
            t.w.put(" mac 0x"sv);
        if (const OptionEnd end = t.check(i + 1); end != OptionEnd::Printed)
            return end;
        if (i == 0)
            t.w.put(" keyid "sv, t.opts.u8(t.at));
        else if (i == 1)
            t.w.put(" rnextkeyid "sv, t.opts.u8(t.at + 1));
        else
            t.w.hex_byte(t.opts.u8(t.at + i));
    }
    return OptionEnd::Printed;
}

// A Fast Open cookie of `n` bytes from `from` (RFC 7413).
void put_fastopen_cookie(TcpOption& t, size_t from, size_t n) noexcept
{
    if (n == 0) {
        t.w.put(" cookiereq"sv);
    } else if (n % 2 != 0 || n < 4 || n > 16) {
        t.w.put(" (invalid)"sv);
    } else {
        t.w.put(" cookie "sv);
        for (size_t i = 0; i < n; ++i)
            t.w.hex_byte(t.opts.u8(from + i));
    }
}

OptionEnd tcp_option_fastopen(TcpOption& t) noexcept
{
    const OptionEnd end = t.rest();
    if (end == OptionEnd::Printed) {
        t.w.put(' ');
        put_fastopen_cookie(t, t.at, t.data);
    }
    return end;
}

OptionEnd tcp_option_experiment(TcpOption& t) noexcept
{
    if (const OptionEnd end = t.rest(); end != OptionEnd::Printed)
        return end;
    if (t.data < 2)
        return OptionEnd::Bad;
    t.w.put('-');
    if (t.opts.u16(t.at) == 0xf989) { // TCP Fast Open, RFC 7413
        t.w.put("tfo"sv);
        put_fastopen_cookie(t, t.at + 2, t.data - 2);
    } else {
        t.w.hex(t.opts.u16(t.at), 4);
    }
    return OptionEnd::Printed;
}

OptionEnd tcp_option_mptcp(TcpOption& t) noexcept
{
    if (const OptionEnd end = t.rest(); end != OptionEnd::Printed)
        return end;
    if (!put_mptcp(t.w, t.opts.from(t.at - 2).first(t.length), t.length, t.tcp_flags))
        return OptionEnd::Bad;
    t.protocol = "mptcp"sv;
    return OptionEnd::Printed;
}

OptionEnd tcp_option_unknown(TcpOption& t) noexcept
{
    t.data = t.length - 2;
    if (t.data)
        t.w.put(" 0x"sv);
    for (size_t i = 0; i < t.data; ++i) {
        if (const OptionEnd end = t.check(i + 1); end != OptionEnd::Printed)
            return end;
        t.w.hex_byte(t.opts.u8(t.at + i));
    }
    return OptionEnd::Printed;
}

constexpr uint8_t kTcpEol = 0;
constexpr uint8_t kTcpNop = 1;
// The options tcpdump's print-tcp.c names: kind, name, printer.
constexpr struct {
    uint8_t kind;
    std::string_view name;
    OptionEnd (*print)(TcpOption&) noexcept;
} kTcpOptions[] = {
    {kTcpEol, "eol"sv, tcp_option_empty},
    {kTcpNop, "nop"sv, tcp_option_empty},
    {2, "mss"sv, tcp_option_mss},
    {3, "wscale"sv, tcp_option_wscale},
    {4, "sackOK"sv, tcp_option_empty},
    {5, "sack"sv, tcp_option_sack},
    {6, "echo"sv, tcp_option_u32},
    {7, "echoreply"sv, tcp_option_u32},
    {8, "TS"sv, tcp_option_timestamp},
    {11, "cc"sv, tcp_option_u32},
    {12, "ccnew"sv, tcp_option_u32},
    {13, ""sv, tcp_option_u32}, // CC.ECHO: tcpdump's table names it ""
    {19, "md5"sv, tcp_option_md5},
    {20, "scps"sv, tcp_option_scps},
    {28, "uto"sv, tcp_option_uto},
    {29, "tcp-ao"sv, tcp_option_ao},
    {30, "mptcp"sv, tcp_option_mptcp},
    {34, "tfo"sv, tcp_option_fastopen},
    {254, "exp"sv, tcp_option_experiment},
};

// TCP options as tcpdump prints them: the names, values and checks of its
// print-tcp.c. `opts` is what was captured of the `room` option bytes the
// header length promises; `whole_segment`: the payload was captured too.
// Returns false where tcpdump ends the packet's
// line early (a malformed option, or the capture ending inside one).
bool put_tcp_options(Writer& w, const Bytes& opts, size_t room, bool reverse, TcpFlows::Base base,
                     bool whole_segment, uint8_t tcp_flags, const DecodeOptions& o) noexcept
{
    w.put(", options ["sv);
    bool listed = false;
    size_t at = 0;
    // tcpdump's MPTCP printer renames the protocol and leaves it so: a
    // capture that ends in a later option reports "[|mptcp]".
    std::string_view protocol = "tcp"sv;
    while (room > 0) {
        if (listed)
            w.put(',');
        // Past the capture before the kind or length: tcpdump abandons the packet.
        if (abandoned_at(w, opts, at, 1, protocol, o))
            return false;
        const uint8_t kind = opts.u8(at++);
        size_t length = 1;
        if (kind != kTcpEol && kind != kTcpNop) {
            if (abandoned_at(w, opts, at, 1, protocol, o))
                return false;
            length = opts.u8(at++);
            if (length < 2 || length > room) {
                w.put("[bad opt]"sv);
                if (listed)
                    w.put(']');
                return false;
            }
            --room;
        }
        --room;
        OptionEnd (*print)(TcpOption&) noexcept = tcp_option_unknown;
        if (const auto* k = std::find_if(std::begin(kTcpOptions), std::end(kTcpOptions),
                                         [&](const auto& k) { return k.kind == kind; });
            k != std::end(kTcpOptions)) {
            w.put(k->name);
            print = k->print;
        } else {
            w.put("unknown-"sv, kind);
        }
        TcpOption t{w, opts, at, length, room, reverse, base, whole_segment, tcp_flags, protocol};
        const OptionEnd end = print(t);
        if (end != OptionEnd::Printed) {
            if (end == OptionEnd::Bad)
                w.put("[bad opt]"sv, listed ? "]"sv : ""sv);
            else
                w.put(" [|"sv, protocol, ']', listed ? ">"sv : ""sv);
            return false;
        }
        protocol = t.protocol;
        at += t.data;
        room -= t.data;
        if (t.data + (kind == kTcpEol || kind == kTcpNop ? 1 : 2) != length)
            w.put("[len "sv, length, ']');
        listed = true;
        if (kind == kTcpEol)
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

// A reset's data, which tcpdump shows with -v: up to 30 bytes, escaped.
void put_reset_data(Writer& w, const Bytes& data, size_t length) noexcept
{
    constexpr size_t kMaxResetData = 30;
    w.put(data.has(0, length) ? " [RST"sv : " [!RST"sv);
    if (length > kMaxResetData) {
        length = kMaxResetData;
        w.put('+');
    }
    w.put(' ');
    put_escaped(w, data.data, length < data.size ? length : data.size);
    w.put(']');
}

// tcpdump's letters for the flags, in its order.
void put_tcp_flags(Writer& w, uint8_t flags) noexcept
{
    constexpr struct {
        uint8_t bit;
        char letter;
    } kLetters[] = {{kTcpFin, 'F'}, {kTcpSyn, 'S'}, {kTcpRst, 'R'}, {8, 'P'},
                    {kTcpAck, '.'}, {kTcpUrg, 'U'}, {64, 'E'},      {128, 'W'}};
    w.put("Flags ["sv);
    if (flags == 0)
        w.put("none"sv);
    for (const auto& l : kLetters) {
        if (flags & l.bit)
            w.put(l.letter);
    }
    w.put(']');
}

void put_tcp_header_too_long(Writer& w, uint32_t header, uint32_t segment) noexcept
{
    w.put(" [bad hdr length "sv, header, " - too long, > "sv, segment, ']');
}

// The -v checksum verdict, where one is given.
void put_tcp_checksum(Writer& w, const Endpoints& e, const Bytes& l4, uint32_t segment, const DecodeOptions& o) noexcept
{
    uint16_t should_be = 0;
    const ChecksumCheck check = check_transport(e, kProtoTcp, l4, segment, o, should_be);
    if (check != ChecksumCheck::NotChecked)
        w.put(", cksum 0x"sv, Hex{l4.u16(16), 4});
    if (check == ChecksumCheck::Correct)
        w.put(" (correct)"sv);
    else if (check == ChecksumCheck::Incorrect)
        w.put(" (incorrect -> 0x"sv, Hex{should_be, 4}, ')');
    else if (check == ChecksumCheck::Offloaded)
        w.put(" (offloaded)"sv);
}

// The segment's `data` bytes after its `header`: a reset's shown with -v,
// others decoded by port.
void print_tcp_data(Writer& w, const Bytes& l4, uint32_t header, uint32_t data, uint8_t flags,
                    const DecodeOptions& o) noexcept
{
    if (!l4.has(0, header)) {
        // tcpdump abandons a segment with data whose header was cut.
        w.put(" [remaining caplen("sv, l4.size, ") < header length("sv, header, ")]"sv);
        put_abandoned(w, "tcp"sv, o);
        return;
    }
    const Bytes payload = l4.from(header);
    if ((flags & kTcpRst) && o.verbose) {
        put_reset_data(w, payload, data);
        return;
    }
    print_tcp_application(w, l4.u16(0), l4.u16(2), payload.data, payload.size, data, o);
}

} // namespace

// `length`: the segment's length by the IP header (captured or not).
void print_tcp(Writer& w, const Endpoints& e, const Bytes& l4, size_t length, bool fragmented,
               const DecodeOptions& o) noexcept
{
    if (!l4.has(0, 4)) {
        // Without its ports tcpdump writes the IP header's addresses, even
        // where they were written before (after an AH or extension header).
        Endpoints addresses = e;
        addresses.addresses = e.src != nullptr && e.dst != nullptr;
        put_endpoints(w, addresses, l4, false);
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
        w.put(" tcp "sv, static_cast<uint32_t>(segment - header), " [bad hdr length "sv, header,
              " - too short, < 20]"sv);
        return;
    }
    if (o.quick) {
        w.put("tcp "sv, static_cast<uint32_t>(segment - header));
        if (header > segment)
            put_tcp_header_too_long(w, header, segment);
        return;
    }
    const uint8_t flags = l4.u8(13);
    put_tcp_flags(w, flags);
    uint32_t seq = l4.u32(4);
    uint32_t ack = l4.u32(8);
    bool reverse = false;
    TcpFlows::Base base;
    if (o.tcp_flows && (flags & kTcpAck) && e.address_size)
        base = relative_sequence(*o.tcp_flows, e, l4.u16(0), l4.u16(2), (flags & kTcpSyn) != 0, seq, ack, reverse);
    if (header > segment) {
        put_tcp_header_too_long(w, header, segment);
        return;
    }
    if (o.verbose && !fragmented)
        put_tcp_checksum(w, e, l4, segment, o);
    const uint32_t data = segment - header;
    if (o.verbose > 1 || data > 0 || (flags & (kTcpSyn | kTcpFin | kTcpRst))) {
        w.put(", seq "sv, seq);
        if (data > 0)
            w.put(':', static_cast<uint32_t>(seq + data));
    }
    if (flags & kTcpAck)
        w.put(", ack "sv, ack);
    w.put(", win "sv, l4.u16(14));
    if (flags & kTcpUrg)
        w.put(", urg "sv, l4.u16(18));
    if (header > 20 && !put_tcp_options(w, l4.first(header).from(20), header - 20, reverse, base, l4.has(0, segment),
                                        flags, o))
        return;
    w.put(", length "sv, data);
    if (data != 0)
        print_tcp_data(w, l4, header, data, flags, o);
}

// `length`: the datagram's length by the IP header; `fragmented`: more
// fragments follow, so a UDP length beyond this one is no error.
void print_udp(Writer& w, const Endpoints& e, const Bytes& l4, size_t length, bool fragmented,
               const DecodeOptions& o) noexcept
{
    if (!l4.has(0, 4)) {
        put_endpoints(w, e, l4, false);
        put_truncated(w, "udp"sv);
        return;
    }
    put_endpoints(w, e, l4, true);
    // tcpdump's checks, in its order and words.
    if (length < 8) {
        w.put("truncated-udp "sv, length);
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
        w.put("truncated-udplength "sv, udp_length);
        return;
    }
    if (!l4.has(0, 8)) {
        put_truncated(w, "udp"sv);
        return;
    }
    udp_length -= 8;
    const size_t room = length - 8;
    // tcpdump checks IPv4's optional sum from -vv on, IPv6's from -v.
    const bool ipv6 = e.address_size == 16;
    if (o.verify_checksums && !fragmented && (ipv6 ? o.verbose >= 1 : o.verbose >= 2)) {
        if (!ipv6 && l4.u16(6) == 0) {
            w.put("[no cksum] "sv);
        } else {
            uint16_t should_be = 0;
            const size_t covered = 8 + (udp_length < room ? udp_length : room);
            const ChecksumCheck check = check_transport(e, kProtoUdp, l4, covered, o, should_be);
            put_checksum_verdict(w, "udp"sv, check, l4.u16(6), should_be);
        }
    }
    // The ports tcpdump 4.99.3 recognises a payload by (without -q).
    if (!o.quick) {
        const Bytes payload = l4.from(8);
        const size_t payload_length = udp_length < room ? udp_length : room;
        switch (application_by_port(kProtoUdp, l4.u16(0), l4.u16(2))) {
        case PortApplication::Dns:
            return print_dns(w, payload, payload_length, false, false, o.verbose);
        case PortApplication::Mdns:
            return print_dns(w, payload, payload_length, false, true, o.verbose);
        case PortApplication::Otv:
            return print_otv(w, payload, payload_length, o);
        case PortApplication::Vxlan:
            return print_vxlan(w, payload, payload_length, o);
        case PortApplication::Geneve:
            return print_geneve(w, payload, payload_length, o);
        case PortApplication::Mpls:
            return print_mpls(w, payload, payload_length, o);
        default:
            break;
        }
    }
    if (udp_length > room && !fragmented) {
        w.put("UDP, bad length "sv, udp_length, " > "sv, room);
        return;
    }
    w.put("UDP, length "sv, udp_length);
}

} // namespace xdpcap::text::detail
