// IPv4 and IPv6 headers, extension headers and fragments, as tcpdump 4.99
// prints them without -v.
#include "text/layers.hpp"

namespace xdpcap::text::detail {

using namespace std::string_view_literals;

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
        put_abandoned(w, "ip"sv, o);
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
        // A later fragment carries no transport header: tcpdump (-n) gives
        // the protocol's number alone.
        put_endpoints(w, e, payload, false);
        w.put("ip-proto-"sv);
        w.dec(protocol);
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

// Transport (or any other protocol) after IPv4 or IPv6. `l4` is what was
// captured of the payload, `length` its length by the IP header.
void print_transport(Writer& w, uint8_t protocol, const Endpoints& e, const Bytes& l4, size_t length,
                     bool fragmented, const DecodeOptions& o) noexcept
{
    const bool ipv6 = e.address_size == 16;
    switch (protocol) {
    case kProtoTcp:
        print_tcp(w, e, l4, length, o);
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
            print_icmp6(w, e, l4, length, o);
        } else {
            print_icmp(w, e, l4, length, o);
        }
        return;
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
            w.put(", length "sv);
            w.dec(length);
        } else {
            w.put(" ip-proto-"sv);
            w.dec(protocol);
            w.put(' ');
            w.dec(length);
        }
        return;
    }
}

} // namespace xdpcap::text::detail
