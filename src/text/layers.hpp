// The text decoder's layers and what they share. decode.cpp reads the
// Ethernet header and its VLAN tags (cooked.cpp a Linux cooked header) and
// hands the payload on: ARP, LLC and
// STP (link.cpp), LLDP (lldp.cpp), IPv4 and IPv6 (ip.cpp), TCP and UDP (transport.cpp), ICMP
// and ICMPv6 (icmp.cpp), GRE, VXLAN, Geneve and MPLS (encapsulation.cpp),
// which lead back to Ethernet or IP, and what tcpdump recognises by port
// (application.cpp, dns.cpp). Each layer prints what tcpdump prints for its header
// and calls the next; every read is checked against the captured bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "text/decode.hpp"
#include "text/writer.hpp"

namespace xdpcap::text::detail {

constexpr uint16_t kEtherIPv4 = 0x0800;
constexpr uint16_t kEtherArp = 0x0806;
constexpr uint16_t kEtherRarp = 0x8035;
constexpr uint16_t kEtherIPv6 = 0x86dd;
constexpr uint16_t kEtherVlan = 0x8100;
constexpr uint16_t kEtherQinQ = 0x88a8;
constexpr uint16_t kEtherQinQOld = 0x9100;
constexpr uint16_t kEtherQinQ9200 = 0x9200;
constexpr uint16_t kEtherMpls = 0x8847;
constexpr uint16_t kEtherMplsMulticast = 0x8848;
constexpr uint16_t kEtherLldp = 0x88cc;
constexpr uint16_t kEtherTeb = 0x6558; // transparent Ethernet bridging: a whole frame
constexpr size_t kEtherHeader = 14;
// Deeper stacks of tags or IPv6 extension headers are not walked.
constexpr int kMaxVlanTags = 8;
constexpr int kMaxExtensionHeaders = 16;
// Deeper nesting of encapsulations (routing entries of GRE count as one
// each) and longer MPLS label stacks end the line: they bound its length.
constexpr uint8_t kMaxEncapsulationDepth = 8;
constexpr int kMaxMplsLabels = 16;

constexpr uint8_t kProtoIcmp = 1;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoIcmp6 = 58;
constexpr uint8_t kProtoIpip = 4;
constexpr uint8_t kProtoIpv6 = 41;
constexpr uint8_t kProtoGre = 47;
constexpr uint8_t kProtoEthernet = 143;

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

// Reads a span's fields without a test each: a read past the capture
// yields zeros and is recorded, so a printer reads its fields in order and
// tests ok() once, where tcpdump's GET_ macros would jump out.
class Cursor {
public:
    explicit Cursor(const Bytes& b) noexcept : b_(b) {}

    uint8_t u8(size_t at) noexcept { return need(at, 1) ? b_.u8(at) : 0; }
    uint16_t u16(size_t at) noexcept { return need(at, 2) ? b_.u16(at) : 0; }
    uint32_t u32(size_t at) noexcept { return need(at, 4) ? b_.u32(at) : 0; }
    // An address (at most 16 bytes): zeros where it was not captured.
    const uint8_t* address(size_t at, size_t n) noexcept { return need(at, n) ? b_.data + at : kZeros; }
    // Whether `n` bytes at `at` were captured; where not, a short read.
    bool need(size_t at, size_t n) noexcept
    {
        if (b_.has(at, n))
            return true;
        if (short_at_ == kNone)
            short_at_ = at;
        return false;
    }
    bool ok() const noexcept { return short_at_ == kNone; }
    // The offset of the first short read.
    size_t short_at() const noexcept { return short_at_; }
    const Bytes& bytes() const noexcept { return b_; }

    static constexpr size_t kNone = static_cast<size_t>(-1);

private:
    static constexpr uint8_t kZeros[16] = {};
    Bytes b_;
    size_t short_at_ = kNone;
};

// Formatted addresses live on the stack: at most an IPv6 address.
struct AddressText {
    char text[48];
    size_t length = 0;
    std::string_view view() const noexcept { return {text, length}; }
};

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
    // The destination a transport checksum covers: the last hop of a source
    // route (IPv4 option, IPv6 routing header); nullptr: dst_raw.
    const uint8_t* checksum_dst = nullptr;
};

// The Internet checksum (RFC 1071) over spans added in order.
class InternetChecksum {
public:
    void add(const uint8_t* bytes, size_t n) noexcept;
    void add16(uint16_t value) noexcept { sum_ += value; }
    // Zero when the data summed holds its right checksum.
    uint16_t value() const noexcept;

private:
    uint64_t sum_ = 0;
    bool odd_ = false; // the last span ended inside a 16-bit word
};

