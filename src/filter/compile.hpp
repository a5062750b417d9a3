// tcpdump filter expressions compiled to classic BPF by libpcap, which is the
// reference for their meaning.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace xdpcap {

// Owns libpcap's compiled program. The instructions are exposed as the kernel's
// struct sock_filter (same layout as libpcap's struct bpf_insn) because
// <pcap/bpf.h> and <linux/bpf.h> both define struct bpf_insn, and <pcap.h>
// and <bpf/libbpf.h> both define struct bpf_program: no libpcap header may leak
// out of here.
class ClassicProgram {
public:
    ClassicProgram(ClassicProgram&&) noexcept;
    ClassicProgram& operator=(ClassicProgram&&) noexcept;
    ~ClassicProgram();

    std::span<const sock_filter> instructions() const noexcept;

    // libpcap's own interpreter (pcap_offline_filter) on a whole frame:
    // non-zero keeps it. The reference the eBPF translation is tested against,
    // and a userspace fallback.
    uint32_t run(std::span<const uint8_t> frame) const;
    // The same on a packet cut to `captured` of its `wire_length` bytes.
    uint32_t run(std::span<const uint8_t> captured, uint32_t wire_length) const;

    // Whether it loads the packet type (libpcap's `inbound`, `outbound` on
    // Ethernet), which a frame's bytes do not hold.
    bool reads_packet_type() const noexcept;
    // A copy in which the packet type is the constant `packet_type`
    // (PACKET_HOST, PACKET_OUTGOING): the program for frames whose direction
    // is known from elsewhere, such as a file's epb_flags.
    ClassicProgram with_packet_type(uint32_t packet_type) const;

private:
    struct Native;
    explicit ClassicProgram(std::unique_ptr<Native> native);
    friend ClassicProgram compile_filter(const std::string& expression, uint32_t netmask, uint32_t snaplen,
                                         int link_type);

    std::unique_ptr<Native> native_;
};

// libpcap's PCAP_NETMASK_UNKNOWN: `ip broadcast` then fails to compile.
inline constexpr uint32_t kNetmaskUnknown = 0xffffffff;

// The netmask of the interface's primary IPv4 address in host byte order (as
// pcap_compile() reads it); 0 when it has none (as tcpdump), kNetmaskUnknown
// when the addresses cannot be listed.
uint32_t interface_netmask(const std::string& interface);

// For frames of `link_type` (libpcap's DLT number; Ethernet, DLT_EN10MB, by
// default), optimised. The netmask (host byte order) gives `ip broadcast`
// its meaning. Raises Error with libpcap's message.
ClassicProgram compile_filter(const std::string& expression, uint32_t netmask = kNetmaskUnknown,
                              uint32_t snaplen = 262144, int link_type = 1);

// libpcap's description of a link type ("Ethernet"), as its messages say it.
std::string link_type_description(int link_type);

// The listing `tcpdump -d` prints, one line per instruction.
std::string dump_classic(const ClassicProgram& program);

} // namespace xdpcap
