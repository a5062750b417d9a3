// Placing the secrets: the Decryption Secrets Block before the ServerHello
// of the connection it decrypts, whose packets wait for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>

#include "output/packet_output.hpp"
#include "output/pcapng.hpp"
#include "output/tls_flows.hpp"
#include "output/tls_secrets.hpp"
#include "test_outputs.hpp"
#include "key_log_lines.hpp"

using namespace xdpcap;
using namespace xdpcap::test;


namespace {

constexpr uint8_t kClient[4] = {198, 18, 0, 1};
constexpr uint8_t kServer[4] = {198, 18, 0, 2};

// Ethernet, IPv4, TCP (20 bytes, ACK and `flags`), then `payload`.
Bytes tcp_frame(bool from_client, const Bytes& payload, uint8_t flags = 0x10)
{
    Bytes frame(14 + 20 + 20 + payload.size(), 0);
    if (!payload.empty())
        std::memcpy(&frame[54], payload.data(), payload.size());
    frame[12] = 0x08;
    const size_t ip = 14;
    frame[ip] = 0x45;
    const size_t total = 20 + 20 + payload.size();
    frame[ip + 2] = static_cast<uint8_t>(total >> 8);
    frame[ip + 3] = static_cast<uint8_t>(total);
    frame[ip + 8] = 64;
    frame[ip + 9] = 6;
    std::memcpy(&frame[ip + 12], from_client ? kClient : kServer, 4);
    std::memcpy(&frame[ip + 16], from_client ? kServer : kClient, 4);
    const size_t tcp = ip + 20;
    const uint16_t client_port = 41000, server_port = 443;
    const uint16_t source = from_client ? client_port : server_port;
    const uint16_t destination = from_client ? server_port : client_port;
    frame[tcp] = static_cast<uint8_t>(source >> 8);
    frame[tcp + 1] = static_cast<uint8_t>(source);
    frame[tcp + 2] = static_cast<uint8_t>(destination >> 8);
    frame[tcp + 3] = static_cast<uint8_t>(destination);
    frame[tcp + 12] = 0x50;
    frame[tcp + 13] = flags;
    return frame;
}

// A TLS handshake record's start: type 22, version, length, then the
// message type, its length, version and (ClientHello) the random.
Bytes hello(uint8_t type, uint8_t random_byte)
{
    // Built at its full length first: growing an 11-byte vector in place
    // draws a false -Warray-bounds from GCC 12 at -O3.
    Bytes payload(85, 0);
    const uint8_t head[] = {22, 3, 1, 0, 80, type, 0, 0, 76, 3, 3};
    std::copy(std::begin(head), std::end(head), payload.begin());
    std::fill_n(payload.begin() + sizeof head, 32, random_byte);
    return payload;
}

struct Written {
    uint32_t type;
    uint32_t cap_len; // EPBs
};

std::vector<Written> blocks_of(const Bytes& file)
{
    std::vector<Written> blocks;
    for (size_t at = 0; at + 12 <= file.size();) {
        uint32_t type, length;
        std::memcpy(&type, &file[at], 4);
        std::memcpy(&length, &file[at + 4], 4);
        uint32_t cap_len = 0;
        if (type == pcapng::kEpbType)
            std::memcpy(&cap_len, &file[at + 20], 4);
        blocks.push_back(Written{type, cap_len});
        if (length < 12)
            break;
        at += length;
    }
    return blocks;
}

class Placement : public ::testing::Test {
protected:
    void write(const Bytes& frame, uint64_t monotonic_ns)
    {
        Sample sample{};
        sample.cap_len = sample.orig_len = static_cast<uint32_t>(frame.size());
        sample.direction = XDPCAP_DIR_INGRESS;
        sample.tstamp_ns = monotonic_ns;
        sample.data = frame.data();
        output.write(0, sample, 1000 + monotonic_ns);
    }
    std::vector<uint32_t> types()
    {
        output.flush();
        std::vector<uint32_t> out;
        for (const Written& block : blocks_of(file.contents()))
            out.push_back(block.type);
        return out;
    }
    std::string tls13_line(const char* label) { return line(label, kRandom, kSecret32); }

    MemFile file;
    TlsSecrets secrets;
    PacketOutput output{Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false, {"eth0@cpu0"}};
};

constexpr uint32_t kEpb = pcapng::kEpbType;
constexpr uint32_t kDsb = pcapng::kDsbType;

} // namespace