// What the checksum field should hold, given what it holds and value().
uint16_t checksum_should_be(uint16_t field, uint16_t computed) noexcept;
// value() of a TCP, UDP or ICMPv6 packet of `length` bytes (all captured)
// with the pseudo-header of its IP header.
uint16_t transport_checksum(const Endpoints& e, uint8_t protocol, const Bytes& l4, size_t length) noexcept;
// tcpdump's -v check of a TCP, UDP or ICMPv6 checksum: none unless all
// `length` bytes were captured. A wrong sum of a packet whose checksum the
// NIC fills in is no error. `should_be` is set where the sum is wrong.
enum class ChecksumCheck { NotChecked, Correct, Incorrect, Offloaded };
ChecksumCheck check_transport(const Endpoints& e, uint8_t protocol, const Bytes& l4, size_t length,
                              const DecodeOptions& o, uint16_t& should_be) noexcept;

// Fields (fields.cpp).
AddressText ipv4_text(const uint8_t* a) noexcept;
AddressText ipv6_text(const uint8_t* a) noexcept;
void put_mac(Writer& w, const uint8_t* m) noexcept;
void put_link_address(Writer& w, const uint8_t* a, size_t n) noexcept;
const char* ethertype_name(uint16_t type) noexcept;
void put_ethertype(Writer& w, uint16_t type, bool with_number) noexcept;
void put_link_ethertype(Writer& w, uint16_t type, bool quick) noexcept;
const char* ip_protocol_name(uint8_t protocol) noexcept;
// The longer names of tcpdump's -v ("next-header Routing (43)"); nullptr if none.
const char* ip_protocol_verbose_name(uint8_t protocol) noexcept;
void put_protocol(Writer& w, uint8_t protocol) noexcept;
void put_truncated(Writer& w, std::string_view what) noexcept;
// An 802.1Q tag's control field as tcpdump prints it: "vlan ID, p P[, DEI], ".
void put_vlan_tci(Writer& w, uint16_t tci) noexcept;
// The same mark where tcpdump abandons the packet: see DecodeOptions::abandoned.
void put_abandoned(Writer& w, std::string_view what, const DecodeOptions& o) noexcept;
// tcpdump's GET_ macros at a field printed as soon as it is read: true,
// with put_abandoned()'s mark written, where `n` bytes at `at` were not
// captured.
inline bool abandoned_at(Writer& w, const Bytes& b, size_t at, size_t n, std::string_view what,
                         const DecodeOptions& o) noexcept
{
    if (b.has(at, n))
        return false;
    put_abandoned(w, what, o);
    return true;
}
void put_endpoints(Writer& w, const Endpoints& e, const Bytes& l4, bool with_ports) noexcept;
// `indent` starts each line.
void put_hex_lines(Writer& w, const uint8_t* bytes, size_t n, bool ascii, std::string_view indent = "\n\t") noexcept;
void put_unknown_data(Writer& w, const Bytes& data, size_t length, std::string_view indent = "\n\t") noexcept;
// tcpdump's default print of data it does not decode: hex and ASCII lines
// of what was captured of `length` bytes, and " [|what]" if that was not all.
void put_default_data(Writer& w, const Bytes& data, size_t length, std::string_view what) noexcept;
// tcpdump prints no default dump with -q, -x or -X.
inline bool default_data_wanted(const DecodeOptions& o) noexcept { return !o.quick && !o.hex && !o.hex_ascii; }

// Link layer (decode.cpp, link.cpp): `length` is what the frame held from
// the header on, captured or not. print_ethernet() returns the length of the
// link-level header as far as it was captured.
size_t print_ethernet(Writer& w, const Bytes& frame, size_t length, const DecodeOptions& o) noexcept;
// A Linux cooked header, SLL (16 bytes) or SLL2 (20), and its payload
// (cooked.cpp). Returns the link-level header's length as print_ethernet().
size_t print_linux_cooked(Writer& w, const Bytes& frame, size_t length, bool v2, const DecodeOptions& o) noexcept;
// The payloads of the ethertypes decoded (IPv4, IPv6, ARP, RARP, MPLS, LLDP);
// false, with nothing written, for others.
bool print_ethertype_payload(Writer& w, uint16_t type, const Bytes& payload, size_t length,
                             const DecodeOptions& o) noexcept;
void print_arp(Writer& w, const Bytes& arp, size_t length, const DecodeOptions& o) noexcept;
// The LLC header's length as tcpdump counts it; negative where the data
// after it was not decoded (the caller dumps it from the LLC header on).
// `macs`: the frame's destination and source addresses; nullptr: none.
long print_llc(Writer& w, const Bytes& llc, size_t length, const uint8_t* macs, const DecodeOptions& o) noexcept;
void print_lldp(Writer& w, const Bytes& lldp, size_t length, const DecodeOptions& o) noexcept; // lldp.cpp

