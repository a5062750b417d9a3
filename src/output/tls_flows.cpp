#include "output/tls_flows.hpp"

#include <arpa/inet.h>

#include <cstring>

namespace xdpcap {

namespace {

uint16_t be16(const uint8_t* p) noexcept { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

constexpr uint8_t kTlsHandshake = 22;
constexpr uint8_t kClientHello = 1;
constexpr uint8_t kServerHello = 2;

} // namespace

size_t TcpConnectionKeyHash::operator()(const TcpConnectionKey& key) const noexcept
{
    // FNV-1a over the key's bytes: a few dozen per connection lookup.
    uint64_t hash = 1469598103934665603ull;
    auto mix = [&](const uint8_t* p, size_t n) {
        for (size_t i = 0; i < n; ++i)
            hash = (hash ^ p[i]) * 1099511628211ull;
    };
    mix(key.a.data(), key.a.size());
    mix(key.b.data(), key.b.size());
    const uint16_t ports[2] = {key.a_port, key.b_port};
    mix(reinterpret_cast<const uint8_t*>(ports), sizeof ports);
    return static_cast<size_t>(hash);
}

std::optional<TlsFrame> read_tls_frame(const uint8_t* data, size_t length) noexcept
{
    if (length < 14)
        return std::nullopt;
    size_t at = 12;
    uint16_t ethertype = be16(data + at);
    for (int tags = 0; tags < 2 && (ethertype == 0x8100 || ethertype == 0x88a8); ++tags) {
        at += 4;
        if (length < at + 2)
            return std::nullopt;
        ethertype = be16(data + at);
    }
    at += 2;
    std::array<uint8_t, 16> source{}, destination{};
    size_t tcp_at;
    size_t ip_end;
    if (ethertype == 0x0800) {
        if (length < at + 20 || (data[at] >> 4) != 4 || data[at + 9] != 6)
            return std::nullopt;
        // A later fragment holds no TCP header.
        if (be16(data + at + 6) & 0x1fff)
            return std::nullopt;
        const size_t header = (data[at] & 0x0f) * 4u;
        std::memcpy(source.data(), data + at + 12, 4);
        std::memcpy(destination.data(), data + at + 16, 4);
        tcp_at = at + header;
        ip_end = at + be16(data + at + 2);
    } else if (ethertype == 0x86dd) {
        if (length < at + 40 || (data[at] >> 4) != 6 || data[at + 6] != 6)
            return std::nullopt;
        std::memcpy(source.data(), data + at + 8, 16);
        std::memcpy(destination.data(), data + at + 24, 16);
        tcp_at = at + 40;
        ip_end = tcp_at + be16(data + at + 4);
    } else {
        return std::nullopt;
    }
    if (length < tcp_at + 20)
        return std::nullopt;
    const uint8_t* tcp = data + tcp_at;
    const uint16_t source_port = be16(tcp);
    const uint16_t destination_port = be16(tcp + 2);
    TlsFrame frame;
    frame.ipv6 = ethertype == 0x86dd;
    frame.source = source;
    frame.destination = destination;
    frame.source_port = source_port;
    frame.destination_port = destination_port;
    frame.ends_connection = (tcp[13] & 0x05) != 0;
    const bool source_first = std::memcmp(source.data(), destination.data(), 16) < 0 ||
        (source == destination && source_port < destination_port);
    TcpConnectionKey& key = frame.connection;
    key.a = source_first ? source : destination;
    key.b = source_first ? destination : source;
    key.a_port = source_first ? source_port : destination_port;
    key.b_port = source_first ? destination_port : source_port;
    // The TLS record: content type, version, length, then the handshake
    // message's type, length, version and (a ClientHello's) random.
    const size_t payload = tcp_at + (tcp[12] >> 4) * 4u;
    const size_t end = ip_end < length ? ip_end : length;
    if (end < payload + 6 || data[payload] != kTlsHandshake || data[payload + 1] != 3)
        return frame;
    if (data[payload + 5] == kServerHello) {
        frame.hello = TlsFrame::Hello::Server;
    } else if (data[payload + 5] == kClientHello && end >= payload + 11 + 32) {
        frame.hello = TlsFrame::Hello::Client;
        std::memcpy(frame.client_random.data(), data + payload + 11, 32);
    }
    return frame;
}

std::string tls_frame_ends(const TlsFrame& frame)
{
    char source[INET6_ADDRSTRLEN] = {}, destination[INET6_ADDRSTRLEN] = {};
    const int family = frame.ipv6 ? AF_INET6 : AF_INET;
    ::inet_ntop(family, frame.source.data(), source, sizeof source);
    ::inet_ntop(family, frame.destination.data(), destination, sizeof destination);
    std::string text(source);
    text.append(".").append(std::to_string(frame.source_port)).append(" > ").append(destination);
    text.append(".").append(std::to_string(frame.destination_port));
    return text;
}

} // namespace xdpcap