TEST_F(Placement, HoldsFromServerHelloUntilTheSecretsAreComplete)
{
    output.place_tls_secrets(secrets);
    write(tcp_frame(true, hello(1, 0xaa)), 1'000);
    write(tcp_frame(false, hello(2, 0)), 2'000);
    write(tcp_frame(false, Bytes(100, 23)), 3'000);
    write(tcp_frame(true, {}, 0x11), 3'500);
    write(tcp_frame(true, Bytes(10, 1)), 3'600);
    // Only the ClientHello so far; the rest waits for the secrets.
    EXPECT_EQ(types(), (std::vector<uint32_t>{kEpb}));
    secrets.add(tls13_line("SERVER_HANDSHAKE_TRAFFIC_SECRET"));
    secrets.add(tls13_line("CLIENT_HANDSHAKE_TRAFFIC_SECRET"));
    output.place_held_tls(4'000);
    EXPECT_EQ(types(), (std::vector<uint32_t>{kEpb}));
    secrets.add(tls13_line("SERVER_TRAFFIC_SECRET_0"));
    secrets.add(tls13_line("CLIENT_TRAFFIC_SECRET_0"));
    output.place_held_tls(5'000);
    EXPECT_EQ(types(), (std::vector<uint32_t>{kEpb, kDsb, kEpb, kEpb, kEpb, kEpb}));
    const TlsPlacementStats& stats = *output.tls_stats();
    EXPECT_EQ(stats.held_connections, 1u);
    EXPECT_EQ(stats.held_packets, 4u);
    EXPECT_EQ(stats.timed_out, 0u);
    EXPECT_EQ(stats.longest_hold_ns, 3'000u);
    // A line that comes later goes in too, once.
    secrets.add(tls13_line("EXPORTER_SECRET"));
    output.place_held_tls(6'000);
    output.place_held_tls(7'000);
    EXPECT_EQ(types(), (std::vector<uint32_t>{kEpb, kDsb, kEpb, kEpb, kEpb, kEpb, kDsb}));
}

TEST_F(Placement, KnownSecretsGoBeforeTheServerHelloAtOnce)
{
    output.place_tls_secrets(secrets);
    secrets.add(line("CLIENT_RANDOM"));
    write(tcp_frame(true, hello(1, 0xaa)), 1'000);
    write(tcp_frame(false, hello(2, 0)), 2'000);
    EXPECT_EQ(types(), (std::vector<uint32_t>{kDsb, kEpb, kEpb}));
}

TEST_F(Placement, ReleasesAfterTheTimeoutWithoutSecrets)
{
    output.place_tls_secrets(secrets);
    write(tcp_frame(true, hello(1, 0xbb)), 1'000);
    write(tcp_frame(false, hello(2, 0)), 2'000);
    // Other connections' packets are not held.
    write(Bytes(60, 0), 2'100);
    output.place_held_tls(2'000 + TlsPlacement::kTimeoutNs - 1);
    EXPECT_EQ(types(), (std::vector<uint32_t>{kEpb, kEpb}));
    output.place_held_tls(2'000 + TlsPlacement::kTimeoutNs);
    EXPECT_EQ(types(), (std::vector<uint32_t>{kEpb, kEpb, kEpb}));
    EXPECT_EQ(output.tls_stats()->timed_out, 1u);
}

TEST_F(Placement, NothingWithoutTheOption)
{
    secrets.add(line("CLIENT_RANDOM"));
    write(tcp_frame(true, hello(1, 0xaa)), 1'000);
    write(tcp_frame(false, hello(2, 0)), 2'000);
    EXPECT_EQ(types(), (std::vector<uint32_t>{kEpb, kEpb}));
    EXPECT_EQ(output.tls_stats(), nullptr);
}

TEST(TlsFrame, ReadsTheConnectionTheSameFromEitherSide)
{
    const Bytes client = tcp_frame(true, hello(1, 0x5a));
    const Bytes server = tcp_frame(false, hello(2, 0));
    const auto a = read_tls_frame(client.data(), client.size());
    const auto b = read_tls_frame(server.data(), server.size());
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->hello, TlsFrame::Hello::Client);
    EXPECT_EQ(a->client_random[0], 0x5a);
    EXPECT_EQ(b->hello, TlsFrame::Hello::Server);
    EXPECT_EQ(a->connection, b->connection);
    EXPECT_EQ(tls_frame_ends(*a), "198.18.0.1.41000 > 198.18.0.2.443");
    const Bytes data = tcp_frame(true, Bytes(50, 23));
    EXPECT_EQ(read_tls_frame(data.data(), data.size())->hello, TlsFrame::Hello::None);
    EXPECT_FALSE(read_tls_frame(data.data(), 30));
}