// IP layer (ip.cpp).
void print_ipv4(Writer& w, const Bytes& ip, size_t frame_length, const DecodeOptions& o) noexcept;
void print_ipv6(Writer& w, const Bytes& ip, size_t frame_length, const DecodeOptions& o) noexcept;
void print_transport(Writer& w, uint8_t protocol, const Endpoints& e, const Bytes& l4, size_t length,
                     bool fragmented, const DecodeOptions& o) noexcept;

// Transport layer (transport.cpp, icmp.cpp): `length` by the IP header.
// `fragmented`: more fragments follow, so no checksum can be checked.
void print_tcp(Writer& w, const Endpoints& e, const Bytes& l4, size_t length, bool fragmented,
               const DecodeOptions& o) noexcept;
void print_udp(Writer& w, const Endpoints& e, const Bytes& l4, size_t length, bool fragmented,
               const DecodeOptions& o) noexcept;
void print_icmp(Writer& w, const Endpoints& e, const Bytes& l4, size_t length, bool fragmented,
                const DecodeOptions& o) noexcept;
void print_icmp6(Writer& w, const Endpoints& e, const Bytes& l4, size_t length, bool fragmented,
                 const DecodeOptions& o) noexcept;
// tcpdump's nd_printn: printable ASCII as is, others as M- and ^ escapes.
void put_escaped(Writer& w, const uint8_t* bytes, size_t n) noexcept;
// tcpdump's nd_printjnp: up to `n` bytes from `at`, escaped, to the first
// NUL; false where the capture ends first.
bool put_nul_padded(Writer& w, const Bytes& b, size_t at, size_t n) noexcept;
// tcpdump's bittok2str: the names of the bits set in `value`, ", " between,
// or `none`.
using FlagNames = std::initializer_list<std::pair<uint32_t, std::string_view>>;
void put_flag_names(Writer& w, uint32_t value, FlagNames names, std::string_view none = "none") noexcept;
// tcpdump's -v verdict on a UDP or ICMPv6 checksum: "[udp sum ok] ",
// "[bad udp cksum 0x1234 -> 0x5678!] ", "[udp sum offloaded] ", or nothing.
void put_checksum_verdict(Writer& w, std::string_view protocol, ChecksumCheck check, uint16_t field,
                          uint16_t should_be) noexcept;

// What tcpdump recognises a TCP or UDP payload as by its ports
// (application.cpp): the first in tcpdump's order whose port either end
// uses decides, also when xdpcap does not decode it (Other).
enum class PortApplication : uint8_t { None, Other, Ssh, Http, Dns, Mdns, Otv, Vxlan, Geneve, Mpls };
PortApplication application_by_port(uint8_t protocol, uint16_t source, uint16_t destination) noexcept;

// Application layer (dns.cpp): a DNS message of `length` bytes (by the
// UDP or TCP header; over TCP with its 2-byte length prefix), mDNS's class
// bits when `mdns`; `verbose` as DecodeOptions::verbose.
void print_dns(Writer& w, const Bytes& payload, size_t length, bool over_tcp, bool mdns, uint8_t verbose) noexcept;
// A domain name at `at` of `m` as tcpdump's fqdn_print writes it, pointers
// counting from `base`. Returns the offset after it, or kNoName where the
// name is bad or cut.
constexpr size_t kNoName = static_cast<size_t>(-1);
size_t put_domain_name(Writer& w, const Bytes& m, size_t at, size_t base) noexcept;

// Encapsulations (encapsulation.cpp): `length` is the header's and its
// payload's by the enclosing header. Each decodes its payload one level
// deeper, and prints nothing past kMaxEncapsulationDepth.
void print_gre(Writer& w, const Bytes& gre, size_t length, const DecodeOptions& o) noexcept;
void print_vxlan(Writer& w, const Bytes& vxlan, size_t length, const DecodeOptions& o) noexcept;
void print_otv(Writer& w, const Bytes& otv, size_t length, const DecodeOptions& o) noexcept;
void print_geneve(Writer& w, const Bytes& geneve, size_t length, const DecodeOptions& o) noexcept;
void print_mpls(Writer& w, const Bytes& mpls, size_t length, const DecodeOptions& o) noexcept;

// The options for a payload one encapsulation deeper; false when that is
// deeper than kMaxEncapsulationDepth.
inline bool nest(const DecodeOptions& o, DecodeOptions& inner) noexcept
{
    if (o.depth >= kMaxEncapsulationDepth)
        return false;
    inner = o;
    ++inner.depth;
    return true;
}

} // namespace xdpcap::text::detail
