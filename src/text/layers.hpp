// The text decoder's layers and what they share. decode.cpp reads the
// Ethernet header and its VLAN tags and hands the payload on: ARP, LLC and
// STP (link.cpp), IPv4 and IPv6 (ip.cpp), TCP and UDP (transport.cpp), ICMP
// and ICMPv6 (icmp.cpp), and what tcpdump recognises by port
// (application.cpp). Each layer prints what tcpdump prints for its header
// and calls the next; every read is checked against the captured bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

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

// Fields (fields.cpp).
AddressText ipv4_text(const uint8_t* a) noexcept;
AddressText ipv6_text(const uint8_t* a) noexcept;
void put_mac(Writer& w, const uint8_t* m) noexcept;
void put_link_address(Writer& w, const uint8_t* a, size_t n) noexcept;
const char* ethertype_name(uint16_t type) noexcept;
void put_ethertype(Writer& w, uint16_t type, bool with_number) noexcept;
const char* ip_protocol_name(uint8_t protocol) noexcept;
void put_protocol(Writer& w, uint8_t protocol) noexcept;
void put_truncated(Writer& w, std::string_view what) noexcept;
void put_endpoints(Writer& w, const Endpoints& e, const Bytes& l4, bool with_ports) noexcept;
void put_hex_lines(Writer& w, const uint8_t* bytes, size_t n, bool ascii) noexcept;
void put_unknown_data(Writer& w, const Bytes& data, size_t length) noexcept;

// Link layer (link.cpp): `length` is what the frame held from the header
// on, captured or not.
void print_arp(Writer& w, const Bytes& arp, size_t length, const DecodeOptions& o) noexcept;
bool print_llc(Writer& w, const Bytes& llc, size_t length, const DecodeOptions& o) noexcept;

// IP layer (ip.cpp).
void print_ipv4(Writer& w, const Bytes& ip, size_t frame_length, const DecodeOptions& o) noexcept;
void print_ipv6(Writer& w, const Bytes& ip, size_t frame_length, const DecodeOptions& o) noexcept;
void print_transport(Writer& w, uint8_t protocol, const Endpoints& e, const Bytes& l4, size_t length,
                     bool fragmented, const DecodeOptions& o) noexcept;

// Transport layer (transport.cpp, icmp.cpp): `length` by the IP header.
void print_tcp(Writer& w, const Endpoints& e, const Bytes& l4, size_t length, const DecodeOptions& o) noexcept;
void print_udp(Writer& w, const Endpoints& e, const Bytes& l4, size_t length, bool fragmented) noexcept;
void print_icmp(Writer& w, const Endpoints& e, const Bytes& l4, size_t length) noexcept;
void print_icmp6(Writer& w, const Endpoints& e, const Bytes& l4, size_t length) noexcept;

} // namespace xdpcap::text::detail
