// ARP, RARP, 802.3 LLC/SNAP and STP, as tcpdump 4.99 prints them.
#include "text/layers.hpp"

#include <iterator>

namespace xdpcap::text::detail {

using namespace std::string_view_literals;

namespace {

const char* arp_hardware_name(uint16_t hardware) noexcept
{
    switch (hardware) {
    case 1: return "Ethernet";
    case 6: return "TokenRing";
    case 7: return "ArcNet";
    case 15: return "FrameRelay";
    case 23: return "Strip";
    case 24: return "IEEE 1394";
    case 19: return "ATM";
    case 32: return "InfiniBand";
    default: return nullptr;
    }
}

// A bridge ID: priority and MAC, "8000.02:00:00:00:00:01".
void put_bridge_id(Writer& w, const Bytes& bpdu, size_t at) noexcept
{
    w.hex_byte(bpdu.u8(at));
    w.hex_byte(bpdu.u8(at + 1));
    w.put('.');
    put_mac(w, bpdu.data + at + 2);
}

// An STP timer (1/256 s) as C's "%.2f" prints it: rounded half to even.
void put_stp_seconds(Writer& w, uint16_t value) noexcept
{
    const uint32_t scaled = uint32_t{value} * 100;
    uint32_t hundredths = scaled / 256;
    const uint32_t rest = scaled % 256;
    if (rest > 128 || (rest == 128 && hundredths % 2 == 1))
        ++hundredths;
    w.dec(hundredths / 100);
    w.put('.');
    w.padded(hundredths % 100, 2);
    w.put('s');
}

// -v: a configuration BPDU's timers, root and (802.1w) port role.
void put_stp_details(Writer& w, const Bytes& bpdu, uint8_t version, uint8_t flags, const DecodeOptions& o) noexcept
{
    if (!bpdu.has(0, 35)) {
        put_abandoned(w, "stp"sv, o);
        return;
    }
    constexpr std::string_view kTimers[] = {"\n\tmessage-age "sv, ", max-age "sv, ", hello-time "sv,
                                            ", forwarding-delay "sv};
    for (size_t i = 0; i < std::size(kTimers); ++i) {
        w.put(kTimers[i]);
        put_stp_seconds(w, bpdu.u16(27 + 2 * i));
    }
    w.put("\n\troot-id "sv);
    put_bridge_id(w, bpdu, 5);
    w.put(", root-pathcost "sv);
    w.dec(bpdu.u32(13));
    if (version == 2) {
        constexpr std::string_view kRoles[] = {"Unknown"sv, "Alternate"sv, "Root"sv, "Designated"sv};
        w.put(", port-role "sv);
        w.put(kRoles[(flags >> 2) & 3]);
    }
}

// STP BPDUs as tcpdump 4.99 prints them: the protocol, the BPDU
// type, the flags and the sender's bridge and port.
// tcpdump abandons the packet at every cut of a BPDU (DecodeOptions::abandoned).
void print_stp(Writer& w, const Bytes& bpdu, size_t length, const DecodeOptions& o) noexcept
{
    if (length < 4) {
        w.put(" (invalid)"sv);
        return;
    }
    if (!bpdu.has(0, 3)) {
        put_abandoned(w, "stp"sv, o);
        return;
    }
    if (bpdu.u16(0) != 0) {
        w.put("unknown STP version, length "sv);
        w.dec(length);
        return;
    }
    const uint8_t version = bpdu.u8(2);
    w.put("STP "sv);
    switch (version) {
    case 0: w.put("802.1d"sv); break;
    case 2: w.put("802.1w"sv); break;
    case 3: w.put("802.1s"sv); break;
    case 4: w.put("802.1aq"sv); break;
    default:
        w.put("Unknown STP protocol (0x"sv);
        w.hex(version, 2);
        w.put(')');
        return;
    }
    if (!bpdu.has(3, 1)) {
        put_abandoned(w, "stp"sv, o);
        return;
    }
    const uint8_t type = bpdu.u8(3);
    w.put(", "sv);
    switch (type) {
    case 0x00: w.put("Config"sv); break;
    case 0x02: w.put("Rapid STP"sv); break;
    case 0x80: w.put("Topology Change"sv); return;
    default:
        w.put("Unknown BPDU Type (0x"sv);
        w.hex(type, 2);
        w.put(')');
        return;
    }
    const bool rapid = type == 0x02;
    if (rapid && version != 2 && version != 0) {
        // MSTP and SPB: the CIST flags only, without -v.
        if (length < 102 || !bpdu.has(4, 1)) {
            if (length < 102)
                w.put(" (invalid)"sv);
            else
                put_abandoned(w, "stp"sv, o);
            return;
        }
    } else if (length < (rapid ? 36u : 35u)) {
        w.put(" (invalid)"sv);
        return;
    }
    if (!bpdu.has(4, 1)) {
        put_abandoned(w, "stp"sv, o);
        return;
    }
    const uint8_t flags = bpdu.u8(4);
    w.put(rapid && version >= 3 ? ", CIST Flags ["sv : ", Flags ["sv);
    constexpr struct {
        uint8_t bit;
        std::string_view name;
    } kFlags[] = {{0x01, "Topology change"sv}, {0x02, "Proposal"sv}, {0x10, "Learn"sv},
                  {0x20, "Forward"sv},         {0x40, "Agreement"sv}, {0x80, "Topology change ACK"sv}};
    bool any = false;
    for (const auto& f : kFlags) {
        if (flags & f.bit) {
            w.put(any ? ", "sv : ""sv);
            w.put(f.name);
            any = true;
        }
    }
    if (!any)
        w.put("none"sv);
    w.put(']');
    if (rapid && version >= 3) {
        w.put(", length "sv);
        w.dec(length);
        return;
    }
    if (!bpdu.has(17, 10)) {
        put_abandoned(w, "stp"sv, o);
        return;
    }
    w.put(", bridge-id "sv);
    put_bridge_id(w, bpdu, 17);
    w.put('.');
    w.hex(bpdu.u16(25), 4);
    w.put(", length "sv);
    w.dec(length);
    if (o.verbose)
        put_stp_details(w, bpdu, version, flags, o);
}

} // namespace

// ARP and RARP (ethertype 0x8035) alike, as tcpdump 4.99 prints them: any
// hardware and protocol address lengths; an address family it cannot show
// as IPv4 by its types and lengths; an unknown operation dumped in hex.
void print_arp(Writer& w, const Bytes& arp, size_t length, const DecodeOptions& o) noexcept
{
    if (!arp.has(0, 8)) {
        put_abandoned(w, "arp"sv, o);
        return;
    }
    const uint16_t hardware = arp.u16(0);
    const uint16_t protocol = arp.u16(2);
    const size_t hln = arp.u8(4);
    const size_t pln = arp.u8(5);
    const uint16_t op = arp.u16(6);
    const size_t sha = 8, spa = sha + hln, tha = spa + pln, tpa = tha + hln;
    if (!arp.has(0, tpa + pln)) {
        put_abandoned(w, "arp"sv, o);
        return;
    }
    if (!o.link_header)
        w.put("ARP, "sv);
    constexpr uint16_t kEtherTrail = 0x1000;
    const bool ip_protocol = protocol == kEtherIPv4 || protocol == kEtherTrail;
    // With -v always, else where the addresses are not Ethernet's and IPv4's.
    if (!ip_protocol || pln != 4 || hln == 0 || o.verbose) {
        if (const char* name = arp_hardware_name(hardware)) {
            w.put(std::string_view(name));
        } else {
            w.put("Unknown Hardware ("sv);
            w.dec(hardware);
            w.put(')');
        }
        w.put(" (len "sv);
        w.dec(hln);
        w.put("), "sv);
        if (const char* name = ethertype_name(protocol)) {
            w.put(std::string_view(name));
        } else {
            w.put("Unknown Protocol (0x"sv);
            w.hex(protocol, 4);
            w.put(')');
        }
        w.put(" (len "sv);
        w.dec(pln);
        w.put(')');
        if (!o.verbose) {
            w.put(", length "sv);
            w.dec(length);
            return;
        }
        w.put(", "sv);
    }
    // A protocol address, or tcpdump's words for why it is none.
    const auto put_ip = [&](size_t at) {
        if (!ip_protocol)
            w.put("<wrong proto type>"sv);
        else if (pln != 4)
            w.put("<wrong len>"sv);
        else
            w.put(ipv4_text(arp.data + at).view());
    };
    // tcpdump's names; 5 to 7 are none of its.
    constexpr std::string_view kOps[] = {"Request"sv, "Reply"sv, "Reverse Request"sv, "Reverse Reply"sv, ""sv, ""sv,
                                         ""sv, "Inverse Request"sv, "Inverse Reply"sv, "NACK Reply"sv};
    if (op >= 1 && op <= std::size(kOps) && !kOps[op - 1].empty()) {
        w.put(kOps[op - 1]);
    } else {
        w.put("Unknown ("sv);
        w.dec(op);
        w.put(')');
    }
    w.put(' ');
    switch (op) {
    case 1: {
        w.put("who-has "sv);
        put_ip(tpa);
        bool zero = true;
        for (size_t i = 0; i < hln; ++i)
            zero = zero && arp.u8(tha + i) == 0;
        if (!zero) {
            w.put(" ("sv);
            put_link_address(w, arp.data + tha, hln);
            w.put(')');
        }
        w.put(" tell "sv);
        put_ip(spa);
        break;
    }
    case 2:
        put_ip(spa);
        w.put(" is-at "sv);
        put_link_address(w, arp.data + sha, hln);
        break;
    case 3:
    case 8:
        w.put("who-is "sv);
        put_link_address(w, arp.data + tha, hln);
        w.put(" tell "sv);
        put_link_address(w, arp.data + sha, hln);
        break;
    case 4:
        put_link_address(w, arp.data + tha, hln);
        w.put(" at "sv);
        put_ip(tpa);
        break;
    case 9:
        put_link_address(w, arp.data + sha, hln);
        w.put(" at "sv);
        put_ip(spa);
        break;
    default:
        put_hex_lines(w, arp.data, arp.size, true);
        return;
    }
    w.put(", length "sv);
    w.dec(length);
}

// An 802.3 frame's LLC header, as far as tcpdump's words for it are
// decoded: SNAP with an ethertype (decoded on), the spanning tree and IP
// SAPs. False: another SAP or control field, left to the caller.
bool print_llc(Writer& w, const Bytes& llc, size_t length, const DecodeOptions& o) noexcept
{
    const uint8_t dsap = llc.u8(0);
    const uint8_t ssap = llc.u8(1);
    if (o.link_header) {
        const std::string_view name = dsap == 0xaa ? "SNAP"sv : dsap == 0x42 ? "STP"sv : "IP"sv;
        w.put("LLC, dsap "sv);
        w.put(name);
        w.put(" (0x"sv);
        w.hex(dsap & 0xfe, 2);
        w.put(dsap & 1 ? ") Group, ssap "sv : ") Individual, ssap "sv);
        w.put(name);
        w.put(" (0x"sv);
        w.hex(ssap & 0xfe, 2);
        w.put(ssap & 1 ? ") Response, ctrl 0x03: "sv : ") Command, ctrl 0x03: "sv);
    }
    const Bytes data = llc.from(3);
    const size_t rest = length - 3;
    if (dsap == 0x42) {
        print_stp(w, data, rest, o);
        return true;
    }
    if (dsap == 0x06) {
        print_ipv4(w, data, rest, o);
        return true;
    }
    // SNAP: an organisation code and a protocol; code 0 carries an ethertype.
    if (!data.has(0, 5) || rest < 5) {
        w.put(" [|snap]"sv);
        return true;
    }
    const uint32_t oui = uint32_t{data.u8(0)} << 16 | data.u16(1);
    const uint16_t ethertype = data.u16(3);
    if (o.link_header) {
        w.put("oui "sv);
        w.put(oui == 0 ? "Ethernet"sv : "Unknown"sv);
        w.put(" (0x"sv);
        w.hex(oui, 6);
        w.put(oui == 0 ? "), ethertype "sv : "), pid "sv);
        if (const char* name = oui == 0 ? ethertype_name(ethertype) : nullptr)
            w.put(std::string_view(name));
        else
            w.put("Unknown"sv);
        w.put(" (0x"sv);
        w.hex(ethertype, 4);
        w.put("), length "sv);
        w.dec(rest - 5);
        w.put(": "sv);
    }
    const Bytes inner = data.from(5);
    if (oui != 0 || !print_ethertype_payload(w, ethertype, inner, rest - 5, o)) {
        w.put("SNAP, oui 0x"sv);
        w.hex(oui, 6);
        w.put(", type 0x"sv);
        w.hex(ethertype, 4);
        w.put(", length "sv);
        w.dec(rest);
    }
    return true;
}

} // namespace xdpcap::text::detail
