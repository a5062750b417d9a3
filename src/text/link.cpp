// ARP, RARP, 802.3 LLC/SNAP and STP, as tcpdump 4.99 prints them.
#include "text/layers.hpp"

#include <iterator>
#include <utility>

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
    w.put(hundredths / 100, '.');
    w.padded(hundredths % 100, 2);
    w.put('s');
}

constexpr std::string_view kPortRoles[] = {"Unknown"sv, "Alternate"sv, "Root"sv, "Designated"sv};

// "message-age 1.00s, max-age 20.00s, ...": a BPDU's four timers.
void put_stp_timers(Writer& w, const Bytes& bpdu) noexcept
{
    constexpr std::string_view kTimers[] = {"\n\tmessage-age "sv, ", max-age "sv, ", hello-time "sv,
                                            ", forwarding-delay "sv};
    for (size_t i = 0; i < std::size(kTimers); ++i) {
        w.put(kTimers[i]);
        put_stp_seconds(w, bpdu.u16(27 + 2 * i));
    }
}

// -v: a configuration BPDU's timers, root and (802.1w) port role.
void put_stp_details(Writer& w, const Bytes& bpdu, uint8_t version, uint8_t flags, const DecodeOptions& o) noexcept
{
    if (abandoned_at(w, bpdu, 0, 35, "stp"sv, o))
        return;
    put_stp_timers(w, bpdu);
    w.put("\n\troot-id "sv);
    put_bridge_id(w, bpdu, 5);
    w.put(", root-pathcost "sv, bpdu.u32(13));
    if (version == 2) {
        w.put(", port-role "sv, kPortRoles[(flags >> 2) & 3]);
    }
}

void put_stp_flags(Writer& w, uint8_t flags) noexcept
{
    put_flag_names(w, flags, {{0x01, "Topology change"sv}, {0x02, "Proposal"sv}, {0x10, "Learn"sv},
                              {0x20, "Forward"sv}, {0x40, "Agreement"sv}, {0x80, "Topology change ACK"sv}});
}

void put_words(Writer& w, const Bytes& b, size_t at, size_t count) noexcept
{
    for (size_t i = 0; i < count; ++i)
        w.hex(b.u32(at + 4 * i), 8);
}

// -v: an MSTP BPDU's CIST and MSTIs (tcpdump's stp_print_mstp_bpdu), each
// part written once its bytes were read; false where the capture ends (the
// packet is abandoned).
bool put_mstp_details(Writer& w, const Bytes& bpdu, uint8_t flags) noexcept
{
    w.put("\n\tport-role "sv, kPortRoles[(flags >> 2) & 3], ", "sv);
    if (!bpdu.has(0, 17))
        return false;
    w.put("CIST root-id "sv);
    put_bridge_id(w, bpdu, 5);
    w.put(", CIST ext-pathcost "sv, bpdu.u32(13));
    if (!bpdu.has(0, 25))
        return false;
    w.put("\n\tCIST regional-root-id "sv);
    put_bridge_id(w, bpdu, 17);
    w.put(", "sv);
    if (!bpdu.has(0, 27))
        return false;
    w.put("CIST port-id "sv, Hex{bpdu.u16(25), 4}, ',');
    if (!bpdu.has(0, 35))
        return false;
    put_stp_timers(w, bpdu);
    if (!bpdu.has(0, 38))
        return false;
    w.put("\n\tv3len "sv, bpdu.u16(36), ", MCID Name "sv);
    if (!put_nul_padded(w, bpdu, 39, 32) || !bpdu.has(0, 89))
        return false;
    w.put(", rev "sv, bpdu.u16(71), ",\n\t\tdigest "sv);
    put_words(w, bpdu, 73, 4);
    w.put(", "sv);
    if (!bpdu.has(0, 93))
        return false;
    w.put("CIST int-root-pathcost "sv, bpdu.u32(89), ',');
    if (!bpdu.has(0, 101))
        return false;
    w.put("\n\tCIST bridge-id "sv);
    put_bridge_id(w, bpdu, 93);
    w.put(", "sv);
    if (!bpdu.has(0, 102))
        return false;
    w.put("CIST remaining-hops "sv, bpdu.u8(101));
    const size_t v3_length = bpdu.u16(36);
    if (v3_length > 64) {
        for (size_t left = v3_length - 64, at = 102; left >= 16; left -= 16, at += 16) {
            if (!bpdu.has(at, 3))
                return false;
            w.put("\n\tMSTI "sv, bpdu.u16(at + 1) & 0x0fffu, ", Flags ["sv);
            put_stp_flags(w, bpdu.u8(at));
            w.put("], port-role "sv, kPortRoles[(bpdu.u8(at) >> 2) & 3]);
            if (!bpdu.has(at, 13))
                return false;
            w.put("\n\t\tMSTI regional-root-id "sv);
            put_bridge_id(w, bpdu, at + 1);
            w.put(", pathcost "sv, bpdu.u32(at + 9));
            if (!bpdu.has(at, 16))
                return false;
            w.put("\n\t\tMSTI bridge-prio "sv, bpdu.u8(at + 13) >> 4, ", port-prio "sv, bpdu.u8(at + 14) >> 4,
                  ", hops "sv, bpdu.u8(at + 15));
        }
    }
    return true;
}

