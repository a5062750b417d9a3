// tcpdump filters: libpcap's own interpreter is the reference; the eBPF
// translation, run by a strict interpreter, must give the same verdict on every
// frame, whole or split into linear data + fragments.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "ebpf_interp.hpp"
#include "base/error.hpp"
#include "filter/compile.hpp"
#include "filter/disasm.hpp"
#include "base/ebpf_insn.hpp"
#include "filter/translate.hpp"
#include "programs/program_btf.hpp"

using namespace xdpcap;

namespace {

using Bytes = std::vector<uint8_t>;
using Mac = std::array<uint8_t, 6>;

constexpr Mac kMacA{0x02, 0, 0, 0, 0, 0x01};
constexpr Mac kMacB{0x02, 0, 0, 0, 0, 0x02};
constexpr Mac kBroadcast{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr Mac kMcast4{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb};
constexpr Mac kMcast6{0x33, 0x33, 0xff, 0x00, 0x00, 0x02};

class Writer {
public:
    Writer& u8(uint8_t v)
    {
        b_.push_back(v);
        return *this;
    }
    Writer& u16(uint16_t v) { return u8(static_cast<uint8_t>(v >> 8)).u8(static_cast<uint8_t>(v)); }
    Writer& u32(uint32_t v) { return u16(static_cast<uint16_t>(v >> 16)).u16(static_cast<uint16_t>(v)); }
    Writer& bytes(const Bytes& v)
    {
        b_.insert(b_.end(), v.begin(), v.end());
        return *this;
    }
    template <size_t N>
    Writer& bytes(const std::array<uint8_t, N>& v)
    {
        b_.insert(b_.end(), v.begin(), v.end());
        return *this;
    }
    Bytes take() { return std::move(b_); }

private:
    Bytes b_;
};

std::array<uint8_t, 4> v4(const char* text)
{
    std::array<uint8_t, 4> a{};
    EXPECT_EQ(inet_pton(AF_INET, text, a.data()), 1) << text;
    return a;
}

std::array<uint8_t, 16> v6(const char* text)
{
    std::array<uint8_t, 16> a{};
    EXPECT_EQ(inet_pton(AF_INET6, text, a.data()), 1) << text;
    return a;
}

Bytes pattern(size_t n, uint8_t seed = 0)
{
    Bytes b(n);
    for (size_t i = 0; i < n; ++i)
        b[i] = static_cast<uint8_t>(i * 7 + seed);
    return b;
}

struct Tag {
    uint16_t tpid;
    uint16_t tci;
};

Bytes ether(uint16_t type, const Bytes& payload, Mac dst = kMacB, Mac src = kMacA, std::vector<Tag> tags = {})
{
    Writer w;
    w.bytes(dst).bytes(src);
    for (const Tag& t : tags)
        w.u16(t.tpid).u16(t.tci);
    return w.u16(type).bytes(payload).take();
}

struct V4Options {
    uint8_t tos = 0;
    uint8_t ttl = 64;
    uint16_t frag = 0; // flags and fragment offset
    uint8_t option_words = 0;
};

Bytes ipv4(uint8_t proto, const char* src, const char* dst, const Bytes& payload, V4Options o = {})
{
    Writer w;
    const auto header = static_cast<uint16_t>(20 + 4 * o.option_words);
    w.u8(static_cast<uint8_t>(0x40 | (5 + o.option_words))).u8(o.tos);
    w.u16(static_cast<uint16_t>(header + payload.size())).u16(0x1234).u16(o.frag);
    w.u8(o.ttl).u8(proto).u16(0).bytes(v4(src)).bytes(v4(dst));
    for (uint8_t i = 0; i < o.option_words; ++i)
        w.u32(0x01010101); // NOPs
    return w.bytes(payload).take();
}

Bytes ipv6(uint8_t next, const char* src, const char* dst, const Bytes& payload, uint8_t hops = 64)
{
    Writer w;
    w.u32(0x60000000).u16(static_cast<uint16_t>(payload.size())).u8(next).u8(hops);
    return w.bytes(v6(src)).bytes(v6(dst)).bytes(payload).take();
}

constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10;

Bytes tcp(uint16_t sport, uint16_t dport, uint8_t flags, const Bytes& data = {}, uint8_t option_words = 0)
{
    Writer w;
    w.u16(sport).u16(dport).u32(0x01020304).u32(flags & kAck ? 0x0a0b0c0d : 0);
    w.u8(static_cast<uint8_t>((5 + option_words) << 4)).u8(flags).u16(65535).u16(0).u16(0);
    for (uint8_t i = 0; i < option_words; ++i)
        w.u32(0x01010101);
    return w.bytes(data).take();
}

Bytes udp(uint16_t sport, uint16_t dport, const Bytes& data)
{
    return Writer().u16(sport).u16(dport).u16(static_cast<uint16_t>(8 + data.size())).u16(0).bytes(data).take();
}

Bytes icmp(uint8_t type, uint8_t code, const Bytes& data = pattern(8))
{
    return Writer().u8(type).u8(code).u16(0).bytes(data).take();
}

Bytes arp(uint16_t op, Mac sha, const char* spa, Mac tha, const char* tpa)
{
    Writer w;
    w.u16(1).u16(0x0800).u8(6).u8(4).u16(op);
    return w.bytes(sha).bytes(v4(spa)).bytes(tha).bytes(v4(tpa)).take();
}

Bytes mpls(std::vector<uint32_t> labels, const Bytes& payload)
{
    Writer w;
    for (size_t i = 0; i < labels.size(); ++i)
        w.u32(labels[i] << 12 | (i + 1 == labels.size() ? 0x100u : 0u) | 64u);
    return w.bytes(payload).take();
}

Bytes cut(Bytes b, size_t n)
{
    b.resize(n);
    return b;
}

Bytes with_byte(Bytes b, size_t at, uint8_t value)
{
    b.at(at) = value;
    return b;
}

struct NamedFrame {
    std::string name;
    Bytes bytes;
};

const FilterTarget kXdpMulti{FilterContext::Xdp, true};
const FilterTarget kXdpLinear{FilterContext::Xdp, false};
const FilterTarget kTcEgress{FilterContext::TcEgress};
const FilterTarget kTrace{FilterContext::Trace};
constexpr int kDropViewFd = 41;
const FilterTarget kDrop{FilterContext::Drop, false, -1, kDropViewFd};

std::string hook_label(const FilterTarget& target)
{
    if (target.context == FilterContext::Trace)
        return "trace";
    return target.context == FilterContext::TcEgress ? "tc egress" : target.multi_buffer ? "xdp frags" : "xdp";
}

constexpr uint8_t kTcp = 6, kUdp = 17, kIcmp = 1, kIcmp6 = 58, kGre = 47, kSctp = 132;

std::vector<NamedFrame> frame_corpus()
{
    const char* a4 = "198.18.0.1";
    const char* b4 = "198.18.0.2";
    const char* a6 = "2001:db8::1";
    const char* b6 = "2001:db8::2";
    const Bytes syn = ipv4(kTcp, a4, b4, tcp(12345, 80, kSyn));
    const Bytes v6syn = ipv6(kTcp, a6, b6, tcp(12345, 80, kSyn));
    Bytes jumbo4 = ether(0x0800, ipv4(kUdp, a4, "198.19.0.9", udp(40000, 1500, pattern(9000 - 14 - 28, 3))));
    jumbo4.back() = 0xaa;
    jumbo4.at(8990) = 0xaa;
    Bytes jumbo6 = ether(0x86dd, ipv6(kTcp, b6, a6, tcp(443, 50000, kAck | kPsh, pattern(9000 - 14 - 40 - 20, 5))));

    std::vector<NamedFrame> f = {
        {"ipv4_tcp_syn", ether(0x0800, syn)},
        {"ipv4_tcp_synack", ether(0x0800, ipv4(kTcp, b4, a4, tcp(80, 12345, kSyn | kAck)), kMacA, kMacB)},
        {"ipv4_tcp_https_data", ether(0x0800, ipv4(kTcp, a4, "198.19.1.1", tcp(50000, 443, kAck | kPsh, pattern(100))))},
        {"ipv4_tcp_rst", ether(0x0800, ipv4(kTcp, b4, a4, tcp(80, 12345, kRst | kAck)))},
        {"ipv4_tcp_fin_ack", ether(0x0800, ipv4(kTcp, a4, b4, tcp(12345, 80, kFin | kAck)))},
        {"ipv4_tcp_options_ssh", ether(0x0800, ipv4(kTcp, "198.19.255.7", a4, tcp(2222, 22, kAck, pattern(40), 3),
                                                     V4Options{.tos = 0x10, .ttl = 1, .option_words = 2}))},
        {"ipv4_tcp_tos44", ether(0x0800, ipv4(kTcp, a4, b4, tcp(1024, 8080, kAck, pattern(1200)), {.tos = 0x2c}))},
        {"ipv4_tcp_other_net", ether(0x0800, ipv4(kTcp, "192.0.2.1", "192.0.2.2", tcp(80, 1500, kSyn)))},
        {"ipv4_udp_dns", ether(0x0800, ipv4(kUdp, "198.18.1.5", "198.19.255.254", udp(53000, 53, pattern(30))))},
        {"ipv4_udp_dns_reply", ether(0x0800, ipv4(kUdp, "198.19.255.254", "198.18.1.5", udp(53, 53000, with_byte(pattern(60), 2, 0x81))))},
        {"ipv4_udp_1500", ether(0x0800, ipv4(kUdp, a4, b4, udp(999, 1500, Bytes(16, 0x55)), {.tos = 0x08, .ttl = 65}))},
        {"ipv4_udp_1400", ether(0x0800, ipv4(kUdp, b4, a4, udp(4000, 4001, pattern(1400))))},
        {"ipv4_icmp_echo", ether(0x0800, ipv4(kIcmp, a4, b4, icmp(8, 0)))},
        {"ipv4_icmp_reply", ether(0x0800, ipv4(kIcmp, b4, a4, icmp(0, 0)))},
        {"ipv4_icmp_unreach", ether(0x0800, ipv4(kIcmp, "198.19.0.1", a4, icmp(3, 3, pattern(28))))},
        {"ipv4_frag_first", ether(0x0800, ipv4(kTcp, a4, b4, tcp(12345, 80, kAck, pattern(600)), {.frag = 0x2000}))},
        {"ipv4_frag_later_tcp", ether(0x0800, ipv4(kTcp, a4, b4, pattern(400, 9), {.frag = 185}))},
        {"ipv4_frag_later_udp", ether(0x0800, ipv4(kUdp, b4, a4, Bytes(64, 0), {.frag = 0x2000 | 10}))},
        {"ipv4_broadcast", ether(0x0800, ipv4(kUdp, a4, "198.19.255.255", udp(68, 67, pattern(50))), kBroadcast)},
        {"ipv4_multicast", ether(0x0800, ipv4(kUdp, a4, "224.0.0.251", udp(5353, 5353, pattern(40))), kMcast4)},
        {"ipv4_gre", ether(0x0800, ipv4(kGre, a4, "198.19.0.2", pattern(24)))},
        {"ipv4_sctp", ether(0x0800, ipv4(kSctp, a4, b4, Writer().u16(1500).u16(80).u32(0).u32(0).take()))},
        {"ipv6_tcp_syn", ether(0x86dd, v6syn)},
        {"ipv6_tcp_https", ether(0x86dd, ipv6(kTcp, b6, a6, tcp(443, 50000, kAck | kPsh, pattern(200)), 2))},
        {"ipv6_udp_dns", ether(0x86dd, ipv6(kUdp, a6, "2001:db8:1::53", udp(53000, 53, pattern(40))))},
        {"ipv6_icmp6_echo", ether(0x86dd, ipv6(kIcmp6, a6, b6, icmp(128, 0)))},
        {"ipv6_icmp6_ns", ether(0x86dd, ipv6(kIcmp6, a6, "ff02::1:ff00:2", icmp(135, 0, pattern(20))), kMcast6)},
        {"ipv6_hop_by_hop_udp", ether(0x86dd, ipv6(0, a6, b6, Writer().u8(kUdp).u8(0).u16(0).u32(0).bytes(udp(1000, 2000, pattern(8))).take()))},
        {"ipv6_fragment_header", ether(0x86dd, ipv6(44, b6, a6, Writer().u8(kUdp).u8(0).u16(0x0001).u32(7).bytes(pattern(48)).take()))},
        {"ipv6_outside_doc_net", ether(0x86dd, ipv6(kUdp, "fd00::1", "fd00::2", udp(1234, 1500, pattern(10))))},
        {"arp_request", ether(0x0806, arp(1, kMacA, a4, Mac{}, b4), kBroadcast)},
        {"arp_reply", ether(0x0806, arp(2, kMacB, b4, kMacA, a4), kMacA, kMacB)},
        {"rarp_request", ether(0x8035, arp(3, kMacA, "0.0.0.0", kMacA, "0.0.0.0"), kBroadcast)},
        {"vlan100_ipv4_tcp", ether(0x0800, syn, kMacB, kMacA, {{0x8100, 100}})},
        {"vlan200_ipv6_udp", ether(0x86dd, ipv6(kUdp, a6, b6, udp(53000, 53, pattern(20))), kMacB, kMacA, {{0x8100, 0x2000 | 200}})},
        {"vlan100_arp", ether(0x0806, arp(1, kMacA, a4, Mac{}, b4), kBroadcast, kMacA, {{0x8100, 100}})},
        {"qinq_88a8_ipv4_udp", ether(0x0800, ipv4(kUdp, a4, b4, udp(1000, 53, pattern(12))), kMacB, kMacA, {{0x88a8, 10}, {0x8100, 200}})},
        {"qinq_8100_ipv4_tcp", ether(0x0800, syn, kMacB, kMacA, {{0x8100, 100}, {0x8100, 200}})},
        {"mpls42_ipv4", ether(0x8847, mpls({42}, syn))},
        {"mpls_stack_ipv4", ether(0x8847, mpls({16, 42}, ipv4(kUdp, a4, b4, udp(1, 53, pattern(8)))))},
        {"mpls_ipv6", ether(0x8847, mpls({1000}, v6syn))},
        {"lldp", ether(0x88cc, pattern(46, 1), Mac{0x01, 0x80, 0xc2, 0, 0, 0x0e})},
        {"ieee8023_llc", ether(46, Writer().u8(0x42).u8(0x42).u8(3).bytes(pattern(43)).take(), Mac{0x01, 0x80, 0xc2, 0, 0, 0})},
        {"jumbo_ipv4_udp_9000", jumbo4},
        {"jumbo_ipv6_tcp_9000", jumbo6},
        {"short_20", cut(ether(0x0800, syn), 20)},
        {"cut_in_ip_header", cut(ether(0x0800, syn), 14 + 12)},
        {"cut_in_ip_addresses", cut(ether(0x0800, syn), 14 + 17)},
        {"cut_in_tcp_header", cut(ether(0x0800, syn), 14 + 20 + 8)},
        {"cut_in_ipv6_header", cut(ether(0x86dd, v6syn), 14 + 30)},
        {"cut_in_vlan_tag", cut(ether(0x0800, syn, kMacB, kMacA, {{0x8100, 100}}), 15)},
        {"runt_13", cut(ether(0x0800, syn), 13)},
        {"runt_10", cut(ether(0x0800, syn), 10)},
    };
    return f;
}

std::vector<std::string> expression_corpus()
{
    return {
        "",
        "ip",
        "ip6",
        "arp",
        "rarp",
        "tcp",
        "udp",
        "icmp",
        "icmp6",
        "sctp",
        "host 198.18.0.1",
        "src host 198.18.0.1",
        "dst host 198.18.0.2",
        "host 2001:db8::1",
        "src host 2001:db8::1",
        "dst host 2001:db8::2",
        "net 198.18.0.0/15",
        "net 198.19.0.0/16",
        "src net 198.18.0.0/24",
        "dst net 198.19.255.0/24",
        "net 2001:db8::/32",
        "net 2001:db8:1::/48",
        "port 80",
        "tcp port 80",
        "udp port 53",
        "src port 12345",
        "dst port 443",
        "tcp dst port 22",
        "portrange 1000-2000",
        "udp portrange 1000-2000",
        "tcp src portrange 1-1024",
        "ether host 02:00:00:00:00:01",
        "ether src 02:00:00:00:00:01",
        "ether dst ff:ff:ff:ff:ff:ff",
        "ether broadcast",
        "ether multicast",
        "ether proto 0x88cc",
        "ip multicast",
        "ip6 multicast",
        "vlan",
        "vlan 100",
        "vlan 200",
        "vlan and vlan",
        "vlan and vlan 200",
        "vlan 100 and ip",
        "vlan and ip6 and udp",
        "vlan and arp",
        "mpls",
        "mpls 42",
        "mpls 16 and mpls 42",
        "mpls and ip",
        "len > 100",
        "len <= 64",
        "greater 1000",
        "less 60",
        "len = 9000",
        "tcp[tcpflags] & tcp-syn != 0",
        "tcp[tcpflags] & (tcp-syn|tcp-ack) = tcp-syn",
        "tcp[tcpflags] & tcp-rst != 0",
        "tcp[tcpflags] = tcp-fin|tcp-ack",
        "tcp[13] = 0x12",
        "ip[2:2] > 1000",
        "ip[0] & 0xf != 5",
        "ip[8] = 1",
        "ip[6:2] & 0x1fff != 0",
        "ip[6] & 0x20 != 0",
        "ip[1] & 0x3f >= 32",
        "ip[0] << (ip[1] & 0x3f) > 100",
        "ip[0] >> (ip[1] & 0x3f) = 0",
        "ip[0] << tcp[0] != 0",
        "ip[2:2] / 4 > 100",
        "ip[2:2] / (ip[8] - 64) > 1",
        "ip[2:2] % (ip[8] & 3) = 1",
        "ip[2:2] % (ip[8] & 3) = 0",
        "ip[2:2] % 7 = 3",
        "ip[2:2] * 3 - 7 > 2000",
        "(ip[2:2] ^ 0xff) & 0x0f = 1",
        "(-ip[8]) & 0xff = 192",
        "udp[4:2] - 8 = 1400",
        "udp[8:4] = 0x55555555",
        "tcp[0:4] = 0x30390050",
        "tcp[12] >> 4 > 5",
        "ip[2:2] - ((ip[0]&0xf)<<2) - ((tcp[12]&0xf0)>>2) != 0",
        "icmp[icmptype] = icmp-echo",
        "icmp[0] = 8 or icmp[0] = 0",
        "icmp6[icmp6type] = icmp6-echo",
        "icmp6 and ip6[40] = 135",
        "ip6[6] = 17",
        "ip6[40:2] = 53000",
        "ether[12:2] = 0x800",
        "ether[0] & 1 != 0",
        "ether[8990] = 0xaa",
        "ether[9000] = 0",
        "ether[len - 1] = 0xaa",
        "ether[len - 4:4] != 0",
        // X + k = 2^32 + 3: wrapped, it would read ether[3] (0); classic BPF rejects.
        "ip[(ip[0] & 0xf) + 0xfffffff0] = 0",
        "ether[ip[2:2] * 100] = 0",
        "ether[ip[2:2] + 13] = 0xaa",
        "ether[70000] = 0",
        "tcp and (port 80 or port 443)",
        "not tcp",
        "not (ip or ip6)",
        "ip and not icmp",
        "(tcp or udp) and not port 53",
        "host 198.18.0.1 and (tcp port 80 or udp)",
        "ip6 and (tcp or icmp6)",
        "not ip6 and not arp",
        "arp or rarp",
        "arp host 198.18.0.2",
        "ip and ip[8] > 1 or ip6 and ip6[7] > 1",
        "ip proto 47",
        "ip6 proto 17",
        "dst port 53 and udp[10] & 0x80 = 0",
        "len > 64 and len < 1500",
    };
}

std::string verdict(uint32_t v) { return v ? "keep" : "drop"; }

} // namespace

TEST(Filter, TranslationAgreesWithLibpcap)
{
    const auto frames = frame_corpus();
    const auto expressions = expression_corpus();
    ASSERT_GE(frames.size(), 40u);
    ASSERT_GE(expressions.size(), 70u);
    const std::vector<size_t> splits = {14, 64, 128, 3500};

    size_t compared = 0;
    size_t helper_calls = 0;
    size_t skb_compared = 0;
    size_t trace_compared = 0;
    size_t drop_compared = 0;
    std::vector<std::string> failures;
    const auto check = [&](const std::string& expr, const std::vector<bpf_insn>& program, const NamedFrame& frame,
                           size_t split, bool multi_buffer, bool expected, FilterContext hook = FilterContext::Xdp) {
        const std::span<const uint8_t> bytes(frame.bytes);
        const auto linear = bytes.first(split);
        const auto frags = bytes.subspan(split);
        std::ostringstream where;
        where << "filter '" << expr << "' frame " << frame.name << " (" << linear.size() << " linear + "
              << frags.size() << " in fragments, "
              << (hook == FilterContext::Xdp        ? "xdp multi_buffer " + std::to_string(multi_buffer)
                  : hook == FilterContext::Trace ? std::string("trace")
                  : hook == FilterContext::Drop  ? std::string("drop")
                                              : std::string("tc egress"))
              << ")";
        try {
            test::HookContext context;
            context.hook = hook;
            context.drop_view_map_fd = kDropViewFd;
            test::EbpfInterp interp(program, linear, frags, context);
            const uint32_t got = interp.run();
            helper_calls += interp.helper_calls();
            // Without multi_buffer the fragments are invisible: only safety is checked.
            if (!multi_buffer && split != bytes.size())
                return;
            if (hook == FilterContext::TcEgress)
                ++skb_compared;
            if (hook == FilterContext::Trace)
                ++trace_compared;
            if (hook == FilterContext::Drop)
                ++drop_compared;
            ++compared;
            if ((got != 0) != expected)
                failures.push_back(where.str() + ": libpcap " + verdict(expected) + ", eBPF " + verdict(got));
        } catch (const test::InterpError& e) {
            failures.push_back(where.str() + ": " + e.what());
        }
    };

    for (const std::string& expr : expressions) {
        SCOPED_TRACE(expr);
        const ClassicProgram classic = compile_filter(expr);
        const auto linear_only = translate_filter(classic.instructions(), FilterTarget{FilterContext::Xdp, false});
        const auto multi = translate_filter(classic.instructions(), FilterTarget{FilterContext::Xdp, true});
        const auto egress = translate_filter(classic.instructions(), FilterTarget{FilterContext::TcEgress});
        const auto traced = translate_filter(classic.instructions(), kTrace);
        const auto dropped = translate_filter(classic.instructions(), kDrop);
        EXPECT_EQ(dump_ebpf(multi).find("unknown"), std::string::npos) << dump_ebpf(multi);
        EXPECT_EQ(dump_ebpf(traced).find("unknown"), std::string::npos) << dump_ebpf(traced);
        EXPECT_EQ(dump_ebpf(egress).find("unknown"), std::string::npos) << dump_ebpf(egress);
        for (const NamedFrame& frame : frames) {
            const bool expected = classic.run(frame.bytes) != 0;
            check(expr, linear_only, frame, frame.bytes.size(), false, expected);
            check(expr, multi, frame, frame.bytes.size(), true, expected);
            check(expr, egress, frame, frame.bytes.size(), true, expected, FilterContext::TcEgress);
            // Trace mode reads the linear data only: fragments, safety only.
            check(expr, traced, frame, frame.bytes.size(), false, expected, FilterContext::Trace);
            check(expr, dropped, frame, frame.bytes.size(), false, expected, FilterContext::Drop);
            for (size_t split : splits) {
                if (split >= frame.bytes.size())
                    continue;
                check(expr, multi, frame, split, true, expected);
                check(expr, linear_only, frame, split, false, expected);
                check(expr, egress, frame, split, true, expected, FilterContext::TcEgress);
                check(expr, traced, frame, split, false, expected, FilterContext::Trace);
                check(expr, dropped, frame, split, false, expected, FilterContext::Drop);
            }
        }
    }
    RecordProperty("comparisons", static_cast<int>(compared));
    std::printf("[          ] %zu expressions x %zu frames: %zu verdicts compared with libpcap\n",
                expressions.size(), frames.size(), compared);
    EXPECT_GE(compared, expressions.size() * frames.size() * 2);
    EXPECT_GE(skb_compared, expressions.size() * frames.size());
    EXPECT_GE(trace_compared, expressions.size() * frames.size());
    EXPECT_GT(helper_calls, 0u) << "the bpf_xdp_load_bytes path never ran";
    for (size_t i = 0; i < failures.size() && i < 30; ++i)
        ADD_FAILURE() << failures[i];
    EXPECT_TRUE(failures.empty()) << failures.size() << " disagreements or faults";
}

// -r: a file's packets record their direction, which the filter's
// `inbound` and `outbound` read through a copy with the packet type fixed.
TEST(Filter, PacketTypeFixedForAKnownDirection)
{
    constexpr uint32_t kHost = 0, kOutgoing = 4; // PACKET_HOST, PACKET_OUTGOING
    const Bytes frame = ether(0x0800, ipv4(6, "198.18.0.1", "198.18.0.2", tcp(1000, 80, 0x02)));
    const ClassicProgram inbound = compile_filter("inbound and tcp");
    ASSERT_TRUE(inbound.reads_packet_type());
    EXPECT_NE(inbound.with_packet_type(kHost).run(frame), 0u);
    EXPECT_EQ(inbound.with_packet_type(kOutgoing).run(frame), 0u);
    EXPECT_FALSE(inbound.with_packet_type(kHost).reads_packet_type());
    const ClassicProgram outbound = compile_filter("outbound");
    EXPECT_EQ(outbound.with_packet_type(kHost).run(frame), 0u);
    EXPECT_NE(outbound.with_packet_type(kOutgoing).run(frame), 0u);
    EXPECT_EQ(compile_filter("inbound and udp").with_packet_type(kHost).run(frame), 0u);
    EXPECT_FALSE(compile_filter("tcp port 80").reads_packet_type());
    // Not Ethernet's packet type: a cooked capture's header holds it.
    EXPECT_FALSE(compile_filter("inbound", kNetmaskUnknown, 262144, 113).reads_packet_type());
}

TEST(Filter, SyntaxErrorCarriesLibpcapMessage)
{
    try {
        compile_filter("tcp port");
        FAIL() << "no error";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("syntax error"), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
    try {
        compile_filter("host 999.1.1.1");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("999.1.1.1"), std::string::npos) << e.what();
    }
}

namespace {

// An IPv6 extension header of `words` 8-byte units (hop-by-hop, routing,
// destination options: length in 8-byte units after the first).
Bytes ext6(uint8_t next, uint8_t words = 1)
{
    Writer w;
    w.u8(next).u8(static_cast<uint8_t>(words - 1));
    for (int i = 2; i < 8 * words; ++i)
        w.u8(i == 2 ? 1 : 0); // PadN then zeros
    return w.take();
}

Bytes fragment6(uint8_t next) { return Writer().u8(next).u8(0).u16(0x0001).u32(0x1234).take(); }

// AH: length in 4-byte units minus 2; 12 bytes of ICV here.
Bytes ah(uint8_t next) { return Writer().u8(next).u8(4).u16(0).u32(0x100).u32(1).u32(0).u32(0).u32(0).take(); }

Bytes cat(std::initializer_list<Bytes> parts)
{
    Bytes out;
    for (const Bytes& p : parts)
        out.insert(out.end(), p.begin(), p.end());
    return out;
}

constexpr uint8_t kHopByHop = 0, kRouting = 43, kFragment = 44, kDstOpts = 60, kAh = 51, kNoNext = 59, kIpip = 4,
                  kIpv6 = 41;

Bytes dst_chain(int headers, const Bytes& tail)
{
    Bytes b = tail;
    for (int i = 0; i < headers; ++i)
        b = cat({ext6(i == 0 ? kUdp : kDstOpts), b});
    return b;
}

// Header chains for `protochain`: every IPv6 extension header libpcap
// follows, AH in IPv4, tunnels (protochain stops at them), and broken chains.
std::vector<NamedFrame> chain_frames()
{
    const char* a4 = "198.18.0.1";
    const char* b4 = "198.18.0.2";
    const char* a6 = "2001:db8::1";
    const char* b6 = "2001:db8::2";
    const Bytes u = udp(1000, 2000, pattern(16));
    const Bytes t = tcp(12345, 80, kSyn);
    return {
        {"v6_hbh_rt_frag_dst_ah_udp",
         ether(0x86dd, ipv6(kHopByHop, a6, b6,
                            cat({ext6(kRouting, 2), ext6(kFragment, 3), fragment6(kDstOpts), ext6(kAh), ah(kUdp), u})))},
        {"v6_hbh_tcp", ether(0x86dd, ipv6(kHopByHop, a6, b6, cat({ext6(kTcp), t})))},
        {"v6_dst_frag_tcp", ether(0x86dd, ipv6(kDstOpts, a6, b6, cat({ext6(kFragment, 4), fragment6(kTcp), t})))},
        {"v6_ah_icmp6", ether(0x86dd, ipv6(kAh, a6, b6, cat({ah(kIcmp6), icmp(128, 0)})))},
        {"v6_hbh_no_next", ether(0x86dd, ipv6(kHopByHop, a6, b6, ext6(kNoNext, 2)))},
        {"v6_hbh_ipip_tcp", ether(0x86dd, ipv6(kHopByHop, a6, b6, cat({ext6(kIpip), ipv4(kTcp, a4, b4, t)})))},
        {"v6_in_v6_udp", ether(0x86dd, ipv6(kIpv6, a6, b6, ipv6(kUdp, b6, a6, u)))},
        {"v6_gre", ether(0x86dd, ipv6(kDstOpts, a6, b6, cat({ext6(kGre), pattern(16)})))},
        {"v6_dst_16_udp", ether(0x86dd, ipv6(kDstOpts, a6, b6, dst_chain(16, u)))},
        {"v6_dst_100_udp", ether(0x86dd, ipv6(kDstOpts, a6, b6, dst_chain(100, u)))},
        {"v6_dst_300_tcp", ether(0x86dd, ipv6(kDstOpts, a6, b6, dst_chain(300, t)))},
        {"v6_hbh_past_end", cut(ether(0x86dd, ipv6(kHopByHop, a6, b6, cat({ext6(kUdp, 8), u}))), 14 + 40 + 20)},
        {"v6_hbh_cut_in_header", cut(ether(0x86dd, ipv6(kHopByHop, a6, b6, cat({ext6(kUdp), u}))), 14 + 40 + 1)},
        {"v4_ah_tcp", ether(0x0800, ipv4(kAh, a4, b4, cat({ah(kTcp), t})))},
        {"v4_ah_ah_udp", ether(0x0800, ipv4(kAh, a4, b4, cat({ah(kAh), ah(kUdp), u})))},
        {"v4_in_v6_ipip", ether(0x86dd, ipv6(kIpip, a6, b6, ipv4(kUdp, a4, b4, u)))},
        {"v6_in_v4", ether(0x0800, ipv4(kIpv6, a4, b4, ipv6(kHopByHop, a6, b6, cat({ext6(kUdp), u}))))},
        {"v4_ah_cut", cut(ether(0x0800, ipv4(kAh, a4, b4, cat({ah(kTcp), t}))), 14 + 20 + 6)},
        {"vlan_v6_hbh_udp", ether(0x86dd, ipv6(kHopByHop, a6, b6, cat({ext6(kUdp), u})), kMacB, kMacA, {{0x8100, 100}})},
        {"v6_jumbo_dst_udp", ether(0x86dd, ipv6(kDstOpts, a6, b6, cat({ext6(kUdp, 4), udp(1, 2, pattern(8000))})))},
    };
}

std::vector<std::string> protochain_expressions()
{
    return {"ip protochain 6",  "ip protochain 17",  "ip protochain 51",  "ip protochain 41", "ip6 protochain 17",
            "ip6 protochain 6", "ip6 protochain 58", "ip6 protochain 4",  "ip6 protochain 41", "ip6 protochain 47",
            "ip6 protochain 44", "ip6 protochain 59", "ip6 protochain 60", "protochain 17",    "protochain 6",
            "not ip6 protochain 17", "ip6 protochain 17 and udp port 2000", "vlan and ip6 protochain 17",
            "ip protochain 6 or ip6 protochain 6 or ip6 protochain 17"};
}

} // namespace

// libpcap's interpreter follows the chain without a bound: within the bound
// the translation must agree with it everywhere.
TEST(FilterProtochain, AgreesWithLibpcapWithinTheBound)
{
    auto frames = chain_frames();
    for (NamedFrame& f : frame_corpus())
        frames.push_back(std::move(f));
    const std::vector<size_t> splits = {14, 60, 64, 100};
    size_t compared = 0, kept = 0;
    for (const std::string& expr : protochain_expressions()) {
        const ClassicProgram classic = compile_filter(expr);
        for (const auto& target : {kXdpMulti, kXdpLinear, kTcEgress}) {
            const auto program = translate_filter(classic.instructions(), target);
            const test::HookContext context{.hook = target.context};
            for (const NamedFrame& frame : frames) {
                const bool expected = classic.run(frame.bytes) != 0;
                const std::span<const uint8_t> bytes(frame.bytes);
                for (size_t split : splits) {
                    if (split > bytes.size())
                        split = bytes.size();
                    // Without multi_buffer the fragments are out of reach.
                    const bool judge = target.context != FilterContext::Xdp || target.multi_buffer || split == bytes.size();
                    try {
                        const uint32_t got = test::run_ebpf(program, bytes.first(split), bytes.subspan(split), context);
                        if (judge) {
                            ++compared;
                            kept += expected;
                            EXPECT_EQ(got != 0, expected) << expr << " at " << hook_label(target) << " on " << frame.name
                                                          << " split " << split;
                        }
                    } catch (const test::InterpError& e) {
                        ADD_FAILURE() << expr << " at " << hook_label(target) << " on " << frame.name << ": " << e.what();
                    }
                }
            }
        }
    }
    std::printf("[          ] %zu protochain verdicts compared with libpcap, %zu keep\n", compared, kept);
    EXPECT_GT(kept, 100u);
}

// The chain is followed as far as the frame goes: 100 headers (libpcap's
// own ipv6_ext_headers case is of this kind) and 5000 (a 40 KB frame).
TEST(FilterProtochain, LongChainsAreFollowed)
{
    const Bytes u = udp(1000, 2000, pattern(16));
    for (const int headers : {17, 100, 5000}) {
        const Bytes frame = ether(0x86dd, ipv6(kDstOpts, "2001:db8::1", "2001:db8::2", dst_chain(headers, u)));
        for (const char* expr : {"ip6 protochain 17", "not ip6 protochain 17", "ip6 protochain 6", "protochain 17"}) {
            const ClassicProgram classic = compile_filter(expr);
            for (const auto& target : {kXdpMulti, kXdpLinear, kTcEgress}) {
                const auto program = translate_filter(classic.instructions(), target);
                test::EbpfInterp run(program, frame, {}, test::HookContext{.hook = target.context});
                EXPECT_EQ(run.run() != 0, classic.run(frame) != 0) << expr << " over " << headers << " headers";
                EXPECT_GE(run.loop_turns(), static_cast<size_t>(headers)) << expr << ": one turn per header";
            }
        }
        EXPECT_NE(compile_filter("ip6 protochain 17").run(frame), 0u);
    }
}

TEST(FilterProtochain, EndlessLoopsRunOutOfTurns)
{
    // libpcap 1.10.3 steps over AH with X = (length + 2) * 4, not X += ...:
    // when that lands on the same AH again (here a 24-byte IPv4 header and a
    // 24-byte AH) its interpreter never returns. The translation runs the
    // same code until bpf_loop() runs out of turns, and rejects.
    const Bytes u = udp(1000, 2000, pattern(16));
    const Bytes ah_loop = ether(0x0800, ipv4(kAh, "198.18.0.1", "198.18.0.2", cat({ah(kAh), ah(kUdp), u}), {.option_words = 1}));
    for (const auto& target : {kXdpMulti, kXdpLinear, kTcEgress}) {
        const test::HookContext context{.hook = target.context};
        for (const char* expr : {"ip protochain 17", "not ip protochain 17"}) {
            const auto program = translate_filter(compile_filter(expr).instructions(), target);
            test::EbpfInterp run(program, ah_loop, {}, context);
            EXPECT_EQ(run.run(), 0u) << expr;
            EXPECT_EQ(run.loop_turns(), 1u << 16) << expr;
        }
    }
    // A hand-written loop that never ends, likewise.
    const std::vector<sock_filter> spin = {BPF_STMT(BPF_LD | BPF_IMM, 1), BPF_STMT(BPF_JMP | BPF_JA, 0xffffffff)};
    EXPECT_EQ(test::run_ebpf(translate_filter(spin, kXdpMulti), pattern(64)), 0u);
    const std::vector<sock_filter> before_start = {BPF_STMT(BPF_JMP | BPF_JA, 0xfffffffe), BPF_STMT(BPF_RET | BPF_K, 1)};
    EXPECT_THROW(translate_filter(before_start, kXdpMulti), Error);
}

// A loop entered in its middle cannot be a callback (libpcap emits none):
// it is counted, and rejects the packet after kProtochainMaxHeaders turns.
TEST(FilterProtochain, LoopEnteredInTheMiddleIsCounted)
{
    const auto loop = [](uint32_t limit) {
        return std::vector<sock_filter>{
            BPF_STMT(BPF_LD | BPF_IMM, 0),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), // into the middle
            BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 1),       // the head
            BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 1),
            BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, limit, 1, 0),
            BPF_STMT(BPF_JMP | BPF_JA, static_cast<uint32_t>(-4)),
            BPF_STMT(BPF_RET | BPF_A, 0),
        };
    };
    // Two per turn from 1: past 20 after 10 turns, past 40 after 20.
    for (const auto& target : {kXdpMulti, kTcEgress}) {
        const test::HookContext context{.hook = target.context};
        const auto within = translate_filter(loop(20), target);
        const auto beyond = translate_filter(loop(40), target);
        EXPECT_EQ(test::run_ebpf(within, pattern(64), {}, context), 21u);
        EXPECT_EQ(test::run_ebpf(beyond, pattern(64), {}, context), 0u);
        EXPECT_EQ(std::count_if(within.begin(), within.end(),
                                [](const bpf_insn& i) { return i.code == (BPF_JMP | BPF_CALL) && i.imm == BPF_FUNC_loop; }),
                  0);
    }
}

