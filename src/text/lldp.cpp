// LLDP as tcpdump 4.99.3 prints it: the length and the system name, and
// with -v every TLV: chassis and port IDs, TTL, descriptions, capabilities,
// management addresses, and the IEEE 802.1, 802.3 and IANA organisation
// TLVs; others (LLDP-MED, DCBX, 802.1's DCB TLVs) as hex, as tcpdump shows
// the TLVs it does not know.
#include "text/layers.hpp"

#include <initializer_list>
#include <utility>

namespace xdpcap::text::detail {

using namespace std::string_view_literals;

namespace {

enum : uint8_t {
    kEnd = 0, kChassisId = 1, kPortId = 2, kTimeToLive = 3, kPortDescription = 4, kSystemName = 5,
    kSystemDescription = 6, kSystemCapabilities = 7, kManagementAddress = 8, kOrganisation = 127,
};

constexpr uint32_t kOuiIeee8021 = 0x0080c2;
constexpr uint32_t kOuiIeee8023 = 0x00120f;
constexpr uint32_t kOuiIana = 0x00005e;
constexpr uint32_t kOuiTia = 0x0012bb;
constexpr uint32_t kOuiDcbx = 0x001b21;

using Names = std::initializer_list<std::pair<uint32_t, std::string_view>>;

std::string_view name_of(uint32_t value, Names names, std::string_view otherwise) noexcept
{
    for (const auto& [key, name] : names) {
        if (key == value)
            return name;
    }
    return otherwise;
}

// "AFI IPv4 (1): 198.18.0.1"; false where the address is too short.
bool put_network_address(Writer& w, const Bytes& b, size_t at, size_t length) noexcept
{
    if (length < 1)
        return false;
    const uint8_t family = b.u8(at);
    --length;
    const std::string_view name =
        name_of(family,
                {{0, "Reserved"sv}, {1, "IPv4"sv}, {2, "IPv6"sv}, {3, "NSAP"sv}, {4, "HDLC"sv}, {5, "BBN 1822"sv},
                 {6, "802"sv}, {7, "E.163"sv}, {8, "E.164"sv}, {9, "F.69"sv}, {10, "X.121"sv}, {11, "Novell IPX"sv},
                 {12, "Appletalk"sv}, {13, "Decnet IV"sv}, {14, "Banyan Vines"sv},
                 {15, "E.164 with NSAP subaddress"sv}, {25, "VPLS"sv}, {196, "Layer-2 VPN"sv}},
                "Unknown"sv);
    const size_t need = family == 1 ? 4 : family == 2 ? 16 : family == 6 ? 6 : 0;
    if (need && length < need)
        return false;
    w.put("AFI "sv, name, " ("sv, family, ')');
    if (need == 0) {
        w.put(", no AF printer !"sv);
        return true;
    }
    w.put(": "sv);
    if (family == 1)
        w.put(ipv4_text(b.data + at + 1).view());
    else if (family == 2)
        w.put(ipv6_text(b.data + at + 1).view());
    else
        put_mac(w, b.data + at + 1);
    return true;
}

// A chassis or port ID: its subtype and value. Returns false where
// tcpdump calls the TLV cut; `hexdump` set where it dumps it.
bool put_id(Writer& w, const Bytes& t, size_t length, bool chassis, bool& hexdump) noexcept
{
    if (length < 2)
        return false;
    const uint8_t subtype = t.u8(0);
    w.put("\n\t  Subtype "sv);
    w.put(chassis ? name_of(subtype,
                            {{1, "Chassis component"sv}, {2, "Interface alias"sv}, {3, "Port component"sv},
                             {4, "MAC address"sv}, {5, "Network address"sv}, {6, "Interface name"sv},
                             {7, "Local"sv}},
                            "Unknown"sv)
                  : name_of(subtype,
                            {{1, "Interface alias"sv}, {2, "Port component"sv}, {3, "MAC address"sv},
                             {4, "Network Address"sv}, {5, "Interface Name"sv}, {6, "Agent circuit ID"sv},
                             {7, "Local"sv}},
                            "Unknown"sv));
    w.put(" ("sv, subtype, "): "sv);
    const uint8_t mac = chassis ? 4 : 3;
    const uint8_t network = chassis ? 5 : 4;
    if (subtype == mac) {
        if (length < 7)
            return false;
        put_mac(w, t.data + 1);
    } else if (subtype == network) {
        return put_network_address(w, t, 1, length - 1);
    } else if (subtype >= 1 && subtype <= 7) {
        put_nul_padded(w, t, 1, length - 1);
    } else {
        hexdump = true;
    }
    return true;
}

bool put_management_address(Writer& w, const Bytes& t, size_t length) noexcept
{
    if (length < 1)
        return false;
    const size_t address_length = t.u8(0);
    if (length - 1 < address_length)
        return false;
    char text[96];
    Writer address(text, sizeof text);
    if (!put_network_address(address, t, 1, address_length))
        return false;
    w.put("\n\t  Management Address length "sv, address_length, ", "sv, address.view());
    size_t at = 1 + address_length;
    if (length - at < 5)
        return false;
    const uint8_t numbering = t.u8(at);
    w.put("\n\t  "sv, name_of(numbering, {{2, "Interface Index"sv}, {3, "System Port Number"sv}}, "Unknown"sv),
          " Interface Numbering ("sv, numbering, "): "sv, t.u32(at + 1));
    at += 5;
    if (at < length) {
        const size_t oid_length = t.u8(at);
        if (length - at < 1 + oid_length)
            return false;
        if (oid_length) {
            w.put("\n\t  OID length "sv, oid_length);
            put_nul_padded(w, t, at + 1, oid_length);
        }
    }
    return true;
}

void put_aggregation(Writer& w, const Bytes& t) noexcept
{
    w.put("\n\t    aggregation status ["sv);
    put_flag_names(w, t.u8(4), {{1, "supported"sv}, {2, "enabled"sv}}, "none"sv);
    w.put("], aggregation port ID "sv, t.u32(5));
}

// An organisation's TLV's subtype on a line of its own.
void put_subtype(Writer& w, uint8_t subtype, std::string_view name) noexcept
{
    w.put("\n\t  "sv, name, " Subtype ("sv, subtype, ')');
}

// IEEE 802.1's TLVs tcpdump decodes for every bridge (VLANs, protocols,
// aggregation); true where it dumps the TLV instead.
bool put_ieee_8021(Writer& w, const Bytes& t, size_t length) noexcept
{
    if (length < 4)
        return false;
    const uint8_t subtype = t.u8(3);
    put_subtype(w, subtype,
                name_of(subtype,
                        {{1, "Port VLAN Id"sv}, {2, "Port and Protocol VLAN ID"sv}, {3, "VLAN name"sv},
                         {4, "Protocol Identity"sv}, {7, "Link aggregation"sv}, {8, "Congestion Notification"sv},
                         {9, "ETS Configuration"sv}, {10, "ETS Recommendation"sv},
                         {11, "Priority Flow Control Configuration"sv}, {12, "Application Priority"sv}, {13, "EVB"sv},
                         {14, "CDCP"sv}},
                        "unknown"sv));
    switch (subtype) {
    case 1:
        if (length >= 6) {
            w.put("\n\t    port vlan id (PVID): "sv, t.u16(4));
        }
        return false;
    case 2:
        if (length >= 7) {
            w.put("\n\t    port and protocol vlan id (PPVID): "sv, t.u16(5), ", flags ["sv);
            put_flag_names(w, t.u8(4), {{2, "supported"sv}, {4, "enabled"sv}}, "none"sv);
            w.put("] (0x"sv, Hex{t.u8(4), 2}, ')');
        }
        return false;
    case 3: {
        if (length < 6)
            return false;
        w.put("\n\t    vlan id (VID): "sv, t.u16(4));
        if (length < 7 || length < 7 + size_t{t.u8(6)})
            return false;
        w.put("\n\t    vlan name: "sv);
        put_nul_padded(w, t, 7, t.u8(6));
        return false;
    }
    case 4:
        if (length < 5 || length < 5 + size_t{t.u8(4)})
            return false;
        w.put("\n\t    protocol identity: "sv);
        put_nul_padded(w, t, 5, t.u8(4));
        return false;
    case 7:
        if (length >= 9)
            put_aggregation(w, t);
        return false;
    default:
        // The data centre bridging TLVs: in hex, where tcpdump decodes them.
        return true;
    }
}

bool put_ieee_8023(Writer& w, const Bytes& t, size_t length) noexcept
{
    if (length < 4)
        return false;
    const uint8_t subtype = t.u8(3);
    put_subtype(w, subtype,
                name_of(subtype,
                        {{1, "MAC/PHY configuration/status"sv}, {2, "Power via MDI"sv}, {3, "Link aggregation"sv},
                         {4, "Max frame size"sv}},
                        "unknown"sv));
    switch (subtype) {
    case 1: {
        if (length < 9)
            return false;
        w.put("\n\t    autonegotiation ["sv);
        put_flag_names(w, t.u8(4), {{1, "supported"sv}, {2, "enabled"sv}}, "none"sv);
        w.put("] (0x"sv, Hex{t.u8(4), 2}, ")\n\t    PMD autoneg capability ["sv);
        put_flag_names(w, t.u16(5),
                 {{1u << 14, "10BASE-T hdx"sv}, {1u << 13, "10BASE-T fdx"sv}, {1u << 12, "100BASE-T4"sv},
                  {1u << 11, "100BASE-TX hdx"sv}, {1u << 10, "100BASE-TX fdx"sv}, {1u << 9, "100BASE-T2 hdx"sv},
                  {1u << 8, "100BASE-T2 fdx"sv}, {1u << 7, "Pause for fdx links"sv},
                  {1u << 6, "Asym PAUSE for fdx"sv}, {1u << 5, "Sym PAUSE for fdx"sv},
                  {1u << 4, "Asym and Sym PAUSE for fdx"sv}, {1u << 3, "1000BASE-{X LX SX CX} hdx"sv},
                  {1u << 2, "1000BASE-{X LX SX CX} fdx"sv}, {1u << 1, "1000BASE-T hdx"sv},
                  {1u << 0, "1000BASE-T fdx"sv}},
                 "unknown"sv);
        w.put("] (0x"sv, Hex{t.u16(5), 4}, ")\n\t    MAU type "sv);
        constexpr std::string_view kMau[] = {
            "Unknown"sv, "AUI"sv, "10BASE_5"sv, "FOIRL"sv, "10BASE2"sv, "10BASET duplex mode unknown"sv,
            "10BASEFP"sv, "10BASEFB"sv, "10BASEFL duplex mode unknown"sv, "10BROAD36"sv, "10BASET hdx"sv,
            "10BASET fdx"sv, "10BASEFL hdx"sv, "10BASEFL fdx"sv, "100BASET4"sv, "100BASETX hdx"sv,
            "100BASETX fdx"sv, "100BASEFX hdx"sv, "100BASEFX fdx"sv, "100BASET2 hdx"sv, "100BASET2 fdx"sv,
            "1000BASEX hdx"sv, "1000BASEX fdx"sv, "1000BASELX hdx"sv, "1000BASELX fdx"sv, "1000BASESX hdx"sv,
            "1000BASESX fdx"sv, "1000BASECX hdx"sv, "1000BASECX fdx"sv, "1000BASET hdx"sv, "1000BASET fdx"sv,
            "10GBASEX"sv, "10GBASELX4"sv, "10GBASER"sv, "10GBASEER"sv, "10GBASELR"sv, "10GBASESR"sv,
            "10GBASEW"sv, "10GBASEEW"sv, "10GBASELW"sv, "10GBASESW"sv};
        const uint16_t mau = t.u16(7);
        w.put(mau < std::size(kMau) ? kMau[mau] : "unknown"sv, " (0x"sv, Hex{mau, 4}, ')');
        return false;
    }
    case 2:
        if (length < 7)
            return false;
        w.put("\n\t    MDI power support ["sv);
        put_flag_names(w, t.u8(4), {{1, "PSE"sv}, {2, "supported"sv}, {4, "enabled"sv}, {8, "can be controlled"sv}},
                 "none"sv);
        w.put("], power pair "sv, name_of(t.u8(5), {{1, "signal"sv}, {2, "spare"sv}}, "unknown"sv), ", power class "sv);
        w.put(name_of(t.u8(6), {{1, "class0"sv}, {2, "class1"sv}, {3, "class2"sv}, {4, "class3"sv}, {5, "class4"sv}},
                      "unknown"sv));
        return false;
    case 3:
        if (length >= 9)
            put_aggregation(w, t);
        return false;
    case 4:
        if (length >= 6) {
            w.put("\n\t    MTU size "sv, t.u16(4));
        }
        return false;
    default:
        return true;
    }
}

bool put_iana(Writer& w, const Bytes& t, size_t length) noexcept
{
    if (length < 8)
        return false;
    const uint8_t subtype = t.u8(3);
    put_subtype(w, subtype, subtype == 1 ? "MUD-URL"sv : "unknown"sv);
    if (subtype != 1)
        return true;
    w.put("\n\t  MUD-URL="sv);
    put_escaped(w, t.data + 4, length - 4);
    return false;
}

void put_system_capabilities(Writer& w, const Bytes& t) noexcept
{
    for (const auto& [label, offset] : {std::pair{"\n\t  System  Capabilities ["sv, size_t{0}},
                                        std::pair{"\n\t  Enabled Capabilities ["sv, size_t{2}}}) {
        w.put(label);
        put_flag_names(w, t.u16(offset),
                       {{1, "Other"sv}, {2, "Repeater"sv}, {4, "Bridge"sv}, {8, "WLAN AP"sv}, {16, "Router"sv},
                        {32, "Telephone"sv}, {64, "Docsis"sv}, {128, "Station Only"sv}},
                       "none"sv);
        w.put("] (0x"sv, Hex{t.u16(offset), 4}, ')');
    }
}

// An organisation's TLV of at least 3 bytes; true where the rest is shown
// in hex.
bool put_organisation(Writer& w, const Bytes& t, size_t length) noexcept
{
    const uint32_t oui = uint32_t{t.u8(0)} << 16 | t.u16(1);
    w.put(": OUI "sv,
          name_of(oui,
                  {{kOuiIeee8021, "Ethernet bridged"sv}, {kOuiIeee8023, "IEEE 802.3 Private"sv}, {kOuiIana, "IANA"sv},
                   {kOuiTia, "ANSI/TIA"sv}, {kOuiDcbx, "DCBX"sv}},
                  "Unknown"sv),
          " (0x"sv, Hex{oui, 6}, ')');
    return oui == kOuiIeee8021 ? put_ieee_8021(w, t, length)
        : oui == kOuiIeee8023  ? put_ieee_8023(w, t, length)
        : oui == kOuiIana      ? put_iana(w, t, length)
                               : true; // LLDP-MED and DCBX: in hex
}

// A TLV's value, all `length` bytes captured: most only with -v, the
// system name always. False where it is too short for its fields;
// `hexdump` set where its rest is shown in hex.
bool put_tlv(Writer& w, uint8_t type, const Bytes& t, size_t length, bool verbose, bool& hexdump) noexcept
{
    switch (type) {
    case kChassisId:
    case kPortId:
        return !verbose || put_id(w, t, length, type == kChassisId, hexdump);
    case kTimeToLive:
        if (verbose && length < 2)
            return false;
        if (verbose)
            w.put(": TTL "sv, t.u16(0), 's');
        return true;
    case kPortDescription:
    case kSystemName: // the name also without -v
        if (verbose || type == kSystemName) {
            w.put(": "sv);
            put_nul_padded(w, t, 0, length);
        }
        return true;
    case kSystemDescription:
        if (verbose) {
            w.put("\n\t  "sv);
            put_nul_padded(w, t, 0, length);
        }
        return true;
    case kSystemCapabilities:
        if (verbose && length < 4)
            return false;
        if (verbose)
            put_system_capabilities(w, t);
        return true;
    case kManagementAddress:
        return !verbose || put_management_address(w, t, length);
    case kOrganisation:
        if (verbose && length < 3)
            return false;
        if (verbose)
            hexdump = put_organisation(w, t, length);
        return true;
    default:
        hexdump = true;
        return true;
    }
}

} // namespace

void print_lldp(Writer& w, const Bytes& lldp, size_t length, const DecodeOptions& o) noexcept
{
    w.put("LLDP, length "sv, length);
    const bool verbose = o.verbose != 0;
    size_t at = 0;
    size_t left = length;
    while (left >= 2) {
        if (!lldp.has(at, 2)) {
            put_truncated(w, "lldp"sv);
            return;
        }
        const uint8_t type = static_cast<uint8_t>(lldp.u16(at) >> 9);
        const size_t tlv_length = lldp.u16(at) & 0x1ffu;
        at += 2;
        left -= 2;
        if (verbose) {
            w.put("\n\t"sv,
                  name_of(type,
                          {{kEnd, "End"sv}, {kChassisId, "Chassis ID"sv}, {kPortId, "Port ID"sv},
                           {kTimeToLive, "Time to Live"sv}, {kPortDescription, "Port Description"sv},
                           {kSystemName, "System Name"sv}, {kSystemDescription, "System Description"sv},
                           {kSystemCapabilities, "System Capabilities"sv},
                           {kManagementAddress, "Management Address"sv}, {kOrganisation, "Organization specific"sv}},
                          "Unknown"sv),
                  " TLV ("sv, type, "), length "sv, tlv_length);
        }
        if (type == kEnd || tlv_length == 0)
            return;
        if (!lldp.has(at, tlv_length) || left < tlv_length) {
            put_truncated(w, "lldp"sv);
            return;
        }
        const Bytes t = lldp.from(at).first(tlv_length);
        bool hexdump = false;
        if (!put_tlv(w, type, t, tlv_length, verbose, hexdump)) {
            put_truncated(w, "lldp"sv);
            return;
        }
        if (o.verbose > 1 || (verbose && hexdump))
            put_unknown_data(w, t, tlv_length, "\n\t  "sv);
        at += tlv_length;
        left -= tlv_length;
    }
}

} // namespace xdpcap::text::detail