// -v: SPB's agreement fields after the MSTP part (tcpdump's
// stp_print_spb_bpdu), from `at`; false where the capture ends.
bool put_spb_details(Writer& w, const Bytes& bpdu, size_t at) noexcept
{
    if (!bpdu.has(at, 2))
        return false;
    w.put("\n\tv4len "sv, bpdu.u16(at), ", AUXMCID Name "sv);
    if (!put_nul_padded(w, bpdu, at + 3, 32) || !bpdu.has(at, 53))
        return false;
    w.put(", Rev "sv, bpdu.u16(at + 35), ",\n\t\tdigest "sv);
    put_words(w, bpdu, at + 37, 4);
    if (!bpdu.has(at, 87))
        return false;
    const uint8_t agreement = bpdu.u8(at + 53);
    const uint8_t format = bpdu.u8(at + 55);
    const uint8_t convention = bpdu.u8(at + 56);
    w.put("\n\tAgreement num "sv, agreement >> 6, ", Discarded Agreement num "sv, (agreement >> 4) & 3,
          ", Agreement valid-flag "sv, (agreement >> 3) & 1, ",\n\tRestricted role-flag: "sv, (agreement >> 2) & 1,
          ", Format id "sv, format >> 4, " cap "sv, format, ", Convention id "sv, convention >> 4, " cap "sv,
          convention, ",\n\tEdge count "sv, bpdu.u16(at + 57), ", Agreement digest "sv);
    put_words(w, bpdu, at + 67, 5);
    return true;
}

// MSTP (802.1s) and SPB (802.1aq) BPDUs: the CIST flags; with -v the rest.
void print_mstp(Writer& w, const Bytes& bpdu, size_t length, bool spb, const DecodeOptions& o) noexcept
{
    constexpr size_t kMinimum = 102;
    constexpr size_t kFixed = 36; // the BPDU's fields up to its version 1 length
    if (length < kMinimum) {
        w.put(" (invalid)"sv);
        return;
    }
    // The version 1 length must be 0; then the version 3 length holds.
    if (abandoned_at(w, bpdu, 35, 1, "stp"sv, o))
        return;
    if (bpdu.u8(35) != 0) {
        w.put(" (invalid)"sv);
        return;
    }
    if (abandoned_at(w, bpdu, 36, 2, "stp"sv, o))
        return;
    const size_t mstp_length = size_t{bpdu.u16(36)} + 2;
    if (length < kFixed + mstp_length) {
        w.put(" (invalid)"sv);
        return;
    }
    const uint8_t flags = bpdu.u8(4);
    w.put(", CIST Flags ["sv);
    put_stp_flags(w, flags);
    w.put("], length "sv, length);
    if (o.verbose && !put_mstp_details(w, bpdu, flags)) {
        put_abandoned(w, "stp"sv, o);
        return;
    }
    if (!spb)
        return;
    const size_t at = kFixed + mstp_length;
    if (abandoned_at(w, bpdu, at, 2, "stp"sv, o))
        return;
    const size_t spb_length = size_t{bpdu.u16(at)} + 2;
    if (length < at + spb_length || spb_length < 87) {
        w.put(" (invalid)"sv);
        return;
    }
    if (o.verbose && !put_spb_details(w, bpdu, at))
        put_abandoned(w, "stp"sv, o);
}