TEST(Filter, UnknownOpcodeIsNamed)
{
    const std::vector<sock_filter> program = {
        BPF_STMT(BPF_LD | BPF_IMM, 1),
        {0x0f, 0, 0, 0},
        BPF_STMT(BPF_RET | BPF_A, 0),
    };
    try {
        translate_filter(program, kXdpLinear);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "classic BPF instruction 0x0f at 1 is not supported in the kernel");
    }
    const std::vector<sock_filter> runs_off = {BPF_STMT(BPF_LD | BPF_IMM, 1)};
    EXPECT_THROW(translate_filter(runs_off, kXdpLinear), Error);
    const std::vector<sock_filter> jumps_out = {BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 5), BPF_STMT(BPF_RET | BPF_K, 0)};
    EXPECT_THROW(translate_filter(jumps_out, kXdpLinear), Error);
}

// Classic programs libpcap never emits, with the results libpcap 1.10.3's
// bpf_filter() gives (checked with pcap_offline_filter on this machine).
TEST(Filter, HandWrittenCorners)
{
    const Bytes frame = pattern(64);
    const auto run = [&](const std::vector<sock_filter>& program) {
        const auto linear = test::run_ebpf(translate_filter(program, kXdpLinear), frame);
        EXPECT_EQ(linear, test::run_ebpf(translate_filter(program, kXdpMulti), frame));
        EXPECT_EQ(linear, test::run_ebpf(translate_filter(program, kTcEgress), frame, {},
                                         test::HookContext{.hook = FilterContext::TcEgress}));
        return linear;
    };
    // Shifts by X >= 32 give 0 and the program carries on.
    EXPECT_EQ(run({BPF_STMT(BPF_LD | BPF_IMM, 0x80000001), BPF_STMT(BPF_LDX | BPF_IMM, 40),
                   BPF_STMT(BPF_ALU | BPF_LSH | BPF_X, 0), BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 5),
                   BPF_STMT(BPF_RET | BPF_A, 0)}),
              5u);
    EXPECT_EQ(run({BPF_STMT(BPF_LD | BPF_IMM, 0x80000001), BPF_STMT(BPF_LDX | BPF_IMM, 32),
                   BPF_STMT(BPF_ALU | BPF_RSH | BPF_X, 0), BPF_STMT(BPF_RET | BPF_A, 0)}),
              0u);
    EXPECT_EQ(run({BPF_STMT(BPF_LD | BPF_IMM, 0x80000001), BPF_STMT(BPF_LDX | BPF_IMM, 31),
                   BPF_STMT(BPF_ALU | BPF_RSH | BPF_X, 0), BPF_STMT(BPF_RET | BPF_A, 0)}),
              1u);
    // Constant shifts of 32 or more (libpcap refuses to compile them) give 0 too.
    EXPECT_EQ(run({BPF_STMT(BPF_LD | BPF_IMM, 7), BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 32),
                   BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 9), BPF_STMT(BPF_RET | BPF_A, 0)}),
              9u);
    // Division or modulo by zero rejects, by X or by a constant.
    for (uint16_t op : {BPF_DIV, BPF_MOD}) {
        EXPECT_EQ(run({BPF_STMT(BPF_LD | BPF_IMM, 7), BPF_STMT(BPF_ALU | op | BPF_X, 0), BPF_STMT(BPF_RET | BPF_K, 1)}), 0u);
        EXPECT_EQ(run({BPF_STMT(BPF_LD | BPF_IMM, 7), BPF_STMT(BPF_ALU | op | BPF_K, 0), BPF_STMT(BPF_RET | BPF_K, 1)}), 0u);
    }
    EXPECT_EQ(run({BPF_STMT(BPF_LD | BPF_IMM, 7), BPF_STMT(BPF_LDX | BPF_IMM, 2), BPF_STMT(BPF_ALU | BPF_MOD | BPF_X, 0),
                   BPF_STMT(BPF_RET | BPF_A, 0)}),
              1u);
    // RET A returns A; RET K only says keep or drop.
    EXPECT_EQ(run({BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0), BPF_STMT(BPF_MISC | BPF_TAX, 0),
                   BPF_STMT(BPF_LD | BPF_IMM, 0), BPF_STMT(BPF_MISC | BPF_TXA, 0), BPF_STMT(BPF_RET | BPF_A, 0)}),
              64u);
    EXPECT_EQ(run({BPF_STMT(BPF_RET | BPF_K, 262144)}), 1u);
    // Scratch memory starts zeroed; forward JA skips.
    EXPECT_EQ(run({BPF_STMT(BPF_LDX | BPF_MEM, 15), BPF_STMT(BPF_JMP | BPF_JA, 1), BPF_STMT(BPF_RET | BPF_K, 1),
                   BPF_STMT(BPF_MISC | BPF_TXA, 0), BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 3), BPF_STMT(BPF_ALU | BPF_NEG, 0),
                   BPF_STMT(BPF_RET | BPF_A, 0)}),
              0xfffffffdu);
    // Unreachable classic code is left out (the verifier refuses dead code).
    EXPECT_EQ(run({BPF_STMT(BPF_RET | BPF_K, 0), BPF_STMT(BPF_RET | BPF_K, 1)}), 0u);
    EXPECT_EQ(translate_filter(std::vector<sock_filter>{BPF_STMT(BPF_RET | BPF_K, 0), BPF_STMT(BPF_RET | BPF_K, 1)}, kXdpMulti).size(), 5u);
}

