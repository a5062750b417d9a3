// The entry of the text decoder: the Ethernet header and its VLAN tags, as
// tcpdump 4.99's ether_print() reads them, for the captured frame and for
// the frames that VXLAN, Geneve and GRE carry.
#include "text/decode.hpp"

#include "text/layers.hpp"

namespace xdpcap::text {

using namespace std::string_view_literals;

namespace detail {

namespace {

bool is_vlan(uint16_t type) noexcept
{
    return type == kEtherVlan || type == kEtherQinQ || type == kEtherQinQOld || type == kEtherQinQ9200;
}

bool decodes_ethertype(uint16_t type) noexcept
{
    return type == kEtherIPv4 || type == kEtherIPv6 || type == kEtherArp || type == kEtherRarp ||
        type == kEtherMpls || type == kEtherMplsMulticast || type == kEtherLldp;
}

} // namespace

bool print_ethertype_payload(Writer& w, uint16_t type, const Bytes& payload, size_t length,
                             const DecodeOptions& o) noexcept
{
    switch (type) {
    case kEtherIPv4:
        print_ipv4(w, payload, length, o);
        return true;
    case kEtherIPv6:
        print_ipv6(w, payload, length, o);
        return true;
    case kEtherArp:
    case kEtherRarp:
        print_arp(w, payload, length, o);
        return true;
    case kEtherMpls:
    case kEtherMplsMulticast:
        print_mpls(w, payload, length, o);
        return true;
    case kEtherLldp:
        print_lldp(w, payload, length, o);
        return true;
    default:
        return false;
    }
}

size_t print_ethernet(Writer& w, const Bytes& frame, size_t frame_length, const DecodeOptions& o) noexcept
{
    // An encapsulated frame whose enclosing header says it is shorter than
    // the bytes that follow: tcpdump's words.
    if (frame_length < frame.size) {
        w.put("[length "sv, frame_length, " < caplen "sv, frame.size, "] (invalid)"sv);
        return frame_length;
    }
    if (!frame.has(0, kEtherHeader)) {
        put_truncated(w, "ether"sv);
        return frame.size;
    }
    uint16_t type = frame.u16(12);
    if (o.link_header) {
        put_mac(w, frame.data + 6);
        w.put(" > "sv);
        put_mac(w, frame.data);
        w.put(", "sv);
        // A tag cut short: tcpdump says no more of the link header.
        if (is_vlan(type) && !frame.has(kEtherHeader, 4)) {
            put_truncated(w, "vlan"sv);
            return frame.size;
        }
        if (type <= 1500)
            w.put("802.3"sv);
        else
            put_link_ethertype(w, type, o.quick);
        // An 802.3 frame's length is its length field, as tcpdump gives it.
        w.put(", length "sv, type <= 1500 ? type : frame_length);
    }
    size_t offset = kEtherHeader;
    bool separator = o.link_header; // ": " still owed after the link header
    auto begin_payload = [&] {
        if (separator)
            w.put(": "sv);
        separator = false;
    };
    for (int tag = 0; tag < kMaxVlanTags && is_vlan(type); ++tag) {
        begin_payload();
        if (!frame.has(offset, 4) || frame_length < offset + 4) {
            put_truncated(w, "vlan"sv);
            return frame.size;
        }
        put_vlan_tci(w, frame.u16(offset));
        type = frame.u16(offset + 2);
        if (o.link_header) {
            put_link_ethertype(w, type, o.quick);
        } else {
            w.put("ethertype "sv);
            put_ethertype(w, type, false);
        }
        w.put(", "sv);
        offset += 4;
    }
    const Bytes payload = frame.from(offset);
    const size_t length = frame_length > offset ? frame_length - offset : 0;
    if (decodes_ethertype(type)) {
        begin_payload();
        print_ethertype_payload(w, type, payload, length, o);
        return offset;
    }
    // 802.3: the length field bounds the LLC data (padding is not part of it).
    if (type <= 1500) {
        const size_t llc_length = length < type ? length : type;
        const Bytes llc = payload.first(llc_length);
        begin_payload();
        const long header = print_llc(w, llc, llc_length, frame.data, o);
        // Data not decoded: tcpdump's default dump, from the LLC header on.
        if (header < 0 && default_data_wanted(o))
            put_hex_lines(w, llc.data, llc.size, true);
        // tcpdump counts the LLC header (and SNAP's) as link level.
        return offset + static_cast<size_t>(header < 0 ? -header : header);
    }
    // A type not decoded: without -e, tcpdump names the addresses and the
    // type here; then the data in hex and ASCII.
    if (separator) {
        begin_payload();
    } else {
        put_mac(w, frame.data + 6);
        w.put(" > "sv);
        put_mac(w, frame.data);
        w.put(", "sv);
        put_link_ethertype(w, type, o.quick);
        w.put(", length "sv, frame_length, ": "sv);
    }
    if (default_data_wanted(o))
        put_default_data(w, payload, payload.size, "ether"sv);
    return offset;
}

} // namespace detail

size_t decode_frame(Writer& w, const uint8_t* data, uint32_t caplen, uint32_t origlen,
                    const DecodeOptions& o) noexcept
{
    bool abandoned = false;
    DecodeOptions options = o;
    options.abandoned = &abandoned;
    const detail::Bytes frame{data, caplen};
    const size_t length = origlen < caplen ? caplen : origlen;
    const size_t link_length = o.link_type == LinkType::Ethernet
        ? detail::print_ethernet(w, frame, length, options)
        : detail::print_linux_cooked(w, frame, length, o.link_type == LinkType::LinuxSll2, options);
    return abandoned ? 0 : link_length;
}

void dump_frame(Writer& w, const uint8_t* data, uint32_t caplen, size_t link_length, const DecodeOptions& o) noexcept
{
    const uint8_t level = o.hex_ascii ? o.hex_ascii : o.hex ? o.hex : o.ascii;
    if (level == 0)
        return;
    const size_t start = level > 1 ? 0 : link_length < caplen ? link_length : caplen;
    const uint8_t* bytes = data + start;
    const size_t n = caplen - start;
    // Nothing past a link-level header that took the whole capture: no
    // dump, not even its first line break (tcpdump's -A).
    if (n == 0)
        return;
    if (!o.hex_ascii && !o.hex) {
        // ASCII: line breaks kept, other unprintable bytes as '.'. A CR is
        // a '.' only with two bytes or more after it, the next not a LF
        // (tcpdump's rule, which drops CRs near the end).
        w.put('\n');
        for (size_t i = 0; i < n; ++i) {
            const uint8_t c = bytes[i];
            if (c == '\r') {
                if (n - i - 1 > 1 && bytes[i + 1] != '\n')
                    w.put('.');
            } else if ((c >= 0x21 && c <= 0x7e) || c == ' ' || c == '\t' || c == '\n') {
                w.put(static_cast<char>(c));
            } else {
                w.put('.');
            }
        }
        return;
    }
    detail::put_hex_lines(w, bytes, n, o.hex_ascii != 0);
}

// The checks of tcpdump's pretty_print_packet, in its order and words.
bool put_invalid_header(Writer& out, uint32_t cap_len, uint32_t orig_len) noexcept
{
    constexpr uint32_t kMaximumSnaplen = 262144; // tcpdump's MAXIMUM_SNAPLEN
    bool invalid = false;
    const auto item = [&](std::string_view what) {
        out.put(invalid ? "," : "[Invalid header:");
        invalid = true;
        out.put(what);
    };
    if (cap_len == 0)
        item(" caplen==0");
    if (orig_len == 0) {
        item(" len==0");
    } else if (orig_len < cap_len) {
        item(" len(");
        out.put(orig_len, ") < caplen(", cap_len, ')');
    }
    if (cap_len > kMaximumSnaplen) {
        item(" caplen(");
        out.put(cap_len, ") > ", kMaximumSnaplen);
    }
    if (orig_len > kMaximumSnaplen) {
        item(" len(");
        out.put(orig_len, ") > ", kMaximumSnaplen);
    }
    if (invalid)
        out.put(']');
    return invalid;
}


} // namespace xdpcap::text
