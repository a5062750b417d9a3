#include "filter/compile.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pcap/pcap.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#include "base/error.hpp"

namespace xdpcap {

static_assert(sizeof(sock_filter) == sizeof(bpf_insn));
static_assert(offsetof(sock_filter, code) == offsetof(bpf_insn, code));
static_assert(offsetof(sock_filter, jt) == offsetof(bpf_insn, jt));
static_assert(offsetof(sock_filter, jf) == offsetof(bpf_insn, jf));
static_assert(offsetof(sock_filter, k) == offsetof(bpf_insn, k));

struct ClassicProgram::Native {
    bpf_program program{};
    // A copy in the kernel's spelling, so no cast between the two types is needed.
    std::vector<sock_filter> instructions;

    Native() = default;
    Native(const Native&) = delete;
    Native& operator=(const Native&) = delete;
    ~Native() { pcap_freecode(&program); }
};

namespace {

struct PcapCloser {
    void operator()(pcap_t* p) const noexcept { pcap_close(p); }
};

// libpcap messages are single lines already; be sure, since ours must be.
std::string one_line(std::string text)
{
    for (char& c : text)
        if (c == '\n' || c == '\r')
            c = ' ';
    while (!text.empty() && text.back() == ' ')
        text.pop_back();
    return text;
}

} // namespace

ClassicProgram::ClassicProgram(std::unique_ptr<Native> native) : native_(std::move(native)) {}
ClassicProgram::ClassicProgram(ClassicProgram&&) noexcept = default;
ClassicProgram& ClassicProgram::operator=(ClassicProgram&&) noexcept = default;
ClassicProgram::~ClassicProgram() = default;

std::span<const sock_filter> ClassicProgram::instructions() const noexcept
{
    return native_->instructions;
}

uint32_t ClassicProgram::run(std::span<const uint8_t> frame) const
{
    return run(frame, static_cast<uint32_t>(frame.size()));
}

uint32_t ClassicProgram::run(std::span<const uint8_t> captured, uint32_t wire_length) const
{
    pcap_pkthdr header{};
    header.caplen = static_cast<bpf_u_int32>(captured.size());
    header.len = std::max(wire_length, header.caplen);
    return static_cast<uint32_t>(pcap_offline_filter(&native_->program, &header, captured.data()));
}

namespace {

// libpcap's `ldh [type]`: the socket filter extension for skb->pkt_type.
bool loads_packet_type(const sock_filter& f) noexcept
{
    return BPF_CLASS(f.code) == BPF_LD && BPF_MODE(f.code) == BPF_ABS &&
        f.k == static_cast<uint32_t>(SKF_AD_OFF + SKF_AD_PKTTYPE);
}

} // namespace

bool ClassicProgram::reads_packet_type() const noexcept
{
    return std::ranges::any_of(native_->instructions, loads_packet_type);
}

ClassicProgram ClassicProgram::with_packet_type(uint32_t packet_type) const
{
    auto native = std::make_unique<Native>();
    native->instructions = native_->instructions;
    for (sock_filter& f : native->instructions)
        if (loads_packet_type(f))
            f = sock_filter{static_cast<uint16_t>(BPF_LD | BPF_IMM), 0, 0, packet_type};
    // pcap_freecode() frees the instructions with free().
    const size_t n = native->instructions.size();
    auto* insns = static_cast<bpf_insn*>(std::malloc(n * sizeof(bpf_insn)));
    if (!insns)
        throw std::bad_alloc();
    for (size_t i = 0; i < n; ++i) {
        const sock_filter& f = native->instructions[i];
        insns[i] = bpf_insn{f.code, f.jt, f.jf, f.k};
    }
    native->program.bf_len = static_cast<u_int>(n);
    native->program.bf_insns = insns;
    return ClassicProgram(std::move(native));
}

static_assert(kNetmaskUnknown == PCAP_NETMASK_UNKNOWN);
static_assert(DLT_EN10MB == 1);

uint32_t interface_netmask(const std::string& interface)
{
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0)
        return kNetmaskUnknown;
    const std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> owner(list, &freeifaddrs);
    // The kernel lists an interface's primary address first; secondary ones
    // with their own label ("eth0:1") carry that name instead.
    for (const ifaddrs* a = list; a; a = a->ifa_next) {
        if (a->ifa_name && interface == a->ifa_name && a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
            a->ifa_netmask) {
            // pcap_lookupnet() hands out network byte order, which tcpdump
            // passes on unchanged; pcap_compile() documents host order.
            return ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_netmask)->sin_addr.s_addr);
        }
    }
    // No IPv4 address: netmask 0, which tcpdump passes too, so `ip broadcast`
    // keeps only the all-zeros and all-ones addresses instead of failing.
    return 0;
}

ClassicProgram compile_filter(const std::string& expression, uint32_t netmask, uint32_t snaplen, int link_type)
{
    const std::unique_ptr<pcap_t, PcapCloser> pcap(pcap_open_dead(link_type, static_cast<int>(snaplen)));
    if (!pcap)
        throw Error("cannot set up libpcap to compile the filter");
    auto native = std::make_unique<ClassicProgram::Native>();
    if (pcap_compile(pcap.get(), &native->program, expression.c_str(), 1, netmask) != 0)
        // As tcpdump reports it, e.g. "can't parse filter expression: syntax error".
        throw Error(one_line(pcap_geterr(pcap.get())));
    const bpf_insn* insns = native->program.bf_insns;
    native->instructions.reserve(native->program.bf_len);
    for (u_int i = 0; i < native->program.bf_len; ++i)
        native->instructions.push_back(sock_filter{insns[i].code, insns[i].jt, insns[i].jf, insns[i].k});
    return ClassicProgram(std::move(native));
}

std::string link_type_description(int link_type)
{
    return pcap_datalink_val_to_description_or_dlt(link_type);
}

std::string dump_classic(const ClassicProgram& program)
{
    std::string text;
    int n = 0;
    for (const sock_filter& f : program.instructions()) {
        const bpf_insn insn{f.code, f.jt, f.jf, f.k};
        // bpf_image() writes the "(%03d) " prefix itself, as tcpdump prints it.
        text += bpf_image(&insn, n++);
        text += '\n';
    }
    return text;
}

} // namespace xdpcap
