#include "programs/uprobes.hpp"

#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/unique_fd.hpp"

namespace xdpcap {
namespace {

// Handshakes between OpenSSL 3.0.19's s_client and s_server code (Debian 12):
// what the probes read from the client's SSL object, and the lines OpenSSL's
// own key log callback wrote for the same connection.
std::vector<uint8_t> bytes(const std::string& hex)
{
    std::vector<uint8_t> out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

xdpcap_tls_handshake tls13(const std::string& random, const std::vector<std::string>& secrets)
{
    xdpcap_tls_handshake h{};
    h.version = 0x0304;
    const auto r = bytes(random);
    std::memcpy(h.client_random, r.data(), r.size());
    for (size_t i = 0; i < secrets.size(); ++i) {
        const auto s = bytes(secrets[i]);
        std::memcpy(h.tls13[i], s.data(), s.size());
    }
    return h;
}

const std::string kRandomSha256 = "fdc0bf9fe3ae60752a6a1839aa920ad218e21909013c79e266912cfa2b0f62cd";
const std::vector<std::string> kSecretsSha256 = {
    "22bf3511c8ce20b37ae200ea7f26eb2a0010243756b6bd9aeb8c6644e4b492fe",
    "af416dacd2e2c8d3db5ceb1120fd85b3e0c21a4d5ff262aacd2e1140589f872a",
    "f35deb23102c27d14594ff5ed53e7a999fb59e0818ed36249e439bc7f00b99e6",
    "63d2f06ada094fa9c0eb168f9ede9de6064feed2642adffaf1f66ed57e62b32a",
    "335d5477c1fdc16a6c918d80bd827bb7e013270511bce5d8f01e22448cd04f36",
    "0959c0d3ef8672c7b3f61a63433b0a0d0c85a25eca414fb4aef9b43b4264b4fc",
    "a02e133781c3a2850622c51800b5cada362770b56d42f8750b896c9af36c9849",
    "171aebd19def43dc1caf1f39ed88f4657ed9a8eedbab09a3b4158fd530fbd947",
    "4d42952808ceb91fcbbb26e8ba47bff1e36a28e6f7dfa4e4d75270677198f28a",
    "c5cff4971560e6d4f8d1cd4214a9c78a106bd11e6122261d5eafd7eae56bbd20",
};
const std::vector<std::string> kLinesSha256 = {
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET fdc0bf9fe3ae60752a6a1839aa920ad218e21909013c79e266912cfa2b0f62cd fc902dd81a539273f428e66b7042c2228f944388a9d2d2082fab57c13493920e",
    "SERVER_HANDSHAKE_TRAFFIC_SECRET fdc0bf9fe3ae60752a6a1839aa920ad218e21909013c79e266912cfa2b0f62cd 0ab2f11037b2fc7efe34f2e1a3f8130b7a6b8275e16f929b601eb3009c9706c3",
    "CLIENT_TRAFFIC_SECRET_0 fdc0bf9fe3ae60752a6a1839aa920ad218e21909013c79e266912cfa2b0f62cd 171aebd19def43dc1caf1f39ed88f4657ed9a8eedbab09a3b4158fd530fbd947",
    "SERVER_TRAFFIC_SECRET_0 fdc0bf9fe3ae60752a6a1839aa920ad218e21909013c79e266912cfa2b0f62cd 4d42952808ceb91fcbbb26e8ba47bff1e36a28e6f7dfa4e4d75270677198f28a",
    "EXPORTER_SECRET fdc0bf9fe3ae60752a6a1839aa920ad218e21909013c79e266912cfa2b0f62cd c5cff4971560e6d4f8d1cd4214a9c78a106bd11e6122261d5eafd7eae56bbd20",
};

const std::string kRandomSha384 = "62ba5ded98c10152a719ae1b2c10146166d10afb727cd60d81868e138fc4d6ca";
const std::vector<std::string> kSecretsSha384 = {
    "a436c537bff4356a3c1d431429a192c88d1266d6308f9ae616eb081177424ad5364ebd0be177ddd2138a5d8c6b38fef8",
    "3c11f013494d0d679a80df0360a49b9adf7668fa372e46743a544c40cae26a07cfc7fba287c1680dcbcfa538563e0016",
    "6d021e58bd7540c3ebd512f2bb29056788af5d5ed6ec3501d4e4f91cfae99860a49b7e6bb8ab9e8f2243eb3ead4159dc",
    "5f2c3458af15293b08fc422a7d8c7ec65f0316cbe53c5bf674279627281819ca534c824d0ef32fdc9565d6c827a8bb34",
    "fc27b93c949139f8c5846f275627164a5baff10e7c95020b27ebb6f2ff4fa92f03743f7354b9bdb7fcd857d62445aa8f",
    "653912ae98bd1dc3cbd8f8502667166bf1bdabe666ae5554f8441236ef6f8019285fadc923aca4b21872224c24b55277",
    "a4d7c57403efc12eb0e804d21795ef73289ce40428382d26f90b1340100611c49f755fc31f4a08da0237b33f20e84161",
    "ab34f7c5eff1a5a55e70000a24c121f2573306a57df4f39c5d932edc5f92e74a1a677a3150a6ff3fc179606d2864d335",
    "41ddeeac533c94a14204fee668e1f8608572954fbc905ff59dc140003af5d3bcf4cb6eee7022a3f8436d2e28e6e86127",
    "d07b4e4a191abc1e2f4e1b9f1623ae4dd16312b6b80ab8ee143ebafeab9e465d585bafd488eb8d70187d743185af969f",
};
const std::vector<std::string> kLinesSha384 = {
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET 62ba5ded98c10152a719ae1b2c10146166d10afb727cd60d81868e138fc4d6ca dd374e46c0207012500dcef7ac5363cb0819e77c4adfb85ca6286be298eea4641a78110360f8339497cbe4b30f04d71e",
    "SERVER_HANDSHAKE_TRAFFIC_SECRET 62ba5ded98c10152a719ae1b2c10146166d10afb727cd60d81868e138fc4d6ca a2078bccfde1213efa42f77fbd2f2ecbfceaaa0a3e35db25519021cd443a25f770304de57d4f95dcad4ea735c126dfc8",
    "CLIENT_TRAFFIC_SECRET_0 62ba5ded98c10152a719ae1b2c10146166d10afb727cd60d81868e138fc4d6ca ab34f7c5eff1a5a55e70000a24c121f2573306a57df4f39c5d932edc5f92e74a1a677a3150a6ff3fc179606d2864d335",
    "SERVER_TRAFFIC_SECRET_0 62ba5ded98c10152a719ae1b2c10146166d10afb727cd60d81868e138fc4d6ca 41ddeeac533c94a14204fee668e1f8608572954fbc905ff59dc140003af5d3bcf4cb6eee7022a3f8436d2e28e6e86127",
    "EXPORTER_SECRET 62ba5ded98c10152a719ae1b2c10146166d10afb727cd60d81868e138fc4d6ca d07b4e4a191abc1e2f4e1b9f1623ae4dd16312b6b80ab8ee143ebafeab9e465d585bafd488eb8d70187d743185af969f",
};

TEST(KeyLogLines, Tls13Sha256AsOpensslLogsThem)
{
    EXPECT_EQ(key_log_lines(tls13(kRandomSha256, kSecretsSha256)), kLinesSha256);
}

TEST(KeyLogLines, Tls13Sha384AsOpensslLogsThem)
{
    EXPECT_EQ(key_log_lines(tls13(kRandomSha384, kSecretsSha384)), kLinesSha384);
}

// Any secret that does not derive from the others (a wrong offset, a key
// update, a torn read) gives no line at all.
TEST(KeyLogLines, Tls13SecretsThatDisagreeGiveNoLine)
{
    for (size_t i = 0; i < kSecretsSha256.size(); ++i) {
        if (i == XDPCAP_TLS13_RESUMPTION_MASTER_SECRET)
            continue; // not read
        xdpcap_tls_handshake h = tls13(kRandomSha256, kSecretsSha256);
        h.tls13[i][5] ^= 1;
        EXPECT_TRUE(key_log_lines(h).empty()) << "secret " << i;
    }
    xdpcap_tls_handshake shifted{};
    shifted.version = 0x0304;
    std::memcpy(shifted.client_random, bytes(kRandomSha256).data(), 32);
    std::memcpy(shifted.tls13[1], tls13(kRandomSha256, kSecretsSha256).tls13[0],
                sizeof(shifted.tls13) - sizeof(shifted.tls13[0]));
    EXPECT_TRUE(key_log_lines(shifted).empty());
}

TEST(KeyLogLines, Tls12MasterKey)
{
    xdpcap_tls_handshake h{};
    h.version = 0x0303;
    std::memcpy(h.client_random, bytes("5ecba4bb856af365bf020315bed94bec98965af1eaf3f8741a92e2198c48ed42").data(), 32);
    std::memcpy(h.master_key, bytes("e46fadc48e9b961802d11d06f29eae009502c846b64c25e5f5f82d0043292a03b3377a22126dd40e7da1bb9d62b987b2").data(), 48);
    h.master_key_length = 48;
    EXPECT_EQ(key_log_lines(h), std::vector<std::string>{"CLIENT_RANDOM 5ecba4bb856af365bf020315bed94bec98965af1eaf3f8741a92e2198c48ed42 e46fadc48e9b961802d11d06f29eae009502c846b64c25e5f5f82d0043292a03b3377a22126dd40e7da1bb9d62b987b2"});
    h.master_key_length = 0; // no session's master key read
    EXPECT_TRUE(key_log_lines(h).empty());
}

TEST(KeyLogLines, NothingForAnUnknownVersionOrNoRandom)
{
    xdpcap_tls_handshake h = tls13(kRandomSha256, kSecretsSha256);
    h.version = 0x0305;
    EXPECT_TRUE(key_log_lines(h).empty());
    h.version = 0xfeff; // DTLS 1.0
    h.master_key_length = 48;
    EXPECT_TRUE(key_log_lines(h).empty());
    h = tls13(kRandomSha256, kSecretsSha256);
    std::memset(h.client_random, 0, sizeof(h.client_random));
    EXPECT_TRUE(key_log_lines(h).empty());
}

TEST(LibsslInMaps, EachFileOnceAndNothingElse)
{
    const std::string maps =
        "7f0000000000-7f0000001000 r--p 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libssl.so.3\n"
        "7f0000001000-7f0000002000 r-xp 00001000 08:01 123 /usr/lib/x86_64-linux-gnu/libssl.so.3\n"
        "7f0000002000-7f0000003000 r--p 00000000 08:01 124 /usr/lib/x86_64-linux-gnu/libcrypto.so.3\n"
        "7f0000003000-7f0000004000 r--p 00000000 08:01 125 /opt/app/libssl.so.3 (deleted)\n"
        "7f0000004000-7f0000005000 r--p 00000000 08:01 126 /opt/other/libssl.so.3\n"
        "7f0000005000-7f0000006000 rw-p 00000000 00:00 0 [heap]\n"
        "7f0000006000-7f0000007000 r--p 00000000 08:01 127 /usr/lib/x86_64-linux-gnu/libssl.so.3.bak";
    EXPECT_EQ(libssl_in_maps(maps),
              (std::vector<std::string>{"/usr/lib/x86_64-linux-gnu/libssl.so.3", "/opt/other/libssl.so.3"}));
    EXPECT_TRUE(libssl_in_maps("").empty());
}

TEST(KnownOpensslLayout, OnlyBuildsMeasured)
{
    const auto debian = known_openssl_layout("c0b9959017cf64b03131964573944fc72958bb2b");
    ASSERT_TRUE(debian);
    EXPECT_EQ(debian->client_random, 352u);
    EXPECT_FALSE(known_openssl_layout("c0b9959017cf64b03131964573944fc72958bb2c"));
    EXPECT_FALSE(known_openssl_layout(""));
}

// A 64-bit ELF header, one PT_NOTE segment holding `notes`.
UniqueFd elf_with_notes(const std::vector<uint8_t>& notes)
{
    Elf64_Ehdr header{};
    std::memcpy(header.e_ident, ELFMAG, SELFMAG);
    header.e_ident[EI_CLASS] = ELFCLASS64;
    header.e_ident[EI_DATA] = ELFDATA2LSB;
    header.e_phoff = sizeof(header);
    header.e_phentsize = sizeof(Elf64_Phdr);
    header.e_phnum = 1;
    Elf64_Phdr segment{};
    segment.p_type = PT_NOTE;
    segment.p_offset = sizeof(header) + sizeof(segment);
    segment.p_filesz = notes.size();
    UniqueFd fd(::memfd_create("elf", MFD_CLOEXEC));
    EXPECT_TRUE(fd);
    EXPECT_EQ(::write(fd.get(), &header, sizeof(header)), static_cast<ssize_t>(sizeof(header)));
    EXPECT_EQ(::write(fd.get(), &segment, sizeof(segment)), static_cast<ssize_t>(sizeof(segment)));
    EXPECT_EQ(::write(fd.get(), notes.data(), notes.size()), static_cast<ssize_t>(notes.size()));
    return fd;
}

std::vector<uint8_t> note(uint32_t type, const std::string& name, const std::vector<uint8_t>& desc)
{
    const Elf64_Nhdr header{static_cast<Elf64_Word>(name.size() + 1), static_cast<Elf64_Word>(desc.size()), type};
    const auto padded = [](size_t n) { return (n + 3) & ~size_t{3}; };
    const size_t desc_at = sizeof(header) + padded(name.size() + 1);
    std::vector<uint8_t> out(desc_at + padded(desc.size()), 0);
    std::memcpy(out.data(), &header, sizeof(header));
    std::memcpy(out.data() + sizeof(header), name.data(), name.size());
    if (!desc.empty())
        std::memcpy(out.data() + desc_at, desc.data(), desc.size());
    return out;
}

TEST(ElfBuildId, FoundAfterOtherNotes)
{
    std::vector<uint8_t> notes = note(NT_GNU_ABI_TAG, "GNU", {0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0});
    const std::vector<uint8_t> id = note(NT_GNU_BUILD_ID, "GNU", {0xc0, 0xb9, 0x95, 0x90, 0x17});
    notes.insert(notes.end(), id.begin(), id.end());
    EXPECT_EQ(elf_build_id(elf_with_notes(notes).get()), "c0b9959017");
}

TEST(ElfBuildId, NoneInBrokenOrForeignNotes)
{
    EXPECT_FALSE(elf_build_id(elf_with_notes(note(NT_GNU_BUILD_ID, "Go", {1, 2, 3, 4})).get()));
    std::vector<uint8_t> cut = note(NT_GNU_BUILD_ID, "GNU", {1, 2, 3, 4, 5, 6, 7, 8});
    cut.resize(cut.size() - 4);
    EXPECT_FALSE(elf_build_id(elf_with_notes(cut).get()));
    UniqueFd not_elf(::memfd_create("text", MFD_CLOEXEC));
    EXPECT_EQ(::write(not_elf.get(), "#!/bin/sh\n", 10), 10);
    EXPECT_FALSE(elf_build_id(not_elf.get()));
}

} // namespace
} // namespace xdpcap