// A version or BPDU type by name, or tcpdump's words for one it does not
// know and false.
bool put_stp_name(Writer& w, uint8_t value, std::initializer_list<std::pair<uint8_t, std::string_view>> names,
                  std::string_view unknown) noexcept
{
    for (const auto& [known, name] : names) {
        if (known == value) {
            w.put(name);
            return true;
        }
    }
    w.put(unknown, " (0x"sv, Hex{value, 2}, ')');
    return false;
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
    if (abandoned_at(w, bpdu, 0, 2, "stp"sv, o))
        return;
    if (bpdu.u16(0) != 0) {
        w.put("unknown STP version, length "sv, length);
        return;
    }
    if (abandoned_at(w, bpdu, 2, 1, "stp"sv, o))
        return;
    const uint8_t version = bpdu.u8(2);
    w.put("STP "sv);
    if (!put_stp_name(w, version, {{0, "802.1d"sv}, {2, "802.1w"sv}, {3, "802.1s"sv}, {4, "802.1aq"sv}},
                      "Unknown STP protocol"sv))
        return;
    if (abandoned_at(w, bpdu, 3, 1, "stp"sv, o))
        return;
    const uint8_t type = bpdu.u8(3);
    w.put(", "sv);
    // A topology change says no more.
    if (!put_stp_name(w, type, {{0x00, "Config"sv}, {0x02, "Rapid STP"sv}, {0x80, "Topology Change"sv}},
                      "Unknown BPDU Type"sv) ||
        type == 0x80)
        return;
    const bool rapid = type == 0x02;
    // A rapid BPDU of 802.1d: tcpdump says no more.
    if (rapid && version == 0)
        return;
    if (rapid && version >= 3) {
        print_mstp(w, bpdu, length, version == 4, o);
        return;
    }
    if (length < (rapid ? 36u : 35u)) {
        w.put(" (invalid)"sv);
        return;
    }
    if (abandoned_at(w, bpdu, 4, 1, "stp"sv, o))
        return;
    const uint8_t flags = bpdu.u8(4);
    w.put(", Flags ["sv);
    put_stp_flags(w, flags);
    w.put(']');
    if (abandoned_at(w, bpdu, 17, 10, "stp"sv, o))
        return;
    w.put(", bridge-id "sv);
    put_bridge_id(w, bpdu, 17);
    w.put('.', Hex{bpdu.u16(25), 4}, ", length "sv, length);
    if (o.verbose)
        put_stp_details(w, bpdu, version, flags, o);
}

} // namespace

namespace {

// An ARP packet's address fields: offsets and lengths.
struct ArpAddresses {
    const Bytes& arp;
    size_t hln;
    size_t pln;
    bool ip_protocol;
    size_t sha = 8, spa = sha + hln, tha = spa + pln, tpa = tha + hln;