TEST(Filter, WithoutMultiBufferFragmentsAreOutOfReach)
{
    const ClassicProgram classic = compile_filter("ether[100] = 0x55");
    Bytes frame(200, 0);
    frame[100] = 0x55;
    const std::span<const uint8_t> bytes(frame);
    EXPECT_NE(classic.run(frame), 0u);
    EXPECT_NE(test::run_ebpf(translate_filter(classic.instructions(), kXdpMulti), bytes.first(64), bytes.subspan(64)), 0u);
    EXPECT_EQ(test::run_ebpf(translate_filter(classic.instructions(), kXdpLinear), bytes.first(64), bytes.subspan(64)), 0u);
}

// A drop's direction comes from the view: sent frames are PACKET_OUTGOING,
// received ones are judged by their destination MAC as at XDP.
TEST(FilterDrop, DirectionFromTheView)
{
    Bytes frame = ether(0x0800, ipv4(17, "198.18.0.1", "198.18.0.2", udp(1, 9, pattern(8))));
    const auto run = [&](const char* expr, uint32_t pkt_type) {
        test::HookContext context{.hook = FilterContext::Drop};
        context.drop_view_map_fd = kDropViewFd;
        context.pkt_type = pkt_type;
        return test::run_ebpf(translate_filter(compile_filter(expr).instructions(), kDrop), frame, {}, context);
    };
    constexpr uint32_t kHost = 0, kOutgoing = 4;
    EXPECT_NE(run("inbound", kHost), 0u);
    EXPECT_EQ(run("inbound", kOutgoing), 0u);
    EXPECT_NE(run("outbound", kOutgoing), 0u);
    EXPECT_EQ(run("outbound", kHost), 0u);
    EXPECT_NE(run("outbound and udp port 9", kOutgoing), 0u);
}

