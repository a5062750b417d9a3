#include "text/decode.hpp"

#include "text/layers.hpp"

namespace xdpcap::text {

using namespace std::string_view_literals;
using namespace detail;

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
