#include "text/application.hpp"

#include <array>
#include <string_view>

#include "text/layers.hpp"

namespace xdpcap::text {

namespace detail {

PortApplication application_by_port(uint8_t protocol, uint16_t source, uint16_t destination) noexcept
{
    using enum PortApplication;
    constexpr uint8_t kTcp = 1;
    constexpr uint8_t kUdp = 2;
    // tcpdump's order for each protocol: TCP's first (the UDP ones among
    // them are none but DNS), then UDP's.
    constexpr struct {
        uint16_t port;
        PortApplication what;
        uint8_t protocols;
    } kPorts[] = {
        {23, Other, kTcp},    // Telnet
        {25, Other, kTcp},    // SMTP
        {43, Other, kTcp},    // whois
        {179, Other, kTcp},   // BGP
        {1723, Other, kTcp},  // PPTP
        {6379, Other, kTcp},  // Redis
        {22, Ssh, kTcp},
        {139, Other, kTcp},   // NetBIOS
        {445, Other, kTcp},   // SMB
        {10288, Other, kTcp}, // BEEP
        {976, Other, kTcp},   // OpenFlow (old)
        {6653, Other, kTcp},  // OpenFlow
        {21, Other, kTcp},    // FTP
        {80, Http, kTcp},
        {8080, Http, kTcp},
        {554, Other, kTcp},   // RTSP
        {8554, Other, kTcp},  // RTSP
        {53, Dns, kTcp | kUdp},
        {639, Other, kTcp},   // MSDP
        {323, Other, kTcp},   // RPKI-RTR
        {646, Other, kTcp},   // LDP
        {5353, Mdns, kUdp},
        {8472, Otv, kUdp},    // also Linux's VXLAN default: tcpdump 4.99.3 reads OTV
        {4789, Vxlan, kUdp},
        {6081, Geneve, kUdp},
        {6635, Mpls, kUdp},   // MPLS in UDP (RFC 7510)
    };
    const uint8_t mask = protocol == kProtoTcp ? kTcp : protocol == kProtoUdp ? kUdp : 0;
    for (const auto& p : kPorts) {
        if ((p.protocols & mask) && (source == p.port || destination == p.port))
            return p.what;
    }
    return None;
}

} // namespace detail

namespace {

using namespace std::string_view_literals;

bool printable(uint8_t c) noexcept
{
    return c >= 0x20 && c <= 0x7e;
}

// The bytes of the payload as tcpdump reads them: within `length`, and
// within what was captured (past it, the packet is cut short).
struct Text {
    const uint8_t* data;
    size_t captured;
    uint32_t length;
};

// tcpdump's token rules: a token of printable ASCII (at most 127
// characters) ended by white space or the end; then spaces are skipped.
// Returns where the next token starts, and 0 for no token.
size_t fetch_token(const Text& t, size_t at, std::array<char, 128>& token, size_t& token_length) noexcept
{
    token_length = 0;
    for (; at < t.length; ++at) {
        if (at >= t.captured)
            return 0;
        const uint8_t c = t.data[at];
        if (c >= 0x80)
            return 0;
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
            break;
        if (!printable(c) || token_length + 1 >= token.size())
            return 0;
        token[token_length++] = static_cast<char>(c);
    }
    if (token_length == 0)
        return 0;
    for (; at < t.length && at < t.captured; ++at) {
        if (t.data[at] != ' ')
            break;
    }
    return at;
}

bool same_ignoring_case(std::string_view a, std::string_view b) noexcept
{
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i) {
        const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
        if (lower(a[i]) != lower(b[i]))
            return false;
    }
    return true;
}

constexpr std::string_view kHttpMethods[] = {
    "GET", "PUT", "COPY", "HEAD", "LOCK", "MOVE", "POLL", "POST", "BCOPY", "BMOVE", "MKCOL", "TRACE", "LABEL",
    "MERGE", "DELETE", "SEARCH", "UNLOCK", "REPORT", "UPDATE", "NOTIFY", "BDELETE", "CONNECT", "OPTIONS",
    "CHECKIN", "PROPFIND", "CHECKOUT", "CCM_POST", "SUBSCRIBE", "PROPPATCH", "BPROPFIND", "BPROPPATCH",
    "UNCHECKOUT", "MKACTIVITY", "MKWORKSPACE", "UNSUBSCRIBE", "RPC_CONNECT", "VERSION-CONTROL",
    "BASELINE-CONTROL"};

// How a line of text ends for tcpdump's print_txt_line: with its line end
// (LF or CR LF, printed without it), at a CR without LF or a byte that is
// no text (nothing printed), at the end of the data (printed, then marked
// as cut short), or where the capture ends (tcpdump abandons the packet).
enum class LineEnd { Ended, NotText, EndOfData, EndOfCapture };

// The line from `start` after `prefix`; `next` gets where the next starts.
LineEnd print_text_line(Writer& w, std::string_view prefix, const Text& t, size_t start, size_t& next) noexcept
{
    size_t end = start;
    for (; end < t.length; ++end) {
        if (end >= t.captured)
            return LineEnd::EndOfCapture;
        const uint8_t c = t.data[end];
        if (c == '\n') {
            next = end + 1;
            break;
        }
        if (c == '\r') {
            if (end + 1 >= t.length)
                return LineEnd::NotText;
            if (end + 1 >= t.captured)
                return LineEnd::EndOfCapture;
            if (t.data[end + 1] != '\n')
                return LineEnd::NotText;
            next = end + 2;
            break;
        }
        if (!printable(c) && c != '\t')
            return LineEnd::NotText;
    }
    w.put(prefix, std::string_view(reinterpret_cast<const char*>(t.data + start), end - start));
    return end < t.length ? LineEnd::Ended : LineEnd::EndOfData;
}

void print_http(Writer& w, const Text& t, const DecodeOptions& o) noexcept
{
    std::array<char, 128> token;
    size_t token_length = 0;
    bool recognised = false;
    size_t at = fetch_token(t, 0, token, token_length);
    if (at != 0) {
        const std::string_view first(token.data(), token_length);
        for (const std::string_view method : kHttpMethods)
            recognised = recognised || same_ignoring_case(first, method);
        // A response: the second token is a three-digit status code.
        at = fetch_token(t, at, token, token_length);
        if (at != 0 && token_length == 3 && token[0] >= '0' && token[0] <= '9' && token[1] >= '0' &&
            token[1] <= '9' && token[2] >= '0' && token[2] <= '9')
            recognised = true;
    }
    w.put("HTTP"sv);
    if (!recognised)
        return;
    // The first line; with -v the length and every line of text.
    if (o.verbose) {
        w.put(", length: "sv, t.length);
    }
    size_t line = 0;
    for (;;) {
        size_t next = 0;
        switch (print_text_line(w, o.verbose ? "\n\t"sv : ": "sv, t, line, next)) {
        case LineEnd::Ended:
            if (!o.verbose || next >= t.length)
                return;
            line = next;
            continue;
        case LineEnd::NotText:
            return;
        case LineEnd::EndOfData:
            w.put(" [|http]"sv);
            return;
        case LineEnd::EndOfCapture:
            detail::put_abandoned(w, "http"sv, o);
            return;
        }
    }
}

// Every cut of the banner is a read past the capture: tcpdump abandons the
// packet (DecodeOptions::abandoned).
void print_ssh(Writer& w, const Text& t, const DecodeOptions& o) noexcept
{
    constexpr std::string_view kBanner = "SSH-";
    for (size_t i = 0; i < kBanner.size(); ++i) {
        if (i >= t.captured) {
            detail::put_abandoned(w, "ssh"sv, o);
            return;
        }
        if (t.data[i] != kBanner[i])
            return;
    }
    // The banner line, printed only when it ends within the segment.
    for (size_t end = kBanner.size(); end < t.length; ++end) {
        if (end >= t.captured) {
            detail::put_abandoned(w, "ssh"sv, o);
            return;
        }
        const uint8_t c = t.data[end];
        if (c == '\n' || (c == '\r' && end + 1 < t.length && end + 1 < t.captured && t.data[end + 1] == '\n')) {
            w.put(": SSH: "sv, std::string_view(reinterpret_cast<const char*>(t.data), end));
            return;
        }
        if (c == '\r' && end + 1 < t.length && end + 1 >= t.captured) {
            detail::put_abandoned(w, "ssh"sv, o);
            return;
        }
        if (!printable(c))
            return;
    }
}

} // namespace

void print_tcp_application(Writer& w, uint16_t source_port, uint16_t destination_port, const uint8_t* payload,
                           size_t captured, uint32_t length, const DecodeOptions& o) noexcept
{
    const Text text{payload, captured, length};
    using detail::PortApplication;
    switch (detail::application_by_port(detail::kProtoTcp, source_port, destination_port)) {
    case PortApplication::Http:
        w.put(": "sv);
        print_http(w, text, o);
        return;
    case PortApplication::Ssh:
        print_ssh(w, text, o);
        return;
    case PortApplication::Dns:
        detail::print_dns(w, detail::Bytes{payload, captured}, length, true, false, o.verbose);
        return;
    default:
        return;
    }
}

} // namespace xdpcap::text