// Trace mode reads the linear data with bpf_probe_read_kernel(); the length
// is the whole frame's, as the sample's original length.
TEST(FilterTrace, LinearDataAndWholeLength)
{
    const test::HookContext traced{.hook = FilterContext::Trace};
    Bytes frame(200, 0);
    frame[60] = 0x55;
    frame[100] = 0x55;
    const std::span<const uint8_t> bytes(frame);
    const auto run = [&](const char* expr, size_t linear) {
        const auto program = translate_filter(compile_filter(expr).instructions(), kTrace);
        return test::run_ebpf(program, bytes.first(linear), bytes.subspan(linear), traced);
    };
    EXPECT_NE(run("ether[60] = 0x55", 64), 0u);
    EXPECT_NE(run("ether[100] = 0x55", 200), 0u);
    EXPECT_EQ(run("ether[100] = 0x55", 64), 0u); // in a fragment: out of reach, rejected
    EXPECT_EQ(run("ether[60:4] = 0x55000000", 62), 0u); // straddles the end of the linear data
    EXPECT_NE(run("len = 200", 64), 0u);
    EXPECT_NE(run("greater 150", 64), 0u);
    EXPECT_EQ(run("less 150", 64), 0u);
    EXPECT_EQ(run("ether[199] = 0", 0), 0u);
    // Indexed loads far past the frame, and u32 offsets near the top.
    EXPECT_EQ(run("ether[ether[60] * 1000] = 0", 200), 0u);
    const std::vector<sock_filter> huge = {BPF_STMT(BPF_LDX | BPF_IMM, 0xffffffffu),
                                           BPF_STMT(BPF_LD | BPF_W | BPF_IND, 0xfffffff0u),
                                           BPF_STMT(BPF_RET | BPF_K, 1)};
    EXPECT_EQ(test::run_ebpf(translate_filter(huge, kTrace), frame, {}, traced), 0u);
    const std::string text = dump_ebpf(translate_filter(compile_filter("udp port 9").instructions(), kTrace));
    EXPECT_NE(text.find("call bpf_probe_read_kernel"), std::string::npos) << text;
    EXPECT_EQ(text.find("bpf_xdp_load_bytes"), std::string::npos) << text;
}

