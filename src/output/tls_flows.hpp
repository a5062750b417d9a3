// What the placement of TLS secrets needs to know of a frame: its TCP
// connection, and whether its payload starts with a ClientHello (and its
// random) or a ServerHello. Ethernet frames with up to two VLAN tags, IPv4
// and IPv6 without extension headers: what a handshake's first segment is.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "output/tls_secrets.hpp"

namespace xdpcap {

// A TCP connection the same way round from either side: the lower
// endpoint first.
struct TcpConnectionKey {
    std::array<uint8_t, 16> a{}, b{};
    uint16_t a_port = 0, b_port = 0;
    bool operator==(const TcpConnectionKey&) const = default;
};

struct TcpConnectionKeyHash {
    size_t operator()(const TcpConnectionKey& key) const noexcept;
};

struct TlsFrame {
    TcpConnectionKey connection;
    // The frame's own direction, for the lines that name a connection.
    bool ipv6 = false;
    std::array<uint8_t, 16> source{}, destination{};
    uint16_t source_port = 0, destination_port = 0;
    enum class Hello : uint8_t { None, Client, Server } hello = Hello::None;
    ClientRandom client_random{}; // of a ClientHello
    bool ends_connection = false; // FIN or RST
};

// Nothing for a frame that is no TCP segment this can read.
std::optional<TlsFrame> read_tls_frame(const uint8_t* data, size_t length) noexcept;

// "198.18.0.1.41000 > 198.18.0.2.443", as tcpdump names a TCP segment's ends.
std::string tls_frame_ends(const TlsFrame& frame);

} // namespace xdpcap
