#include "output/tls_secrets.hpp"

#include <cstring>

#include "output/pcapng_codes.hpp"

namespace xdpcap {

namespace {

struct LabelName {
    std::string_view name;
    KeyLogLabel label;
};
constexpr LabelName kLabels[] = {
    {"CLIENT_RANDOM", kClientRandom},
    {"CLIENT_HANDSHAKE_TRAFFIC_SECRET", kClientHandshakeTrafficSecret},
    {"SERVER_HANDSHAKE_TRAFFIC_SECRET", kServerHandshakeTrafficSecret},
    {"CLIENT_TRAFFIC_SECRET_0", kClientTrafficSecret0},
    {"SERVER_TRAFFIC_SECRET_0", kServerTrafficSecret0},
    {"EXPORTER_SECRET", kExporterSecret},
    {"EARLY_EXPORTER_SECRET", kEarlyExporterSecret},
    {"CLIENT_EARLY_TRAFFIC_SECRET", kClientEarlyTrafficSecret},
};

int hex_value(char c) noexcept
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool all_hex(std::string_view text) noexcept
{
    for (char c : text) {
        if (hex_value(c) < 0)
            return false;
    }
    return true;
}

std::string_view without_line_end(std::string_view line) noexcept
{
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
        line.remove_suffix(1);
    return line;
}

template <class T>
void put(std::vector<uint8_t>& out, T value)
{
    const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
    out.insert(out.end(), bytes, bytes + sizeof value);
}

} // namespace

std::optional<KeyLogLine> parse_key_log_line(std::string_view line)
{
    line = without_line_end(line);
    const size_t first = line.find(' ');
    if (first == std::string_view::npos)
        return std::nullopt;
    const std::string_view name = line.substr(0, first);
    const LabelName* known = nullptr;
    for (const LabelName& entry : kLabels) {
        if (entry.name == name)
            known = &entry;
    }
    if (!known)
        return std::nullopt;
    const std::string_view rest = line.substr(first + 1);
    constexpr size_t kRandomDigits = 2 * sizeof(ClientRandom);
    if (rest.size() < kRandomDigits + 1 || rest[kRandomDigits] != ' ')
        return std::nullopt;
    const std::string_view random = rest.substr(0, kRandomDigits);
    const std::string_view secret = rest.substr(kRandomDigits + 1);
    if (!all_hex(random) || !all_hex(secret) || secret.size() % 2 != 0 || secret.size() < 2 * 16 ||
        secret.size() > 2 * 64)
        return std::nullopt;
    KeyLogLine parsed{known->label, {}};
    for (size_t i = 0; i < parsed.client_random.size(); ++i)
        parsed.client_random[i] = static_cast<uint8_t>(hex_value(random[2 * i]) << 4 | hex_value(random[2 * i + 1]));
    return parsed;
}

void append_tls_secrets_block(std::vector<uint8_t>& out, std::string_view lines)
{
    const size_t padded = (lines.size() + 3) & ~size_t{3};
    const auto total = static_cast<uint32_t>(4 + 4 + 4 + 4 + padded + 4);
    put<uint32_t>(out, pcapng::kDsbType);
    put<uint32_t>(out, total);
    put<uint32_t>(out, pcapng::kSecretsTlsKeyLog);
    put<uint32_t>(out, static_cast<uint32_t>(lines.size()));
    out.insert(out.end(), lines.begin(), lines.end());
    out.resize(out.size() + (padded - lines.size()), 0);
    put<uint32_t>(out, total);
}

bool TlsSecrets::add(std::string_view line)
{
    line = without_line_end(line);
    const std::optional<KeyLogLine> parsed = parse_key_log_line(line);
    if (!parsed) {
        ++refused_;
        return false;
    }
    Connection& connection = by_random_[parsed->client_random];
    // The same line again (a file read twice after it was replaced by a
    // copy of itself) is no news; a line is found among the connection's
    // few lines quickly.
    for (size_t at = 0; (at = connection.lines.find(line, at)) != std::string::npos; at += line.size()) {
        if ((at == 0 || connection.lines[at - 1] == '\n') && connection.lines[at + line.size()] == '\n')
            return true;
    }
    connection.lines.append(line).push_back('\n');
    connection.labels = static_cast<uint8_t>(connection.labels | parsed->label);
    ++changes_;
    return true;
}

const TlsSecrets::Connection* TlsSecrets::find(const ClientRandom& random) const
{
    const auto it = by_random_.find(random);
    return it == by_random_.end() ? nullptr : &it->second;
}

bool TlsSecrets::complete(uint8_t labels) noexcept
{
    constexpr uint8_t kTls13 =
        kClientHandshakeTrafficSecret | kServerHandshakeTrafficSecret | kClientTrafficSecret0 | kServerTrafficSecret0;
    return (labels & kClientRandom) || (labels & kTls13) == kTls13;
}

} // namespace xdpcap