TEST(Filter, DumpClassicMatchesTcpdump)
{
    // `tcpdump -d 'tcp port 80'` (Ethernet) with tcpdump 4.99 / libpcap 1.10.3.
    const std::string expected = "(000) ldh      [12]\n"
                                 "(001) jeq      #0x86dd          jt 2\tjf 8\n"
                                 "(002) ldb      [20]\n"
                                 "(003) jeq      #0x6             jt 4\tjf 19\n"
                                 "(004) ldh      [54]\n"
                                 "(005) jeq      #0x50            jt 18\tjf 6\n"
                                 "(006) ldh      [56]\n"
                                 "(007) jeq      #0x50            jt 18\tjf 19\n"
                                 "(008) jeq      #0x800           jt 9\tjf 19\n"
                                 "(009) ldb      [23]\n"
                                 "(010) jeq      #0x6             jt 11\tjf 19\n"
                                 "(011) ldh      [20]\n"
                                 "(012) jset     #0x1fff          jt 19\tjf 13\n"
                                 "(013) ldxb     4*([14]&0xf)\n"
                                 "(014) ldh      [x + 14]\n"
                                 "(015) jeq      #0x50            jt 18\tjf 16\n"
                                 "(016) ldh      [x + 16]\n"
                                 "(017) jeq      #0x50            jt 18\tjf 19\n"
                                 "(018) ret      #262144\n"
                                 "(019) ret      #0\n";
    EXPECT_EQ(dump_classic(compile_filter("tcp port 80")), expected);
}

TEST(Filter, DumpEbpfOneLinePerInstruction)
{
    const ClassicProgram classic = compile_filter("len > 100 and (vlan or ip[2:2] / (ip[8] & 3) > 2) and ether[len - 1] = 1");
    for (bool multi_buffer : {false, true}) {
        const auto program = translate_filter(classic.instructions(), FilterTarget{FilterContext::Xdp, multi_buffer});
        const std::string text = dump_ebpf(program);
        std::istringstream lines(text);
        std::string line;
        size_t n = 0;
        while (std::getline(lines, line)) {
            char prefix[16];
            std::snprintf(prefix, sizeof prefix, "(%03zu) ", n);
            EXPECT_EQ(line.rfind(prefix, 0), 0u) << line;
            EXPECT_EQ(line.find("unknown"), std::string::npos) << line;
            ++n;
        }
        EXPECT_EQ(n, program.size());
        EXPECT_NE(text.find("exit"), std::string::npos);
        EXPECT_NE(text.find(multi_buffer ? "call bpf_xdp_load_bytes" : "*(u32 *)(r6 + 4)"), std::string::npos) << text;
    }
}

