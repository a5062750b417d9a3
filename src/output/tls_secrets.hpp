// TLS session secrets as NSS key log lines ("LABEL CLIENT_RANDOM SECRET",
// what SSLKEYLOGFILE makes a TLS library write), kept by connection (its
// ClientHello's random) until the output places them in the file as
// Decryption Secrets Blocks, before the records that need them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xdpcap {

using ClientRandom = std::array<uint8_t, 32>;

// The labels a reader (Wireshark) uses to decrypt TLS 1.2 and 1.3, as bits.
enum KeyLogLabel : uint8_t {
    kClientRandom = 1 << 0, // TLS 1.2 and earlier: the master secret
    kClientHandshakeTrafficSecret = 1 << 1,
    kServerHandshakeTrafficSecret = 1 << 2,
    kClientTrafficSecret0 = 1 << 3,
    kServerTrafficSecret0 = 1 << 4,
    kExporterSecret = 1 << 5,
    kEarlyExporterSecret = 1 << 6,
    kClientEarlyTrafficSecret = 1 << 7,
};

struct KeyLogLine {
    KeyLogLabel label;
    ClientRandom client_random;
};

// One line of a key log, without its line end (a trailing '\r' or '\n' is
// ignored): a known label, 64 hex digits of client random and a secret of
// 16 to 64 bytes in hex, separated by one space each. Anything else, a
// comment line included, is not a key log line.
std::optional<KeyLogLine> parse_key_log_line(std::string_view line);

// pcapng Decryption Secrets Block of type TLS key log (0x544c534b) holding
// `lines`, each ending in '\n'.
void append_tls_secrets_block(std::vector<uint8_t>& out, std::string_view lines);

// The ingest: every source of keys (the command's key log, a followed file,
// the library probes) hands complete lines to add(); the output takes them
// from here for the connections whose handshake it writes.
class TlsSecrets {
public:
    // Keeps a valid line (once: a repeated line is no news). False for a
    // line that is not a key log line, which is ignored.
    bool add(std::string_view line);

    struct Connection {
        std::string lines; // each ending in '\n', in the order they came
        uint8_t labels = 0; // KeyLogLabel bits
    };
    const Connection* find(const ClientRandom& random) const;
    // Enough to decrypt the whole connection: TLS 1.2's master secret, or
    // TLS 1.3's handshake and first traffic secrets of both sides.
    static bool complete(uint8_t labels) noexcept;
    // Connections with at least one line.
    size_t connections() const noexcept { return by_random_.size(); }
    // Bumped by every new line, so a reader can tell cheaply that nothing changed.
    uint64_t changes() const noexcept { return changes_; }
    // Lines add() refused.
    uint64_t refused() const noexcept { return refused_; }

private:
    std::map<ClientRandom, Connection> by_random_;
    uint64_t changes_ = 0;
    uint64_t refused_ = 0;
};

} // namespace xdpcap