    void put_link(Writer& w, size_t at) const noexcept { put_link_address(w, arp.data + at, hln); }
    // A protocol address, or tcpdump's words for why it is none.
    void put_ip(Writer& w, size_t at) const noexcept
    {
        if (!ip_protocol)
            w.put("<wrong proto type>"sv);
        else if (pln != 4)
            w.put("<wrong len>"sv);
        else
            w.put(ipv4_text(arp.data + at).view());
    }
};

// The hardware and protocol types and their address lengths.
void put_arp_types(Writer& w, uint16_t hardware, uint16_t protocol, const ArpAddresses& a) noexcept
{
    if (const char* name = arp_hardware_name(hardware))
        w.put(std::string_view(name));
    else
        w.put("Unknown Hardware ("sv, hardware, ')');
    w.put(" (len "sv, a.hln, "), "sv);
    if (const char* name = ethertype_name(protocol))
        w.put(std::string_view(name));
    else
        w.put("Unknown Protocol (0x"sv, Hex{protocol, 4}, ')');
    w.put(" (len "sv, a.pln, ')');
}

// The operation and its addresses; false for an unknown one, dumped in hex.
bool put_arp_operation(Writer& w, uint16_t op, const ArpAddresses& a) noexcept
{
    // tcpdump's names; 5 to 7 are none of its.
    constexpr std::string_view kOps[] = {"Request"sv, "Reply"sv, "Reverse Request"sv, "Reverse Reply"sv, ""sv, ""sv,
                                         ""sv, "Inverse Request"sv, "Inverse Reply"sv, "NACK Reply"sv};
    if (op >= 1 && op <= std::size(kOps) && !kOps[op - 1].empty())
        w.put(kOps[op - 1], ' ');
    else
        w.put("Unknown ("sv, op, ") "sv);
    switch (op) {
    case 1: {
        w.put("who-has "sv);
        a.put_ip(w, a.tpa);
        bool zero = true;
        for (size_t i = 0; i < a.hln; ++i)
            zero = zero && a.arp.u8(a.tha + i) == 0;
        if (!zero) {
            w.put(" ("sv);
            a.put_link(w, a.tha);
            w.put(')');
        }
        w.put(" tell "sv);
        a.put_ip(w, a.spa);
        return true;
    }
    case 2:
        a.put_ip(w, a.spa);
        w.put(" is-at "sv);
        a.put_link(w, a.sha);
        return true;
    case 3:
    case 8:
        w.put("who-is "sv);
        a.put_link(w, a.tha);
        w.put(" tell "sv);
        a.put_link(w, a.sha);
        return true;
    case 4:
        a.put_link(w, a.tha);
        w.put(" at "sv);
        a.put_ip(w, a.tpa);
        return true;
    case 9:
        a.put_link(w, a.sha);
        w.put(" at "sv);
        a.put_ip(w, a.spa);
        return true;
    default:
        return false;
    }
}

} // namespace

// ARP and RARP (ethertype 0x8035) alike, as tcpdump 4.99 prints them: any
// hardware and protocol address lengths; an address family it cannot show
// as IPv4 by its types and lengths; an unknown operation dumped in hex.
void print_arp(Writer& w, const Bytes& arp, size_t length, const DecodeOptions& o) noexcept
{
    Cursor c(arp);
    const uint16_t hardware = c.u16(0);
    const uint16_t protocol = c.u16(2);
    constexpr uint16_t kEtherTrail = 0x1000;
    const ArpAddresses a{arp, c.u8(4), c.u8(5), protocol == kEtherIPv4 || protocol == kEtherTrail};
    const uint16_t op = c.u16(6);
    if (!c.ok() || !c.need(0, a.tpa + a.pln)) {
        put_abandoned(w, "arp"sv, o);
        return;
    }
    if (!o.link_header)
        w.put("ARP, "sv);
    // With -v always, else where the addresses are not Ethernet's and IPv4's.
    if (!a.ip_protocol || a.pln != 4 || a.hln == 0 || o.verbose) {
        put_arp_types(w, hardware, protocol, a);
        if (!o.verbose) {
            w.put(", length "sv, length);
            return;
        }
        w.put(", "sv);
    }
    if (put_arp_operation(w, op, a))
        w.put(", length "sv, length);
    else
        put_hex_lines(w, arp.data, arp.size, true);
}