namespace {

// Verdicts of a program on every frame of the corpus, whole and linear.
std::vector<bool> verdicts(const std::vector<bpf_insn>& program, const test::HookContext& context)
{
    std::vector<bool> out;
    for (const NamedFrame& frame : frame_corpus())
        out.push_back(test::run_ebpf(program, frame.bytes, {}, context) != 0);
    return out;
}

std::vector<bool> libpcap_verdicts(const std::string& expression)
{
    const ClassicProgram classic = compile_filter(expression);
    std::vector<bool> out;
    for (const NamedFrame& frame : frame_corpus())
        out.push_back(classic.run(frame.bytes) != 0);
    return out;
}

const test::HookContext kAtXdp{};
const test::HookContext kAtEgress{.hook = FilterContext::TcEgress};
const test::HookContext kAtIngress{.hook = FilterContext::TcIngress};
const FilterTarget kTcIngress{FilterContext::TcIngress};
const test::HookContext kAtTrace{.hook = FilterContext::Trace};

std::string error_of(const std::vector<sock_filter>& program, const FilterTarget& target)
{
    try {
        translate_filter(program, target);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

constexpr uint32_t ad(uint32_t field) { return static_cast<uint32_t>(SKF_AD_OFF) + field; }

// ld [ancillary]; ret A
std::vector<sock_filter> load_and_return(uint32_t k, uint16_t size = BPF_W)
{
    return {BPF_STMT(static_cast<uint16_t>(BPF_LD | size | BPF_ABS), k), BPF_STMT(BPF_RET | BPF_A, 0)};
}

} // namespace

// pcap_offline_filter cannot run ancillary loads (it reads them as offsets
// past the frame and rejects), so these verdicts are worked out by hand.
TEST(FilterAncillary, InboundOutboundByHook)
{
    const size_t n = frame_corpus().size();
    const std::vector<bool> all(n, true), none(n, false);
    for (const char* keeps_rx : {"inbound", "not outbound"}) {
        const ClassicProgram classic = compile_filter(keeps_rx);
        EXPECT_EQ(verdicts(translate_filter(classic.instructions(), kXdpMulti), kAtXdp), all) << keeps_rx;
        EXPECT_EQ(verdicts(translate_filter(classic.instructions(), kXdpLinear), kAtXdp), all) << keeps_rx;
        EXPECT_EQ(verdicts(translate_filter(classic.instructions(), kTrace), kAtTrace), all) << keeps_rx;
        EXPECT_EQ(verdicts(translate_filter(classic.instructions(), kTcEgress), kAtEgress), none) << keeps_rx;
    }
    for (const char* keeps_tx : {"outbound", "not inbound"}) {
        const ClassicProgram classic = compile_filter(keeps_tx);
        EXPECT_EQ(verdicts(translate_filter(classic.instructions(), kXdpMulti), kAtXdp), none) << keeps_tx;
        EXPECT_EQ(verdicts(translate_filter(classic.instructions(), kTrace), kAtTrace), none) << keeps_tx;
        EXPECT_EQ(verdicts(translate_filter(classic.instructions(), kTcEgress), kAtEgress), all) << keeps_tx;
    }
    // Combined with packet tests: the direction test just gates them.
    const auto tcp = libpcap_verdicts("tcp");
    const ClassicProgram in_tcp = compile_filter("inbound and tcp");
    const ClassicProgram out_tcp = compile_filter("tcp and outbound");
    EXPECT_EQ(verdicts(translate_filter(in_tcp.instructions(), kXdpMulti), kAtXdp), tcp);
    EXPECT_EQ(verdicts(translate_filter(in_tcp.instructions(), kTrace), kAtTrace), tcp);
    EXPECT_EQ(verdicts(translate_filter(in_tcp.instructions(), kTcEgress), kAtEgress), none);
    EXPECT_EQ(verdicts(translate_filter(out_tcp.instructions(), kXdpMulti), kAtXdp), none);
    EXPECT_EQ(verdicts(translate_filter(out_tcp.instructions(), kTcEgress), kAtEgress), tcp);
    // libpcap reads PACKET_OUTGOING with a halfword load at SKF_AD_PKTTYPE.
    EXPECT_NE(dump_classic(compile_filter("inbound")).find("[type]"), std::string::npos);
}

// tc ingress reads the packet type the stack gave the frame: every received
// one is inbound, whatever its destination.
TEST(FilterAncillary, InboundOutboundAtTcIngress)
{
    const size_t n = frame_corpus().size();
    const std::vector<bool> all(n, true), none(n, false);
    for (uint32_t pkt_type : {0u, 1u, 2u, 3u}) { // host, broadcast, multicast, otherhost
        test::HookContext context = kAtIngress;
        context.pkt_type = pkt_type;
        EXPECT_EQ(verdicts(translate_filter(compile_filter("inbound").instructions(), kTcIngress), context), all)
            << pkt_type;
        EXPECT_EQ(verdicts(translate_filter(compile_filter("outbound").instructions(), kTcIngress), context), none)
            << pkt_type;
        EXPECT_EQ(test::run_ebpf(translate_filter(load_and_return(ad(SKF_AD_PKTTYPE), BPF_H), kTcIngress),
                                 pattern(64), {}, context),
                  pkt_type);
    }
    EXPECT_EQ(verdicts(translate_filter(compile_filter("inbound and tcp").instructions(), kTcIngress), kAtIngress),
              libpcap_verdicts("tcp"));
}

// The packet filters at tc ingress keep what libpcap keeps, whole frames and
// frames whose bytes past the first come from the paged part.
TEST(FilterTcIngress, AgreesWithLibpcap)
{
    for (const char* expr : {"udp", "tcp port 80", "ip6", "vlan 100", "not arp", "ip[9] = 17 and len > 100"}) {
        const ClassicProgram classic = compile_filter(expr);
        const auto program = translate_filter(classic.instructions(), kTcIngress);
        EXPECT_EQ(verdicts(program, kAtIngress), libpcap_verdicts(expr)) << expr;
        // Only the Ethernet header linear, as in a GRO super-frame.
        for (const NamedFrame& frame : frame_corpus()) {
            const std::span<const uint8_t> bytes(frame.bytes);
            const size_t linear = std::min<size_t>(14, bytes.size());
            EXPECT_EQ(test::run_ebpf(program, bytes.first(linear), bytes.subspan(linear), kAtIngress) != 0,
                      classic.run(frame.bytes) != 0)
                << expr << " " << frame.name;
        }
    }
}

TEST(FilterAncillary, PacketTypeFromDestinationAtXdp)
{
    const auto program = translate_filter(load_and_return(ad(SKF_AD_PKTTYPE), BPF_H), kXdpMulti);
    const auto egress = translate_filter(load_and_return(ad(SKF_AD_PKTTYPE), BPF_H), kTcEgress);
    const auto traced = translate_filter(load_and_return(ad(SKF_AD_PKTTYPE), BPF_H), kTrace);
    for (const NamedFrame& frame : frame_corpus()) {
        uint32_t expected = 0; // PACKET_HOST
        if (frame.bytes.size() >= 1 && (frame.bytes[0] & 1))
            expected = frame.bytes.size() >= 6 && std::all_of(frame.bytes.begin(), frame.bytes.begin() + 6,
                                                               [](uint8_t b) { return b == 0xff; })
                ? 1  // PACKET_BROADCAST
                : 2; // PACKET_MULTICAST
        EXPECT_EQ(test::run_ebpf(program, frame.bytes, {}, kAtXdp), expected) << frame.name;
        // Split after one byte: the rest comes from the fragments.
        const std::span<const uint8_t> bytes(frame.bytes);
        EXPECT_EQ(test::run_ebpf(program, bytes.first(1), bytes.subspan(1), kAtXdp), expected) << frame.name;
        EXPECT_EQ(test::run_ebpf(traced, frame.bytes, {}, kAtTrace), expected) << frame.name;
        EXPECT_EQ(test::run_ebpf(egress, frame.bytes, {}, kAtEgress), 4u) << frame.name; // PACKET_OUTGOING
    }
    const Bytes multicast_runt = {0x01, 0x00, 0x5e};
    EXPECT_EQ(test::run_ebpf(program, multicast_runt, {}, kAtXdp), 2u);
}

TEST(FilterAncillary, IfindexIsTheHooksDevice)
{
    const auto all = std::vector<bool>(frame_corpus().size(), true);
    const auto none = std::vector<bool>(all.size(), false);
    const ClassicProgram seven = compile_filter("ifindex 7");
    const ClassicProgram eight = compile_filter("ifindex 8");
    for (const auto& [target, context] : {std::pair{kXdpMulti, kAtXdp}, std::pair{kTcEgress, kAtEgress}}) {
        EXPECT_EQ(verdicts(translate_filter(seven.instructions(), target), context), all);
        EXPECT_EQ(verdicts(translate_filter(eight.instructions(), target), context), none);
        EXPECT_EQ(verdicts(translate_filter(compile_filter("ifindex 7 and udp").instructions(), target), context),
                  libpcap_verdicts("udp"));
    }
    // Trace mode has no device to ask: refused, naming the keyword.
    const std::string message =
        error_of(std::vector<sock_filter>(seven.instructions().begin(), seven.instructions().end()), kTrace);
    EXPECT_NE(message.find("'ifindex' (SKF_AD_IFINDEX)"), std::string::npos) << message;
    EXPECT_NE(message.find("trace mode (fentry/fexit) programs do not have"), std::string::npos) << message;
}

TEST(FilterAncillary, SkbFieldsAtEgressRefusedAtXdp)
{
    test::HookContext skb = kAtEgress;
    skb.protocol = 0x86dd;
    skb.mark = 0xdeadbeef;
    skb.queue_mapping = 3;
    skb.hash = 0x12345678;
    skb.vlan_present = true;
    skb.vlan_tci = 0x2064;
    skb.vlan_proto = 0x88a8;
    const Bytes frame = pattern(64);
    const std::vector<std::pair<uint32_t, uint32_t>> fields = {
        {SKF_AD_PROTOCOL, 0x86dd}, {SKF_AD_MARK, 0xdeadbeef}, {SKF_AD_QUEUE, 3}, {SKF_AD_RXHASH, 0x12345678},
    };
    for (const auto& [field, value] : fields) {
        EXPECT_EQ(test::run_ebpf(translate_filter(load_and_return(ad(field)), kTcEgress), frame, {}, skb), value) << field;
        const std::string message = error_of(load_and_return(ad(field)), kXdpMulti);
        EXPECT_NE(message.find("SKF_AD_"), std::string::npos) << message;
        EXPECT_NE(message.find("XDP programs do not have"), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos);
        const std::string traced = error_of(load_and_return(ad(field)), kTrace);
        EXPECT_NE(traced.find("trace mode (fentry/fexit) programs do not have"), std::string::npos) << traced;
    }
    // Computed without the ctx at either hook.
    for (const auto& [target, context] :
         {std::pair{kXdpMulti, kAtXdp}, std::pair{kTcEgress, skb}, std::pair{kTrace, kAtTrace}}) {
        EXPECT_EQ(test::run_ebpf(translate_filter(load_and_return(ad(SKF_AD_CPU)), target), frame, {}, context), 1u);
        EXPECT_EQ(test::run_ebpf(translate_filter(load_and_return(ad(SKF_AD_RANDOM)), target), frame, {}, context),
                  0x2545f491u);
        const std::vector<sock_filter> xor_x = {BPF_STMT(BPF_LD | BPF_IMM, 0xf0f0), BPF_STMT(BPF_LDX | BPF_IMM, 0xff),
                                                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ad(SKF_AD_ALU_XOR_X)),
                                                BPF_STMT(BPF_RET | BPF_A, 0)};
        EXPECT_EQ(test::run_ebpf(translate_filter(xor_x, target), frame, {}, context), 0xf00fu);
    }
}

TEST(FilterAncillary, UnsupportedAndUnknownAreErrors)
{
    for (const auto& target : {kXdpMulti, kXdpLinear, kTcEgress, kTrace}) {
        for (uint32_t field : {SKF_AD_NLATTR, SKF_AD_NLATTR_NEST, SKF_AD_HATYPE, SKF_AD_PAY_OFFSET}) {
            const std::string message = error_of(load_and_return(ad(field)), target);
            EXPECT_NE(message.find("SKF_AD_"), std::string::npos) << message;
            EXPECT_NE(message.find("not support"), std::string::npos) << message;
        }
        for (uint32_t field : {2u, 64u, 100u, 0xffcu}) {
            const std::string message = error_of(load_and_return(ad(field)), target);
            EXPECT_NE(message.find("no known SKF_AD_* field"), std::string::npos) << message;
        }
        // Link-layer and network-relative offsets, and MSH at special offsets.
        EXPECT_NE(error_of(load_and_return(static_cast<uint32_t>(SKF_NET_OFF) + 9, BPF_B), target).find("network header"),
                  std::string::npos);
        EXPECT_NE(error_of(load_and_return(static_cast<uint32_t>(SKF_LL_OFF), BPF_H), target).find("network header"),
                  std::string::npos);
        EXPECT_NE(error_of({BPF_STMT(BPF_LDX | BPF_MSH | BPF_B, ad(SKF_AD_PKTTYPE)), BPF_STMT(BPF_RET | BPF_K, 1)}, target)
                      .find("special offset"),
                  std::string::npos);
        // An indexed load stays a frame offset, as in libpcap's interpreter.
        EXPECT_NO_THROW(translate_filter(std::vector<sock_filter>{BPF_STMT(BPF_LD | BPF_B | BPF_IND, ad(SKF_AD_PKTTYPE)),
                                                                  BPF_STMT(BPF_RET | BPF_A, 0)},
                                         target));
    }
}

// What libpcap emits for `vlan 100` on a live Linux handle (tcpdump -d -i lo
// 'vlan 100', libpcap 1.10.3): metadata first, then the packet bytes. At XDP
// no tag is in metadata, so it must agree with the pcap_open_dead code.
TEST(FilterAncillary, LiveHandleVlanCodeAtXdp)
{
    const std::vector<sock_filter> live = {
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, ad(SKF_AD_VLAN_TAG_PRESENT)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 4, 0),
        BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x8100, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x88a8, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x9100, 0, 8),
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, ad(SKF_AD_VLAN_TAG_PRESENT)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 2),
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, ad(SKF_AD_VLAN_TAG)),
        BPF_STMT(BPF_JMP | BPF_JA, 1),
        BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 14),
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xfff),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 100, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, 262144),
        BPF_STMT(BPF_RET | BPF_K, 0),
    };
    EXPECT_EQ(verdicts(translate_filter(live, kXdpMulti), kAtXdp), libpcap_verdicts("vlan 100"));
    EXPECT_EQ(verdicts(translate_filter(live, kTcEgress), kAtEgress), libpcap_verdicts("vlan 100"));
    // With the tag in skb metadata the metadata answers.
    test::HookContext tagged = kAtEgress;
    tagged.vlan_present = true;
    tagged.vlan_tci = 100;
    tagged.vlan_proto = 0x8100;
    EXPECT_EQ(verdicts(translate_filter(live, kTcEgress), tagged), std::vector<bool>(frame_corpus().size(), true));
}

