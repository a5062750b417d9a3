// --tls-keys: where the output puts each connection's secrets. A reader in
// one pass (tshark without -2, `tshark -r -`) derives a TLS connection's
// keys as its ServerHello goes by, so the Decryption Secrets Block must come
// before it. The client logs the secrets only after it read the
// ServerHello, so from its ServerHello on a connection's packets are held
// until its secrets are complete, or kTimeoutNs passed; then the block,
// then the held packets, in their order, with their own timestamps.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "output/sample.hpp"
#include "output/tls_flows.hpp"
#include "output/tls_secrets.hpp"

namespace xdpcap {

struct TlsPlacementStats {
    uint64_t connections_with_secrets = 0; // blocks written for, over every file
    uint64_t held_connections = 0;
    uint64_t held_packets = 0;
    uint64_t timed_out = 0; // released without complete secrets
    uint64_t longest_hold_ns = 0;
};

struct TlsPlacement {
    static constexpr uint64_t kTimeoutNs = 500'000'000;

    struct HeldPacket {
        uint32_t interface_id;
        uint64_t realtime_ns;
        Sample sample; // data points into `bytes` once released
        size_t offset;
    };
    struct Connection {
        ClientRandom random{};
        bool has_random = false;
        uint64_t hello_file = 0; // the file its ClientHello went into
        // Its secrets once known (they stay put), and how much of their
        // lines the current file holds.
        const TlsSecrets::Connection* secrets = nullptr;
        uint64_t written_file = 0;
        size_t written_bytes = 0;
        bool held = false;
        uint64_t held_since_ns = 0;
        std::vector<HeldPacket> packets;
        std::vector<uint8_t> bytes;
    };

    explicit TlsPlacement(const TlsSecrets& secrets) : secrets(secrets) {}

    const TlsSecrets& secrets;
    std::unordered_map<TcpConnectionKey, Connection, TcpConnectionKeyHash> connections;
    uint64_t file = 1; // -C, -G: counts the files
    std::vector<uint8_t> block; // scratch for one Decryption Secrets Block
    size_t held = 0;
    uint64_t seen_changes = 0;
    TlsPlacementStats stats;
};

} // namespace xdpcap
