// One packet as tcpdump-style text: a function of the captured bytes, their
// original length, the options and the TCP connections seen before (for
// relative sequence numbers), writing into the caller's buffer.
// Addresses and ports are always numeric; nothing past `caplen` is read;
// where the capture ends before a header does, "[|proto]" says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "text/writer.hpp"

namespace xdpcap::text {

class TcpFlows;

// The link-level header a frame starts with: libpcap's DLT numbers.
enum class LinkType : uint16_t {
    Ethernet = 1,   // DLT_EN10MB
    LinuxSll = 113, // DLT_LINUX_SLL
    LinuxSll2 = 276, // DLT_LINUX_SLL2
};

// An SLL2 header names its interface by index, which tcpdump shows as the
// name that index has on the host reading the file.
class InterfaceNames {
public:
    virtual ~InterfaceNames() = default;
    // Empty where no interface has the index.
    virtual std::string_view name(uint32_t index) noexcept = 0;
};

struct DecodeOptions {
    LinkType link_type = LinkType::Ethernet;
    // SLL2's interface names; nullptr: none known ("?").
    InterfaceNames* interface_names = nullptr;
    bool quick = false;      // -q: less protocol detail
    bool link_header = false; // -e: MAC addresses, ethertype and frame length
    // -v, -vv, -vvv: 0 to 3. IP header fields and options, checksums, and
    // what else tcpdump adds at each level for the protocols decoded.
    uint8_t verbose = 0;
    // This packet was sent with its transport checksum left for the NIC to
    // fill in (pcapng's "checksum not ready"): a wrong sum is no error.
    bool checksum_not_ready = false;
    // -K (--dont-verify-checksums): IP, TCP and UDP checksums are not
    // checked, so -v says nothing of them; as with tcpdump -K, ICMP's and
    // ICMPv6's still are.
    bool verify_checksums = true;
    // -x/-xx, -X/-XX, -A/-AA: 0 off, 1 without the link-level header, 2 with it.
    uint8_t hex = 0;
    uint8_t hex_ascii = 0;
    uint8_t ascii = 0;
    // The connections seen, for relative TCP sequence numbers (tcpdump's
    // default); nullptr: absolute ones (-S). The decode updates it.
    TcpFlows* tcp_flows = nullptr;
    // Set by the decoder: how many encapsulations (GRE, IP in IP, VXLAN,
    // Geneve, MPLS) enclose the packet being decoded.
    uint8_t depth = 0;
    // Set by the decoder where tcpdump's printer abandons the whole packet
    // (its longjmp out of a read past the capture) rather than printing its
    // own mark: tcpdump's -x/-X then dump the frame from its first byte.
    bool* abandoned = nullptr;
};

// Most bytes decode_frame() writes apart from the hex dump of data it does
// not decode (an unknown ethertype, ICMP or ICMPv6 type, ARP operation or
// MPLS payload), which tcpdump puts in the line itself. Each of up to eight
// nested encapsulations may print a full set of headers.
inline constexpr size_t kMaxDecodeLength = 32768;

// Room dump_frame() may need for a frame of `caplen` bytes.
constexpr size_t dump_length_bound(uint32_t caplen) noexcept
{
    return (static_cast<size_t>(caplen) / 16 + 1) * 80 + caplen + 16;
}

// Room decode_frame() may need: the headers and at most one in-line dump of
// the frame's bytes (the innermost packet's).
constexpr size_t decode_length_bound(uint32_t caplen) noexcept
{
    return kMaxDecodeLength + dump_length_bound(caplen);
}

// The protocol decode, without timestamp or newline, from the link-level
// header options.link_type says. Returns the length of the link-level
// header (Ethernet or Linux cooked, VLAN tags, LLC) as far as it was
// captured, as tcpdump counts it for -x.
size_t decode_frame(Writer& out, const uint8_t* data, uint32_t caplen, uint32_t origlen,
                    const DecodeOptions& options) noexcept;

// The -x/-X/-A dump that follows the decode (nothing when none is asked
// for); every dump line starts with a newline, the last one ends without.
void dump_frame(Writer& out, const uint8_t* data, uint32_t caplen, size_t link_length,
                const DecodeOptions& options) noexcept;

// A record whose lengths cannot be (caplen 0, len below caplen, either
// beyond 262144): tcpdump's "[Invalid header: ...]" in place of the packet
// and its time. False, writing nothing, for every other record.
bool put_invalid_header(Writer& out, uint32_t caplen, uint32_t origlen) noexcept;

// A string from a file (an interface name, a comment) as packet bytes are
// printed: printable ASCII as is, every other byte as an M- or ^ escape, so
// that nothing a file holds reaches a terminal raw.
std::string escaped(std::string_view s);

// Both, as one packet's text (no timestamp, no final newline).
inline void format_frame(Writer& out, const uint8_t* data, uint32_t caplen, uint32_t origlen,
                         const DecodeOptions& options) noexcept
{
    const size_t link_length = decode_frame(out, data, caplen, origlen, options);
    dump_frame(out, data, caplen, link_length, options);
}

} // namespace xdpcap::text