namespace {

// The translated body as a subprogram of a minimal program of the hook's
// type, as the loaders wrap it: r0 = filter(ctx) != 0.
class KernelFilter {
public:
    KernelFilter(const std::vector<bpf_insn>& body, const FilterTarget& target) : xdp_(target.context == FilterContext::Xdp)
    {
        std::vector<bpf_insn> prog = {
            make_insn(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 3),
            make_insn(BPF_JMP32 | BPF_JEQ | BPF_K, 0, 0, 1, 0),
            make_insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1),
            make_insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
        };
        prog.insert(prog.end(), body.begin(), body.end());
        log_.assign(1 << 20, '\0');
        bpf_prog_load_opts opts{};
        opts.sz = sizeof opts;
        opts.expected_attach_type = xdp_ ? BPF_XDP : BPF_CGROUP_INET_INGRESS;
        opts.prog_flags = xdp_ && target.multi_buffer ? BPF_F_XDP_HAS_FRAGS : 0;
        opts.log_level = 1;
        opts.log_size = static_cast<uint32_t>(log_.size());
        opts.log_buf = log_.data();
        if (!xdp_)
            opts.expected_attach_type = static_cast<bpf_attach_type>(0);
        const ProgramBtf btf(prog);
        btf.apply(opts);
        fd_ = bpf_prog_load(xdp_ ? BPF_PROG_TYPE_XDP : BPF_PROG_TYPE_SCHED_CLS, "filter_test", "GPL", prog.data(),
                            prog.size(), &opts);
        log_.resize(std::strlen(log_.c_str()));
    }
    ~KernelFilter()
    {
        if (fd_ >= 0)
            close(fd_);
    }
    KernelFilter(const KernelFilter&) = delete;
    KernelFilter& operator=(const KernelFilter&) = delete;

    bool loaded() const { return fd_ >= 0; }
    // The verifier's closing "processed N insns ..." line.
    std::string stats() const
    {
        const size_t at = log_.rfind("processed ");
        return at == std::string::npos ? "" : log_.substr(at, log_.find('\n', at) - at);
    }
    // The tail of the verifier log, which says why it refused.
    std::string why() const { return log_.size() > 600 ? log_.substr(log_.size() - 600) : log_; }

    // -1 when the kernel would not run it.
    int run(const Bytes& frame) const
    {
        bpf_test_run_opts opts{};
        opts.sz = sizeof opts;
        opts.data_in = frame.data();
        opts.data_size_in = static_cast<uint32_t>(frame.size());
        opts.repeat = 1;
        if (bpf_prog_test_run_opts(fd_, &opts) != 0)
            return -1;
        return static_cast<int>(opts.retval);
    }

private:
    bool xdp_;
    int fd_ = -1;
    std::string log_;
};

// BPF_PROG_TEST_RUN refuses frames shorter than an Ethernet header; skb runs
// take at most about a page, and longer XDP frames get fragments, which only a
// multi-buffer program reaches.
bool kernel_can_run(const Bytes& frame, const FilterTarget& target)
{
    return frame.size() >= 14 && (frame.size() <= 3000 || (target.context == FilterContext::Xdp && target.multi_buffer));
}

void expect_kernel_agrees(const std::string& expr, const std::vector<bool>& expected_in, const FilterTarget& target,
                          size_t& ran)
{
    const auto frames = frame_corpus();
    const ClassicProgram classic = compile_filter(expr);
    const KernelFilter prog(translate_filter(classic.instructions(), target), target);
    ASSERT_TRUE(prog.loaded()) << "'" << expr << "' at " << hook_label(target) << ": " << prog.why();
    for (size_t i = 0; i < frames.size(); ++i) {
        if (!kernel_can_run(frames[i].bytes, target))
            continue;
        const int got = prog.run(frames[i].bytes);
        // The skb test run refuses an IP frame too short for its header.
        if (got < 0 && errno == EINVAL && target.context == FilterContext::TcEgress && frames[i].bytes.size() < 14 + 40)
            continue;
        ASSERT_GE(got, 0) << "test run of '" << expr << "' on " << frames[i].name << ": " << std::strerror(errno);
        EXPECT_EQ(got != 0, expected_in[i]) << "'" << expr << "' at " << hook_label(target) << " on " << frames[i].name;
        ++ran;
    }
}

} // namespace

// The verifier of the running kernel must accept every translation, and the
// kernel's own run (BPF_PROG_TEST_RUN) must give libpcap's verdicts. Needs
// root (CI runs the unit tests as root).
TEST(FilterKernel, VerifierAcceptsAndVerdictsAgree)
{
    if (geteuid() != 0)
        GTEST_SKIP() << "needs root to load BPF programs";
    size_t ran = 0;
    for (const auto& target : {kXdpMulti, kXdpLinear, kTcEgress}) {
        for (const std::string& expr : expression_corpus())
            expect_kernel_agrees(expr, libpcap_verdicts(expr), target, ran);
    }
    // BPF_PROG_TEST_RUN runs on the loopback device.
    const auto all = std::vector<bool>(frame_corpus().size(), true);
    const auto none = std::vector<bool>(all.size(), false);
    const auto udp = libpcap_verdicts("udp");
    for (const auto& target : {kXdpMulti, kXdpLinear}) {
        expect_kernel_agrees("inbound", all, target, ran);
        expect_kernel_agrees("outbound", none, target, ran);
        expect_kernel_agrees("not outbound and udp", udp, target, ran);
        expect_kernel_agrees("ifindex 1", all, target, ran);
    }
    expect_kernel_agrees("inbound", none, kTcEgress, ran);
    expect_kernel_agrees("outbound", all, kTcEgress, ran);
    expect_kernel_agrees("not inbound and udp", udp, kTcEgress, ran);
    expect_kernel_agrees("ifindex 1 and udp", udp, kTcEgress, ran);
    std::printf("[          ] %zu kernel test runs agreed\n", ran);
}

// `ip broadcast` needs the netmask: unknown, libpcap's message; known, the
// translation agrees with libpcap at both hooks.
TEST(FilterNetmask, IpBroadcastNeedsTheNetmask)
{
    try {
        compile_filter("ip broadcast");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("netmask not known"), std::string::npos) << e.what();
    }
    auto frames = frame_corpus();
    const auto to = [](const char* dst, Mac mac) {
        return NamedFrame{std::string("ipv4_udp_to_") + dst,
                          ether(0x0800, ipv4(kUdp, "198.18.0.1", dst, udp(1, 2, pattern(8))), mac)};
    };
    frames.push_back(to("198.18.0.255", kBroadcast));
    frames.push_back(to("198.18.255.255", kBroadcast));
    frames.push_back(to("198.18.0.0", kMacB));
    frames.push_back(to("255.255.255.255", kBroadcast));
    frames.push_back(to("239.1.2.3", kMcast4));
    size_t kept = 0;
    for (uint32_t netmask : {0xffffff00u, 0xfffe0000u, 0xffff0000u, 0u}) {
        for (const char* expr : {"ip broadcast", "ip multicast", "ip broadcast or ip multicast", "not ip broadcast"}) {
            const ClassicProgram classic = compile_filter(expr, netmask);
            for (const auto& target : {kXdpMulti, kXdpLinear, kTcEgress}) {
                const auto program = translate_filter(classic.instructions(), target);
                const test::HookContext context{.hook = target.context};
                for (const NamedFrame& frame : frames) {
                    const bool expected = classic.run(frame.bytes) != 0;
                    kept += expected;
                    EXPECT_EQ(test::run_ebpf(program, frame.bytes, {}, context) != 0, expected)
                        << expr << " netmask " << std::hex << netmask << " on " << frame.name;
                }
            }
        }
    }
    EXPECT_GT(kept, 0u);
    // 198.18.0.255 is a broadcast in a /24 and not in a /15.
    const Bytes v24 = frames[frames.size() - 5].bytes;
    EXPECT_NE(compile_filter("ip broadcast", 0xffffff00).run(v24), 0u);
    EXPECT_EQ(compile_filter("ip broadcast", 0xfffe0000).run(v24), 0u);
}