namespace {

// tcpdump's names for LLC SAPs; nullptr for others.
const char* sap_name(uint8_t sap) noexcept
{
    switch (sap) {
    case 0x00: return "Null";
    case 0xff: return "Global";
    case 0x02: return "802.1B I";
    case 0x03: return "802.1B G";
    case 0x06: return "IP";
    case 0x04: return "SNA";
    case 0x0e: return "ProWay NM";
    case 0x42: return "STP";
    case 0x4e: return "RS511";
    case 0x7e: return "ISO8208";
    case 0x8e: return "ProWay";
    case 0xaa: return "SNAP";
    case 0xe0: return "IPX";
    case 0xf0: return "NetBeui";
    case 0xfe: return "OSI";
    default: return nullptr;
    }
}

// A SAP by name, or tcpdump's words for one it does not know.
void put_sap(Writer& w, uint8_t sap, std::string_view unknown) noexcept
{
    if (const char* name = sap_name(sap)) {
        w.put(std::string_view(name));
    } else {
        w.put(unknown, " 0x"sv, Hex{sap, 2});
    }
}

// "Command", "Response", "Poll", "Final": the SAP's response bit with the
// control field's poll/final bit.
std::string_view llc_flags(uint32_t bits) noexcept
{
    switch (bits) {
    case 0x000: return "Command"sv;
    case 0x001: return "Response"sv;
    case 0x010:
    case 0x100: return "Poll"sv;
    case 0x011:
    case 0x101: return "Final"sv;
    default: return "?"sv;
    }
}

// SNAP after its LLC header: an organisation code and a protocol; code 0
// carries an ethertype.
void print_snap(Writer& w, const Bytes& data, size_t rest, const DecodeOptions& o) noexcept
{
    if (!data.has(0, 5) || rest < 5) {
        w.put(" [|snap]"sv);
        return;
    }
    const uint32_t oui = uint32_t{data.u8(0)} << 16 | data.u16(1);
    const uint16_t ethertype = data.u16(3);
    if (o.link_header) {
        w.put("oui "sv, oui == 0 ? "Ethernet"sv : "Unknown"sv, " (0x"sv, Hex{oui, 6},
              oui == 0 ? "), ethertype "sv : "), pid "sv);
        if (const char* name = oui == 0 ? ethertype_name(ethertype) : nullptr)
            w.put(std::string_view(name));
        else
            w.put("Unknown"sv);
        w.put(" (0x"sv, Hex{ethertype, 4}, "), length "sv, rest - 5, ": "sv);
    }
    const Bytes inner = data.from(5);
    if (oui != 0 || !print_ethertype_payload(w, ethertype, inner, rest - 5, o)) {
        w.put("SNAP, oui 0x"sv, Hex{oui, 6}, ", type 0x"sv, Hex{ethertype, 4}, ", length "sv, rest);
    }
}

// The LLC header with -e: the SAPs by name, their bits and the control field.
void put_llc_header(Writer& w, uint8_t dsap_field, uint8_t ssap_field, uint32_t control, bool unnumbered) noexcept
{
    const uint8_t dsap = dsap_field & 0xfe;
    const uint8_t ssap = ssap_field & 0xfe;
    const char* dname = sap_name(dsap);
    const char* sname = sap_name(ssap);
    w.put("LLC, dsap "sv, dname ? dname : "Unknown", " (0x"sv, Hex{dsap, 2},
          dsap_field & 1 ? ") Group, ssap "sv : ") Individual, ssap "sv, sname ? sname : "Unknown", " (0x"sv,
          Hex{ssap, 2}, ssap_field & 1 ? ") Response, ctrl 0x"sv : ") Command, ctrl 0x"sv,
          Hex{control, unnumbered ? 2 : 4}, ": "sv);
}

// Without -e the SAPs alone, after the frame's addresses where there are
// both (a Linux cooked header has the sender's only).
void put_llc_saps(Writer& w, uint8_t dsap, uint8_t ssap, const uint8_t* macs) noexcept
{
    if (ssap == dsap) {
        if (macs) {
            put_mac(w, macs + 6);
            w.put(" > "sv);
            put_mac(w, macs);
            w.put(' ');
        }
        put_sap(w, dsap, "Unknown DSAP"sv);
    } else {
        if (macs) {
            put_mac(w, macs + 6);
            w.put(' ');
        }
        put_sap(w, ssap, "Unknown SSAP"sv);
        w.put(" > "sv);
        if (macs) {
            put_mac(w, macs);
            w.put(' ');
        }
        put_sap(w, dsap, "Unknown DSAP"sv);
    }
    w.put(' ');
}

// A U frame: its command and flags, and an exchange of identification's
// format and class. Returns as print_llc().
long put_llc_unnumbered(Writer& w, uint8_t ssap_field, uint32_t control, const Bytes& data, size_t rest,
                        size_t length, size_t header) noexcept
{
    constexpr std::pair<uint8_t, std::string_view> kCommands[] = {
        {0x03, "ui"sv}, {0xe3, "test"sv}, {0xaf, "xid"sv}, {0x63, "ua"sv},
        {0x43, "disc"sv}, {0x0f, "dm"sv}, {0x6f, "sabme"sv}, {0x87, "frmr"sv}};
    const uint8_t command = control & 0xef;
    w.put("Unnumbered, "sv);
    bool named = false;
    for (const auto& [code, name] : kCommands) {
        if (code == command) {
            w.put(name);
            named = true;
        }
    }
    if (!named)
        w.hex(command, 2);
    w.put(", Flags ["sv, llc_flags((ssap_field & 1u) | (control & 0x10u)), "], length "sv, length);
    if ((control & ~0x10u) != 0xaf)
        return -static_cast<long>(header);
    if (rest == 0)
        return static_cast<long>(header);
    if (data.size < 1) {
        put_truncated(w, "llc"sv);
        return static_cast<long>(header);
    }
    if (data.u8(0) != 0x81)
        return -static_cast<long>(header);
    if (data.size < 3 || rest < 3) {
        put_truncated(w, "llc"sv);
        put_hex_lines(w, data.data, data.size, true);
    } else {
        w.put(": "sv);
        w.hex_byte(data.u8(1));
        w.put(' ');
        w.hex_byte(data.u8(2));
    }
    return static_cast<long>(header);
}

} // namespace

