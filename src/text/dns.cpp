// DNS as tcpdump 4.99.3 prints it, with -v and without: a query as
// "ID+ [1au] A? example.com. (40)", a response as
// "ID*- 2/0/1 A 93.184.216.34, RRSIG (227)", with its names, record data,
// EDNS options and malformations in tcpdump's words. Used for UDP and TCP
// port 53 and mDNS (UDP 5353).
#include "text/layers.hpp"

#include <iterator>

namespace xdpcap::text::detail {

using namespace std::string_view_literals;

namespace {

// Offsets into the message; kNone where tcpdump's printer returns NULL.
constexpr size_t kNone = static_cast<size_t>(-1);
constexpr size_t kMaxNameChars = 255;
// Past this much DNS text the line ends as cut: tcpdump prints every record
// however many there are; the line must stay within its bound.
constexpr size_t kMaxDnsText = 4096;

enum : uint16_t {
    kTypeA = 1, kTypeNs = 2, kTypeCname = 5, kTypeSoa = 6, kTypePtr = 12, kTypeMx = 15, kTypeTxt = 16,
    kTypeAaaa = 28, kTypeSrv = 33, kTypeA6 = 38, kTypeDname = 39, kTypeOpt = 41, kTypeUnspecA = 104,
    kTypeTsig = 250, kTypeUri = 256,
};
constexpr uint16_t kClassIn = 1;

const char* type_name(uint16_t type) noexcept
{
    switch (type) {
    case 1: return "A";
    case 2: return "NS";
    case 3: return "MD";
    case 4: return "MF";
    case 5: return "CNAME";
    case 6: return "SOA";
    case 7: return "MB";
    case 8: return "MG";
    case 9: return "MR";
    case 10: return "NULL";
    case 11: return "WKS";
    case 12: return "PTR";
    case 13: return "HINFO";
    case 14: return "MINFO";
    case 15: return "MX";
    case 16: return "TXT";
    case 17: return "RP";
    case 18: return "AFSDB";
    case 19: return "X25";
    case 20: return "ISDN";
    case 21: return "RT";
    case 22: return "NSAP";
    case 23: return "NSAP_PTR";
    case 24: return "SIG";
    case 25: return "KEY";
    case 26: return "PX";
    case 27: return "GPOS";
    case 28: return "AAAA";
    case 29: return "LOC";
    case 30: return "NXT";
    case 31: return "EID";
    case 32: return "NIMLOC";
    case 33: return "SRV";
    case 34: return "ATMA";
    case 35: return "NAPTR";
    case 36: return "KX";
    case 37: return "CERT";
    case 38: return "A6";
    case 39: return "DNAME";
    case 40: return "SINK";
    case 41: return "OPT";
    case 42: return "APL";
    case 43: return "DS";
    case 44: return "SSHFP";
    case 45: return "IPSECKEY";
    case 46: return "RRSIG";
    case 47: return "NSEC";
    case 48: return "DNSKEY";
    case 99: return "SPF";
    case 100: return "UINFO";
    case 101: return "UID";
    case 102: return "GID";
    case 103: return "UNSPEC";
    case 104: return "UNSPECA";
    case 249: return "TKEY";
    case 250: return "TSIG";
    case 251: return "IXFR";
    case 252: return "AXFR";
    case 253: return "MAILB";
    case 254: return "MAILA";
    case 255: return "ANY";
    case 256: return "URI";
    default: return nullptr;
    }
}

void put_type(Writer& w, uint16_t type) noexcept
{
    w.put(' ');
    if (const char* name = type_name(type)) {
        w.put(std::string_view(name));
    } else {
        w.put("Type"sv, type);
    }
}

void put_class(Writer& w, uint16_t cls) noexcept
{
    w.put(' ');
    switch (cls) {
    case 1: w.put("IN"sv); return;
    case 3: w.put("CHAOS"sv); return;
    case 4: w.put("HS"sv); return;
    case 255: w.put("ANY"sv); return;
    default:
        w.put("(Class "sv);
        w.put(cls, ')');
        return;
    }
}

// Up to `n` bytes from `at`, stopping at the end of the capture: false if
// that came first.
bool put_chars(Writer& w, const Bytes& m, size_t at, size_t n) noexcept
{
    const size_t captured = at < m.size ? m.size - at : 0;
    put_escaped(w, m.data + at, n < captured ? n : captured);
    return n <= captured;
}

// Past a name (tcpdump's ns_nskip): where the next field starts.
size_t skip_name(const Bytes& m, size_t at) noexcept
{
    if (!m.has(at, 1))
        return kNone;
    uint8_t i = m.u8(at++);
    while (i) {
        switch (i & 0xc0) {
        case 0xc0:
            return at + 1;
        case 0x40: {
            if ((i & 0x3f) != 1 || !m.has(at, 1))
                return kNone;
            const size_t bits = m.u8(at) ? m.u8(at) : 256;
            at += 1 + (bits + 7) / 8;
            break;
        }
        case 0x80:
            return kNone;
        default:
            at += i;
            break;
        }
        if (!m.has(at, 1))
            return kNone;
        i = m.u8(at++);
    }
    return at;
}

// The length tcpdump gives the label at `at` (its labellen); -1 where it
// is unusable, with its words for why.
long label_length(Writer& w, const Bytes& m, size_t at) noexcept
{
    if (!m.has(at, 1))
        return -1;
    const uint8_t i = m.u8(at);
    switch (i & 0xc0) {
    case 0x40: {
        if ((i & 0x3f) != 1) {
            w.put("<ELT "sv, i & 0x3f, '>');
            return -1;
        }
        if (!m.has(at + 1, 1))
            return -1;
        const long bits = m.u8(at + 1) ? m.u8(at + 1) : 256;
        return (bits + 7) / 8 + 1;
    }
    case 0x80:
        w.put("<BAD LABEL TYPE>"sv);
        return -1;
    default:
        return i;
    }
}

// An EDNS0 bit-string label: "\[x0a1b/16]". False where tcpdump's reads
// leave the capture.
bool put_bit_label(Writer& w, const Bytes& m, size_t at) noexcept
{
    if (!m.has(at, 1))
        return false;
    const size_t bits = m.u8(at) ? m.u8(at) : 256;
    const size_t end = at + 1 + (bits + 3) / 4;
    w.put("\\[x"sv);
    size_t p = at + 1;
    size_t left = bits;
    for (; p < end && left > 7; left -= 8, ++p) {
        if (!m.has(p, 1))
            return false;
        w.hex_byte(m.u8(p));
    }
    if (left > 4) {
        if (!m.has(p, 1))
            return false;
        w.hex_byte(static_cast<uint8_t>(m.u8(p) & (0xff << (8 - left))));
    } else if (left > 0) {
        if (!m.has(p, 1))
            return false;
        w.hex(((m.u8(p) >> 4) & 0x0fu) & (0x0fu << (4 - left)));
    }
    w.put('/', bits, ']');
    return true;
}

// A name as tcpdump's fqdn_print writes it, compression pointers followed
// (backwards only). `base`: where pointers count from. Returns the offset
// after the name where it was written, or kNone.
size_t put_name(Writer& w, const Bytes& m, size_t at, size_t base) noexcept
{
    long l = label_length(w, m, at);
    if (l < 0 || !m.has(at, 1))
        return kNone;
    // tcpdump keeps this as an unsigned difference: a base after the name
    // (EDNS CHAIN) lets any pointer through.
    uint32_t max_offset = static_cast<uint32_t>(at - base);
    uint8_t i = m.u8(at++);
    size_t after = kNone;
    bool compressed = false;
    if ((i & 0xc0) != 0xc0)
        after = at + static_cast<size_t>(l);
    if (i == 0) {
        w.put('.');
        return after;
    }
    size_t name_chars = 0;
    while (i && at < m.size) {
        switch (i & 0xc0) {
        case 0xc0: {
            if (!compressed) {
                after = at + 1;
                compressed = true;
            }
            if (!m.has(at, 1))
                return kNone;
            const uint32_t offset = ((uint32_t{i} << 8) | m.u8(at)) & 0x3fffu;
            if (offset >= max_offset) {
                w.put("<BAD PTR>"sv);
                return kNone;
            }
            max_offset = offset;
            at = base + offset;
            if (!m.has(at, 1))
                return kNone;
            i = m.u8(at);
            l = label_length(w, m, at);
            if (l < 0)
                return kNone;
            ++at;
            continue;
        }
        case 0x40:
            if ((i & 0x3f) != 1) {
                w.put("<ELT "sv, i & 0x3f, '>');
                return kNone;
            }
            if (!put_bit_label(w, m, at))
                return kNone;
            break;
        case 0x80:
            w.put("<BAD LABEL TYPE>"sv);
            return kNone;
        default:
            if (name_chars + static_cast<size_t>(l) <= kMaxNameChars) {
                if (!put_chars(w, m, at, static_cast<size_t>(l)))
                    return kNone;
            } else if (name_chars < kMaxNameChars) {
                if (!put_chars(w, m, at, kMaxNameChars - name_chars))
                    return kNone;
            }
            name_chars += static_cast<size_t>(l);
            break;
        }
        at += static_cast<size_t>(l);
        if (name_chars <= kMaxNameChars)
            w.put('.');
        ++name_chars;
        if (!m.has(at, 1))
            return kNone;
        i = m.u8(at);
        l = label_length(w, m, at);
        if (l < 0)
            return kNone;
        ++at;
        if (!compressed)
            after += static_cast<size_t>(l) + 1;
    }
    if (name_chars > kMaxNameChars)
        w.put("<DOMAIN NAME TOO LONG>"sv);
    return after;
}

const char* algorithm_name(uint16_t option, uint8_t algorithm) noexcept
{
    if (option == 5) { // DAU
        switch (algorithm) {
        case 0: return "DELETE";
        case 1: return "RSAMD5";
        case 2: return "DH";
        case 3: return "DS";
        case 5: return "RSASHA1";
        case 6: return "DSA-NSEC3-SHA1";
        case 7: return "RSASHA1-NSEC3-SHA1";
        case 8: return "RSASHA256";
        case 10: return "RSASHA512";
        case 12: return "ECC-GOST";
        case 13: return "ECDSAP256SHA256";
        case 14: return "ECDSAP384SHA384";
        case 15: return "ED25519";
        case 16: return "ED448";
        case 252: return "INDIRECT";
        case 253: return "PRIVATEDNS";
        case 254: return "PRIVATEOID";
        default: return nullptr;
        }
    }
    if (option == 6) { // DHU
        switch (algorithm) {
        case 1: return "SHA-1";
        case 2: return "SHA-256";
        case 3: return "GOST_R_34.11-94";
        case 4: return "SHA-384";
        default: return nullptr;
        }
    }
    return algorithm == 1 ? "SHA-1" : nullptr; // N3U
}

const char* option_name(uint16_t option) noexcept
{
    switch (option) {
    case 1: return "LLQ";
    case 2: return "UL";
    case 3: return "NSID";
    case 5: return "DAU";
    case 6: return "DHU";
    case 7: return "N3U";
    case 8: return "ECS";
    case 9: return "EXPIRE";
    case 10: return "COOKIE";
    case 11: return "KEEPALIVE";
    case 12: return "PADDING";
    case 13: return "CHAIN";
    case 14: return "KEY-TAG";
    case 16: return "CLIENT-TAG";
    case 17: return "SERVER-TAG";
    default: return nullptr;
    }
}

void put_client_subnet(Writer& w, const Bytes& m, size_t at, size_t length) noexcept
{
    if (length < 4) {
        w.put(" (invalid)"sv);
        return;
    }
    const uint16_t family = m.u16(at);
    const size_t source = m.u8(at + 2);
    const size_t scope = m.u8(at + 3);
    const size_t bits = family == 1 ? 32 : family == 2 ? 128 : 0;
    if (bits == 0 || length - 4 > bits / 8 || source > bits || scope > bits || (source + 7) / 8 != length - 4) {
        w.put(" (invalid)"sv);
        return;
    }
    uint8_t address[16] = {};
    for (size_t i = 0; i < length - 4; ++i)
        address[i] = m.u8(at + 4 + i);
    w.put(family == 1 ? ipv4_text(address).view() : ipv6_text(address).view(), '/', source, '/', scope);
}

// One EDNS option (tcpdump's eopt_print); the offset after it, or kNone.
size_t put_option(Writer& w, const Bytes& m, size_t at) noexcept
{
    if (!m.has(at, 2))
        return kNone;
    const uint16_t option = m.u16(at);
    at += 2;
    if (const char* name = option_name(option)) {
        w.put(std::string_view(name));
    } else {
        w.put("Opt"sv, option);
    }
    if (!m.has(at, 2))
        return kNone;
    const size_t length = m.u16(at);
    at += 2;
    if (!m.has(at, length))
        return kNone;
    if (length == 0)
        return at;
    w.put(' ');
    switch (option) {
    case 8:
        put_client_subnet(w, m, at, length);
        break;
    case 10:
        if (length < 8 || (length > 8 && length < 16) || length > 40) {
            w.put(" (invalid)"sv);
            break;
        }
        for (size_t i = 0; i < length; ++i) {
            if (i == 8)
                w.put(' ');
            w.hex_byte(m.u8(at + i));
        }
        break;
    case 11:
        if (length != 2) {
            w.put(" (invalid)"sv);
            break;
        }
        // Units of 100 ms, in seconds with one decimal.
        w.put(m.u16(at) / 10u, '.', m.u16(at) % 10u, " sec"sv);
        break;
    case 9:
        if (length != 4) {
            w.put(" (invalid)"sv);
            break;
        }
        w.put(m.u32(at), " sec"sv);
        break;
    case 12:
        w.put('(');
        w.put(length, ')');
        break;
    case 5:
    case 6:
    case 7:
        for (size_t i = 0; i < length; ++i) {
            if (i > 0)
                w.put(' ');
            if (const char* name = algorithm_name(option, m.u8(at + i))) {
                w.put(std::string_view(name));
            } else {
                w.put("Alg_"sv, m.u8(at + i));
            }
        }
        break;
    case 13:
        put_name(w, m, at, at + length);
        break;
    case 14: // key tags, 16 bits each
        if (length % 2 != 0) {
            w.put(" (invalid)"sv);
            break;
        }
        for (size_t i = 0; i < length; i += 2) {
            if (i > 0)
                w.put(' ');
            w.dec(m.u16(at + i));
        }
        break;
    default:
        for (size_t i = 0; i < length; ++i)
            w.hex_byte(m.u8(at + i));
        break;
    }
    return at + length;
}

// A TTL as tcpdump writes it with -vvv: "1d2h3m4s", "0s".
void put_duration(Writer& w, uint32_t seconds) noexcept
{
    if (seconds == 0) {
        w.put("0s"sv);
        return;
    }
    constexpr struct {
        uint32_t seconds;
        char unit;
    } kUnits[] = {{31536000, 'y'}, {604800, 'w'}, {86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
    for (const auto& u : kUnits) {
        if (seconds >= u.seconds) {
            w.put(seconds / u.seconds, u.unit);
            seconds %= u.seconds;
        }
    }
}

// A question (tcpdump's ns_qprint): " A? example.com.".
size_t put_question(Writer& w, const Bytes& m, size_t at, bool mdns) noexcept
{
    const size_t name = at;
    at = skip_name(m, at);
    if (at == kNone || !m.has(at, 4))
        return kNone;
    put_type(w, m.u16(at));
    const uint16_t raw_class = m.u16(at + 2);
    const uint16_t cls = mdns ? raw_class & 0x7fff : raw_class;
    if (cls != kClassIn)
        put_class(w, cls);
    if (mdns)
        w.put(raw_class & 0x8000 ? " (QU)"sv : " (QM)"sv);
    w.put("? "sv);
    const size_t after = put_name(w, m, name, 0);
    return after == kNone ? kNone : after + 4;
}

// A record's data from `at` to `end` and what its printer needs; a printer
// returns false where the record is cut (tcpdump's NULL).
struct Rdata {
    Writer& w;
    const Bytes& m;
    size_t at;
    size_t end;
    uint16_t cls;
    uint16_t opt_flags;
    size_t limit;
    uint8_t verbose;

    size_t length() const noexcept { return end - at; }
    // " name" from `from`: the offset after it, or kNone.
    size_t name(size_t from) noexcept
    {
        w.put(' ');
        return put_name(w, m, from, 0);
    }
};

bool rdata_a(Rdata& r) noexcept
{
    if (!r.m.has(r.at, 4))
        return false;
    r.w.put(' ', ipv4_text(r.m.data + r.at).view());
    return true;
}

bool rdata_aaaa(Rdata& r) noexcept
{
    if (!r.m.has(r.at, 16))
        return false;
    r.w.put(' ', ipv6_text(r.m.data + r.at).view());
    return true;
}

bool rdata_name(Rdata& r) noexcept
{
    return r.name(r.at) != kNone;
}

bool rdata_mx(Rdata& r) noexcept
{
    r.w.put(' ');
    if (!r.m.has(r.at, 2) || put_name(r.w, r.m, r.at + 2, 0) == kNone)
        return false;
    r.w.put(' ', r.m.u16(r.at));
    return true;
}

bool rdata_txt(Rdata& r) noexcept
{
    for (size_t at = r.at; at < r.end;) {
        if (r.w.size() > r.limit)
            return false;
        r.w.put(" \""sv);
        if (!r.m.has(at, 1))
            return false;
        const size_t n = r.m.u8(at);
        if (!put_chars(r.w, r.m, at + 1, n))
            return false;
        at += 1 + n;
        r.w.put('"');
    }
    return true;
}

bool rdata_srv(Rdata& r) noexcept
{
    r.w.put(' ');
    if (!r.m.has(r.at, 6) || put_name(r.w, r.m, r.at + 6, 0) == kNone)
        return false;
    r.w.put(':', r.m.u16(r.at + 4), ' ', r.m.u16(r.at), ' ', r.m.u16(r.at + 2));
    return true;
}

bool rdata_a6(Rdata& r) noexcept
{
    if (!r.m.has(r.at, 1))
        return false;
    const size_t prefix = r.m.u8(r.at);
    const size_t skip = (prefix & ~size_t{7}) / 8;
    if (prefix > 128) {
        r.w.put(' ', prefix, "(bad plen)"sv);
        return true;
    }
    if (prefix < 128) {
        if (!r.m.has(r.at + 1, 16 - skip))
            return false;
        uint8_t address[16] = {};
        for (size_t i = skip; i < 16; ++i)
            address[i] = r.m.u8(r.at + 1 + i - skip);
        r.w.put(' ', prefix, ' ', ipv6_text(address).view());
    }
    if (prefix > 0) {
        if (r.name(r.at + 1 + 16 - skip) == kNone)
            return false;
    }
    return true;
}

bool rdata_uri(Rdata& r) noexcept
{
    const size_t length = r.length();
    if (!r.m.has(r.at, length) || !r.m.has(r.at, 4))
        return false;
    r.w.put(' ', r.m.u16(r.at), ' ', r.m.u16(r.at + 2), ' ');
    // A length under 4 wraps around in tcpdump: all that was captured.
    return put_chars(r.w, r.m, r.at + 4, length >= 4 ? length - 4 : r.m.size);
}

bool rdata_opt(Rdata& r) noexcept
{
    r.w.put(" UDPsize="sv, r.cls);
    if (r.opt_flags & 0x8000)
        r.w.put(" DO"sv);
    if (r.at >= r.end)
        return true;
    r.w.put(" ["sv);
    for (size_t at = r.at; at < r.end;) {
        if (r.w.size() > r.limit)
            return false;
        at = put_option(r.w, r.m, at);
        if (at == kNone)
            return false;
        if (at < r.end)
            r.w.put(',');
    }
    r.w.put(']');
    return true;
}

bool rdata_unspec(Rdata& r) noexcept
{
    return r.m.has(r.at, r.length()) && put_chars(r.w, r.m, r.at, r.length());
}

bool rdata_soa(Rdata& r) noexcept
{
    if (!r.verbose)
        return true;
    size_t at = r.name(r.at);
    if (at == kNone)
        return false;
    at = r.name(at);
    // Serial, refresh, retry, expire and minimum.
    if (at == kNone || !r.m.has(at, 20))
        return false;
    for (size_t i = 0; i < 20; i += 4)
        r.w.put(' ', r.m.u32(at + i));
    return true;
}

bool rdata_tsig(Rdata& r) noexcept
{
    if (!r.verbose)
        return true;
    size_t at = r.name(r.at);
    if (at == kNone)
        return false;
    at += 6;
    constexpr std::string_view kFields[] = {" fudge="sv, " maclen="sv, " origid="sv, " error="sv, " otherlen="sv};
    for (const std::string_view field : kFields) {
        if (!r.m.has(at, 2))
            return false;
        r.w.put(field, r.m.u16(at));
        at += field == " maclen="sv ? 2 + size_t{r.m.u16(at)} : 2;
    }
    return true;
}

// The record types whose data tcpdump prints; others print their type only.
constexpr struct {
    uint16_t type;
    bool (*put)(Rdata&) noexcept;
} kRdataPrinters[] = {
    {kTypeA, rdata_a}, {kTypeNs, rdata_name}, {kTypeCname, rdata_name},
    {kTypePtr, rdata_name}, {kTypeDname, rdata_name}, {kTypeMx, rdata_mx},
    {kTypeTxt, rdata_txt}, {kTypeSrv, rdata_srv}, {kTypeAaaa, rdata_aaaa},
    {kTypeA6, rdata_a6}, {kTypeUri, rdata_uri}, {kTypeOpt, rdata_opt},
    {kTypeUnspecA, rdata_unspec}, {kTypeSoa, rdata_soa}, {kTypeTsig, rdata_tsig},
};

// A record (tcpdump's ns_rprint without -v): its type and data. Returns
// the offset after it, m.size where the record's fixed part was not
// captured (the caller stops quietly), or kNone.
// Past `limit` (bytes of the line) the record is abandoned as cut.
size_t put_record(Writer& w, const Bytes& m, size_t at, bool mdns, size_t limit, uint8_t verbose) noexcept
{
    if (verbose) {
        w.put(' ');
        at = put_name(w, m, at, 0);
        if (at == kNone)
            return kNone;
    } else {
        at = skip_name(m, at);
    }
    if (at == kNone || !m.has(at, 10))
        return m.size;
    const uint16_t type = m.u16(at);
    const uint16_t raw_class = m.u16(at + 2);
    const uint16_t cls = mdns ? raw_class & 0x7fff : raw_class;
    if (cls != kClassIn && type != kTypeOpt)
        put_class(w, cls);
    if (mdns && (raw_class & 0x8000))
        w.put(" (Cache flush)"sv);
    if (verbose > 2 && type != kTypeOpt) {
        w.put(" ["sv);
        put_duration(w, m.u32(at + 4));
        w.put(']');
    }
    Rdata r{w, m, at + 10, at + 10 + m.u16(at + 8), cls, m.u16(at + 6), limit, verbose};
    put_type(w, type);
    if (r.end > m.size)
        return kNone;
    for (const auto& printer : kRdataPrinters) {
        if (printer.type == type)
            return printer.put(r) ? r.end : kNone;
    }
    return r.end;
}

// A message's section counts (questions, answers, authorities, additionals).
struct DnsCounts {
    size_t questions;
    size_t answers;
    size_t authorities;
    size_t additionals;
};

// `count` entries of a section from `at`, `separator` between, each written
// by `put_entry(at)`: false where the line ends as cut (an entry cut, or the
// text past kMaxDnsText). tcpdump stops early where the capture ends.
template <typename Entry>
bool put_entries(Writer& w, const Bytes& m, size_t& at, size_t count, size_t start, std::string_view separator,
                 Entry put_entry) noexcept
{
    for (bool first = true; count > 0 && (first || at < m.size); first = false) {
        if (w.size() - start > kMaxDnsText)
            return false;
        if (!first)
            w.put(separator);
        at = put_entry(at);
        if (at == kNone)
            return false;
        --count;
    }
    return count == 0;
}

bool put_records(Writer& w, const Bytes& m, size_t& at, size_t count, bool mdns, size_t start,
                 uint8_t verbose) noexcept
{
    return put_entries(w, m, at, count, start, ","sv,
                       [&](size_t record) { return put_record(w, m, record, mdns, start + kMaxDnsText, verbose); });
}

// A section of records after `label` (" ns:", " ar:"), -vv.
bool put_section(Writer& w, const Bytes& m, size_t& at, size_t count, std::string_view label, bool mdns,
                 size_t start, uint8_t verbose) noexcept
{
    if (count == 0)
        return true;
    if (at >= m.size)
        return false;
    w.put(label);
    return put_records(w, m, at, count, mdns, start, verbose);
}

// The authority and additional sections, -vv.
bool put_other_sections(Writer& w, const Bytes& m, size_t& at, const DnsCounts& n, bool mdns, size_t start,
                        uint8_t verbose) noexcept
{
    return put_section(w, m, at, n.authorities, " ns:"sv, mdns, start, verbose) &&
        put_section(w, m, at, n.additionals, " ar:"sv, mdns, start, verbose);
}

// The OPT record's extended response code, found as tcpdump finds it.
unsigned extended_rcode(const Bytes& m, uint16_t flags, const DnsCounts& n) noexcept
{
    unsigned rcode = flags & 0xfu;
    size_t at = 12;
    for (size_t i = 0; i < n.questions; ++i) {
        at = skip_name(m, at);
        if (at == kNone || (at += 4) >= m.size)
            return rcode;
    }
    for (size_t i = 0; i < n.answers + n.authorities; ++i) {
        at = skip_name(m, at);
        if (at == kNone || (at += 8) + 2 > m.size)
            return rcode;
        at += 2 + m.u16(at);
        if (at >= m.size)
            return rcode;
    }
    for (size_t i = 0; i < n.additionals; ++i) {
        at = skip_name(m, at);
        if (at == kNone || at + 2 > m.size)
            break;
        const uint16_t type = m.u16(at);
        at += 4;
        if (at + 1 > m.size)
            break;
        if (type == kTypeOpt) {
            rcode |= unsigned{m.u8(at)} << 4;
            break;
        }
        at += 4;
        if (at + 2 > m.size)
            break;
        at += 2 + m.u16(at);
        if (at >= m.size)
            break;
    }
    return rcode;
}

// A response after its id and opcode: false where the line ends as cut.
bool put_response(Writer& w, const Bytes& m, uint16_t flags, const DnsCounts& n, bool mdns, size_t start,
                  uint8_t verbose) noexcept
{
    static constexpr std::string_view kResponses[24] = {
        ""sv, " FormErr"sv, " ServFail"sv, " NXDomain"sv, " NotImp"sv, " Refused"sv, " YXDomain"sv,
        " YXRRSet"sv, " NXRRSet"sv, " NotAuth"sv, " NotZone"sv, " Resp11"sv, " Resp12"sv, " Resp13"sv,
        " Resp14"sv, " NoChange"sv, " BadVers"sv, "Resp17"sv, " Resp18"sv, " Resp19"sv, " Resp20"sv,
        "Resp21"sv, " Resp22"sv, " BadCookie"sv,
    };
    const unsigned rcode = extended_rcode(m, flags, n);
    if (rcode < std::size(kResponses))
        w.put(kResponses[rcode]);
    else
        w.put(" Resp"sv, rcode & 0xfffu);
    if (flags & 0x0400)
        w.put('*');
    if (!(flags & 0x0080))
        w.put('-');
    if (flags & 0x0200)
        w.put('|');
    if (flags & 0x0020)
        w.put('$');
    if (n.questions != 1)
        w.put(" ["sv, n.questions, "q]"sv);
    size_t at = 12;
    for (size_t i = 0; i < n.questions; ++i) {
        if (i != 0)
            w.put(',');
        if (verbose > 1) {
            w.put(" q:"sv);
            at = put_question(w, m, at, mdns);
        } else if ((at = skip_name(m, at)) != kNone) {
            at += 4;
        }
        if (at == kNone)
            return false;
    }
    w.put(' ', n.answers, '/', n.authorities, '/', n.additionals);
    return put_records(w, m, at, n.answers, mdns, start, verbose) &&
        (verbose <= 1 || put_other_sections(w, m, at, n, mdns, start, verbose));
}

// A query after its id and opcode: false where the line ends as cut.
bool put_query(Writer& w, const Bytes& m, uint16_t flags, const DnsCounts& n, bool mdns, size_t start,
               uint8_t verbose) noexcept
{
    if (flags & 0x0100)
        w.put('+');
    if (flags & 0x0010)
        w.put('%');
    if (flags & 0x6cf)
        w.put(" [b2&3=0x"sv, Hex{flags}, ']');
    const auto bracket = [&](size_t count, std::string_view what) { w.put(" ["sv, count, what, ']'); };
    if (((flags >> 11) & 0xfu) == 1) { // an inverse query
        if (n.questions)
            bracket(n.questions, "q"sv);
        if (n.answers != 1)
            bracket(n.answers, "a"sv);
    } else {
        if (n.answers)
            bracket(n.answers, "a"sv);
        if (n.questions != 1)
            bracket(n.questions, "q"sv);
    }
    if (n.authorities)
        bracket(n.authorities, "n"sv);
    if (n.additionals)
        bracket(n.additionals, "au"sv);
    size_t at = 12;
    if (!put_entries(w, m, at, n.questions, start, ""sv,
                     [&](size_t question) { return put_question(w, m, question, mdns); }))
        return false;
    // -vv: the answers (without a label), then the other sections.
    return verbose <= 1 ||
        (put_records(w, m, at, n.answers, mdns, start, verbose) &&
         put_other_sections(w, m, at, n, mdns, start, verbose));
}

} // namespace

void print_dns(Writer& w, const Bytes& payload, size_t length, bool over_tcp, bool mdns, uint8_t verbose) noexcept
{
    const size_t start = w.size();
    const auto truncated = [&] { put_truncated(w, "domain"sv); };
    Bytes m = payload;
    if (over_tcp) {
        if (length < 2) {
            w.put(" [DNS over TCP: length "sv, length, " < 2] (invalid)"sv);
            return;
        }
        length -= 2;
        if (!m.has(0, 2))
            return truncated();
        if (m.u16(0) != length) {
            w.put(" [prefix length("sv, m.u16(0), ") != length("sv, length, ")] (invalid)"sv);
            return;
        }
        m = m.from(2);
        w.put(' ');
    }
    if (length < 12) {
        w.put("domain [length "sv, length, " < 12] (invalid)"sv);
        return;
    }
    if (!m.has(0, 12))
        return truncated();
    const uint16_t flags = m.u16(2);
    const DnsCounts n{m.u16(4), m.u16(6), m.u16(8), m.u16(10)};
    static constexpr std::string_view kOpcodes[16] = {
        ""sv, " inv_q"sv, " stat"sv, " op3"sv, " notify"sv, " update"sv, " op6"sv, " op7"sv,
        " op8"sv, " updateA"sv, " updateD"sv, " updateDA"sv, " updateM"sv, " updateMA"sv, " zoneInit"sv, " zoneRef"sv,
    };
    w.put(m.u16(0), kOpcodes[(flags >> 11) & 0xfu]);
    const bool complete = flags & 0x8000 ? put_response(w, m, flags, n, mdns, start, verbose)
                                         : put_query(w, m, flags, n, mdns, start, verbose);
    if (!complete)
        return truncated();
    w.put(" ("sv, length, ')');
}

size_t put_domain_name(Writer& w, const Bytes& m, size_t at, size_t base) noexcept
{
    const size_t after = put_name(w, m, at, base);
    return after == kNone ? kNoName : after;
}

} // namespace xdpcap::text::detail