TEST(FilterNetmask, FromTheInterface)
{
    // Loopback carries 127.0.0.1/8 here; a missing interface has none.
    EXPECT_EQ(interface_netmask("lo"), 0xff000000u);
    // Without an IPv4 address, netmask 0 as tcpdump: only 0.0.0.0 and
    // 255.255.255.255 are broadcasts.
    EXPECT_EQ(interface_netmask("xdpcap-none0"), 0u);
    const Bytes all_ones = ether(0x0800, ipv4(kUdp, "198.18.0.1", "255.255.255.255", udp(1, 2, pattern(8))), kBroadcast);
    const Bytes subnet = ether(0x0800, ipv4(kUdp, "198.18.0.1", "198.18.0.255", udp(1, 2, pattern(8))), kBroadcast);
    EXPECT_NE(compile_filter("ip broadcast", interface_netmask("xdpcap-none0")).run(all_ones), 0u);
    EXPECT_EQ(compile_filter("ip broadcast", interface_netmask("xdpcap-none0")).run(subnet), 0u);
    EXPECT_NE(compile_filter("ip broadcast", interface_netmask("lo")).instructions().size(), 0u);
}

// The bpf_loop() callbacks of `protochain` must pass the verifier and run as
// libpcap's interpreter does, long chains included.
TEST(FilterKernel, ProtochainLoops)
{
    if (geteuid() != 0)
        GTEST_SKIP() << "needs root to load BPF programs";
    const auto frames = chain_frames();
    size_t ran = 0;
    for (const auto& target : {kXdpMulti, kXdpLinear, kTcEgress}) {
        for (const std::string& expr : protochain_expressions()) {
            const ClassicProgram classic = compile_filter(expr);
            const auto program = translate_filter(classic.instructions(), target);
            const KernelFilter prog(program, target);
            ASSERT_TRUE(prog.loaded()) << "'" << expr << "' at " << hook_label(target) << ": " << prog.why();
            if (target.context == FilterContext::Xdp && target.multi_buffer)
                std::printf("[          ] %-55s %s\n", expr.c_str(), prog.stats().c_str());
            for (const NamedFrame& frame : frames) {
                if (!kernel_can_run(frame.bytes, target))
                    continue;
                const int got = prog.run(frame.bytes);
                if (got < 0 && errno == EINVAL && target.context == FilterContext::TcEgress && frame.bytes.size() < 14 + 40)
                    continue;
                ASSERT_GE(got, 0) << expr << " on " << frame.name << ": " << std::strerror(errno);
                EXPECT_EQ(got != 0, classic.run(frame.bytes) != 0)
                    << "'" << expr << "' at " << hook_label(target) << " on " << frame.name;
                ++ran;
            }
        }
    }
    std::printf("[          ] %zu kernel protochain runs agreed\n", ran);
}

namespace {

Bytes with_tag(const Bytes& frame, uint16_t tpid, uint16_t tci)
{
    Bytes wire(frame.begin(), frame.begin() + 12);
    Writer w;
    w.u16(tpid).u16(tci);
    const Bytes tag = w.take();
    wire.insert(wire.end(), tag.begin(), tag.end());
    wire.insert(wire.end(), frame.begin() + 12, frame.end());
    return wire;
}

} // namespace

// The two hooks where a tag may sit outside the frame: tc egress with TX
// VLAN offload (skb metadata), and XDP behind the device-bound program that
// reads the tag the NIC took out (rx_meta map). Each context says "tagged".
constexpr int kRxMetaFd = 42;
const FilterTarget kXdpRxMeta{FilterContext::Xdp, true, kRxMetaFd};

std::vector<std::pair<FilterTarget, test::HookContext>> tag_hooks(uint16_t tpid, uint16_t tci)
{
    test::HookContext egress = kAtEgress;
    test::HookContext xdp{.hook = FilterContext::Xdp};
    xdp.rx_meta_map_fd = kRxMetaFd;
    test::HookContext drop{.hook = FilterContext::Drop};
    drop.drop_view_map_fd = kDropViewFd;
    for (test::HookContext* c : {&egress, &xdp, &drop}) {
        c->vlan_present = true;
        c->vlan_proto = tpid;
        c->vlan_tci = tci;
    }
    return {{kTcEgress, egress}, {kXdpRxMeta, xdp}, {kDrop, drop}};
}

// The filter must judge the frame as it goes on the wire, i.e. as libpcap
// judges the frame with the tag inserted at offset 12; with the map but no
// tag in it, as the frame is.
TEST(FilterWireView, TagInMetadataSeenOnTheWire)
{
    auto expressions = expression_corpus();
    for (const std::string& e : protochain_expressions())
        expressions.push_back(e);
    auto frames = frame_corpus();
    for (NamedFrame& f : chain_frames())
        frames.push_back(std::move(f));
    const std::vector<std::pair<uint16_t, uint16_t>> tags = {{0x8100, 100}, {0x88a8, 0x2000 | 200}, {0x8100, 0xefff}};
    size_t compared = 0, kept = 0;
    for (const std::string& expr : expressions) {
        const ClassicProgram classic = compile_filter(expr);
        const auto egress = translate_filter(classic.instructions(), kTcEgress);
        const auto xdp = translate_filter(classic.instructions(), kXdpRxMeta);
        const auto dropped = translate_filter(classic.instructions(), kDrop);
        for (const NamedFrame& frame : frames) {
            if (frame.bytes.size() < 12)
                continue;
            const std::span<const uint8_t> bytes(frame.bytes);
            test::HookContext untagged{.hook = FilterContext::Xdp};
            untagged.rx_meta_map_fd = kRxMetaFd;
            EXPECT_EQ(test::run_ebpf(xdp, bytes, {}, untagged) != 0, classic.run(frame.bytes) != 0)
                << expr << " on " << frame.name << " at XDP with no tag in the map";
            for (const auto& [tpid, tci] : tags) {
                const Bytes wire = with_tag(frame.bytes, tpid, tci);
                const bool expected = classic.run(wire) != 0;
                for (const auto& [target, context] : tag_hooks(tpid, tci)) {
                    const auto& program = target.context == FilterContext::TcEgress ? egress
                        : target.context == FilterContext::Drop                     ? dropped
                                                                              : xdp;
                    for (size_t split : {size_t{14}, size_t{64}, bytes.size()}) {
                        split = std::min(split, bytes.size());
                        // A drop's filter reads the linear data only.
                        if (target.context == FilterContext::Drop && split != bytes.size())
                            continue;
                        try {
                            const uint32_t got =
                                test::run_ebpf(program, bytes.first(split), bytes.subspan(split), context);
                            ++compared;
                            kept += expected;
                            EXPECT_EQ(got != 0, expected)
                                << expr << " on " << frame.name << " tagged " << std::hex << tpid << "/" << tci
                                << std::dec << " split " << split << " hook " << static_cast<int>(target.context);
                        } catch (const test::InterpError& e) {
                            ADD_FAILURE() << expr << " on " << frame.name << ": " << e.what();
                        }
                    }
                }
            }
        }
    }
    std::printf("[          ] %zu wire-view verdicts compared with libpcap, %zu keep\n", compared, kept);
    EXPECT_GT(kept, 2000u);
}

// Every load width at every offset around the tag, constant and X-relative.
TEST(FilterWireView, LoadsAroundTheTag)
{
    const Bytes frame = pattern(40, 3);
    const Bytes wire = with_tag(frame, 0x88a8, 0xbeef);
    for (const auto& [target, context] : tag_hooks(0x88a8, 0xbeef)) {
    for (uint16_t size : {BPF_B, BPF_H, BPF_W}) {
        const size_t n = size == BPF_B ? 1 : size == BPF_H ? 2 : 4;
        for (uint32_t off = 0; off + n <= wire.size() + 2; ++off) {
            uint32_t expected = 0;
            bool inside = off + n <= wire.size();
            for (size_t i = 0; inside && i < n; ++i)
                expected = expected << 8 | wire[off + i];
            const std::vector<sock_filter> constant = {BPF_STMT(static_cast<uint16_t>(BPF_LD | size | BPF_ABS), off),
                                                       BPF_STMT(BPF_ALU | BPF_OR | BPF_K, 0x80000000u),
                                                       BPF_STMT(BPF_RET | BPF_A, 0)};
            const std::vector<sock_filter> indexed = {BPF_STMT(BPF_LDX | BPF_IMM, off > 5 ? off - 5 : 0),
                                                      BPF_STMT(static_cast<uint16_t>(BPF_LD | size | BPF_IND), off > 5 ? 5 : off),
                                                      BPF_STMT(BPF_ALU | BPF_OR | BPF_K, 0x80000000u),
                                                      BPF_STMT(BPF_RET | BPF_A, 0)};
            for (const auto& program : {constant, indexed}) {
                const auto ebpf = translate_filter(program, target);
                // A rejected load returns 0; a kept one has the top bit set.
                const uint32_t want = inside ? (expected | 0x80000000u) : 0u;
                const std::span<const uint8_t> bytes(frame);
                for (size_t split : {size_t{0}, size_t{11}, size_t{13}, frame.size()}) {
                    // A drop's filter reads the linear data only.
                    if (target.context == FilterContext::Drop && split != frame.size())
                        continue;
                    EXPECT_EQ(test::run_ebpf(ebpf, bytes.first(split), bytes.subspan(split), context), want)
                        << "size " << n << " offset " << off << " split " << split;
                }
            }
        }
    }
    // The length includes the tag.
    const std::vector<sock_filter> len = {BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0), BPF_STMT(BPF_RET | BPF_A, 0)};
    EXPECT_EQ(test::run_ebpf(translate_filter(len, target), frame, {}, context), wire.size());
    test::HookContext untagged = context;
    untagged.vlan_present = false;
    EXPECT_EQ(test::run_ebpf(translate_filter(len, target), frame, {}, untagged), frame.size());
    }
}

TEST(FilterDisasm, CallbackReferenceAndLoopAreNamed)
{
    const std::string text = dump_ebpf(translate_filter(compile_filter("ip6 protochain 17").instructions(), kXdpMulti));
    EXPECT_EQ(text.find("unknown"), std::string::npos) << text;
    EXPECT_NE(text.find(" = callback +"), std::string::npos) << text;
    EXPECT_NE(text.find("call bpf_loop#181"), std::string::npos) << text;
}