// An 802.3 frame's LLC header as tcpdump's llc_print prints it: SNAP with
// an ethertype, the spanning tree and IP SAPs decoded on; another SAP (or
// control field) named, with its frame type, sequence numbers and flags.
long print_llc(Writer& w, const Bytes& llc, size_t length, const uint8_t* macs, const DecodeOptions& o) noexcept
{
    constexpr uint8_t kUi = 0x03;
    // Too short for the header: tcpdump's mark, and the bytes there are
    // (with -q, -x and -X too).
    const auto cut = [&](size_t consumed) {
        put_truncated(w, "llc"sv);
        put_hex_lines(w, llc.data, llc.size, true);
        return static_cast<long>(consumed);
    };
    if (llc.size < 3)
        return cut(llc.size);
    if (length < 3)
        return cut(length);
    const uint8_t dsap_field = llc.u8(0);
    const uint8_t ssap_field = llc.u8(1);
    uint32_t control = llc.u8(2);
    // U frames have a one-byte control field, I and S frames two (little-endian).
    const bool unnumbered = (control & 3) == 3;
    size_t header = 3;
    if (!unnumbered) {
        if (llc.size < 4)
            return cut(llc.size);
        if (length < 4)
            return cut(length);
        control |= uint32_t{llc.u8(3)} << 8;
        header = 4;
    }
    const uint8_t dsap = dsap_field & 0xfe;
    const uint8_t ssap = ssap_field & 0xfe;
    if (o.link_header)
        put_llc_header(w, dsap_field, ssap_field, control, unnumbered);
    const Bytes data = llc.from(header);
    const size_t rest = length - header;
    if (control == kUi && dsap == ssap) {
        switch (dsap) {
        case 0xaa:
            print_snap(w, data, rest, o);
            return static_cast<long>(header + 5);
        case 0x42:
            print_stp(w, data, rest, o);
            return static_cast<long>(header);
        case 0x06:
            print_ipv4(w, data, rest, o);
            return static_cast<long>(header);
        default:
            break;
        }
    }
    if (!o.link_header)
        put_llc_saps(w, dsap, ssap, macs);
    if (unnumbered)
        return put_llc_unnumbered(w, ssap_field, control, data, rest, length, header);
    const std::string_view flags = llc_flags((ssap_field & 1u) | (control & 0x100u));
    if (control & 1) {
        constexpr std::string_view kSupervisory[] = {"Receiver Ready"sv, "Receiver not Ready"sv, "Reject"sv, "?"sv};
        w.put("Supervisory, "sv, kSupervisory[(control >> 2) & 3], ", rcv seq "sv, (control >> 9) & 0x7f,
              ", Flags ["sv, flags, "], length "sv, length);
        return static_cast<long>(header);
    }
    w.put("Information, send seq "sv, (control >> 1) & 0x7f, ", rcv seq "sv, (control >> 9) & 0x7f, ", Flags ["sv,
          flags, "], length "sv, length);
    return -static_cast<long>(header);
}

} // namespace xdpcap::text::detail
