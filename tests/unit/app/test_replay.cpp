// -r on files written here: a link type it does not read is refused by
// name, a filter is compiled for the file's link type, and the pcapng copy
// of a classic pcap file keeps its link type.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "app/replay.hpp"

using namespace xdpcap;

namespace {

using Bytes = std::vector<uint8_t>;

void put32(Bytes& b, uint32_t v)
{
    const size_t at = b.size();
    b.resize(at + 4);
    std::memcpy(b.data() + at, &v, 4);
}

// A classic pcap file (host byte order, microseconds) of these records.
Bytes classic_pcap(uint32_t link_type, const std::vector<Bytes>& records)
{
    Bytes b;
    put32(b, 0xa1b2c3d4);
    put32(b, 2 | 4u << 16);
    put32(b, 0);
    put32(b, 0);
    put32(b, 262144);
    put32(b, link_type);
    for (const Bytes& r : records) {
        put32(b, 1);
        put32(b, 0);
        put32(b, static_cast<uint32_t>(r.size()));
        put32(b, static_cast<uint32_t>(r.size()));
        b.insert(b.end(), r.begin(), r.end());
    }
    return b;
}

// An SLL record: outgoing, Ethernet hardware, ICMP echo request.
Bytes sll_icmp()
{
    const uint8_t bytes[] = {0x00, 0x04, 0x00, 0x01, 0x00, 0x06, 0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x00,
                             0x08, 0x00, 0x45, 0x00, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x01, 0xee, 0xb4,
                             0xc6, 0x12, 0x00, 0x01, 0xc6, 0x12, 0x00, 0x02, 0x08, 0x00, 0xf7, 0xff, 0x00, 0x00,
                             0x00, 0x00};
    return Bytes(std::begin(bytes), std::end(bytes));
}

class TempFiles {
public:
    std::string make(const std::string& name, const Bytes& content = {})
    {
        const std::string path = dir_ + "/" + name;
        std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(content.data()),
                                                    static_cast<std::streamsize>(content.size()));
        paths_.push_back(path);
        return path;
    }
    std::string path(const std::string& name)
    {
        paths_.push_back(dir_ + "/" + name);
        return paths_.back();
    }
    ~TempFiles()
    {
        for (const std::string& p : paths_)
            ::unlink(p.c_str());
        ::rmdir(dir_.c_str());
    }

private:
    std::string dir_ = [] {
        char name[] = "/tmp/xdpcap-replay-XXXXXX";
        return std::string(::mkdtemp(name));
    }();
    std::vector<std::string> paths_;
};

Bytes read_all(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string refusal(const std::string& path)
{
    Config config;
    config.read_file = path;
    try {
        read_capture_file(config, "");
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

} // namespace

TEST(Replay, OtherLinkTypesAreRefusedByName)
{
    TempFiles files;
    const std::string raw = files.make("raw.pcap", classic_pcap(101, {Bytes(20, 0x45)}));
    EXPECT_EQ(refusal(raw), raw + ": xdpcap reads Ethernet, LINUX_SLL and LINUX_SLL2 captures only, and interface 0 "
                                  "has link type RAW (101)");
    const std::string unknown = files.make("unknown.pcap", classic_pcap(65000, {}));
    EXPECT_EQ(refusal(unknown), unknown + ": xdpcap reads Ethernet, LINUX_SLL and LINUX_SLL2 captures only, and "
                                          "interface 0 has link type 65000");
}

TEST(Replay, FilterIsCompiledForTheFilesLinkType)
{
    TempFiles files;
    const std::string in = files.make("sll.pcap", classic_pcap(113, {sll_icmp()}));
    Config config;
    config.read_file = in;
    config.output = files.path("out.pcapng");
    // Ethernet addresses mean nothing to a cooked header: libpcap says so.
    try {
        read_capture_file(config, "ether host 02:11:22:33:44:55");
        FAIL() << "an Ethernet-only filter compiled for LINUX_SLL";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("ethernet addresses supported only on"), std::string::npos) << e.what();
    }
    // ... and the output was not left behind.
    EXPECT_NE(::access(config.output->c_str(), F_OK), 0);
    // Compiled for Ethernet, "icmp" would test bytes 12-13 (0x0000 here) and keep nothing.
    ASSERT_EQ(read_capture_file(config, "icmp"), 0);
    const Bytes kept = read_all(*config.output);
    const Bytes none_kept = [&] {
        read_capture_file(config, "udp");
        return read_all(*config.output);
    }();
    EXPECT_GT(kept.size(), none_kept.size());
}

TEST(Replay, CopyOfClassicPcapKeepsTheLinkType)
{
    TempFiles files;
    for (const uint32_t link_type : {113u, 276u}) {
        Config config;
        config.read_file = files.make("in.pcap", classic_pcap(link_type, {Bytes(44, 0)}));
        config.output = files.path("copy.pcapng");
        ASSERT_EQ(read_capture_file(config, ""), 0);
        const Bytes out = read_all(*config.output);
        // The section header block, then the interface description: its
        // link type is the first field of its body.
        ASSERT_GE(out.size(), 28u);
        uint32_t shb_length = 0;
        std::memcpy(&shb_length, out.data() + 4, 4);
        ASSERT_GE(out.size(), shb_length + 12u);
        uint32_t idb_type = 0;
        std::memcpy(&idb_type, out.data() + shb_length, 4);
        EXPECT_EQ(idb_type, 1u);
        uint16_t copied = 0;
        std::memcpy(&copied, out.data() + shb_length + 8, 2);
        EXPECT_EQ(copied, link_type);
    }
}

namespace {

// The error a read ends with ("(no error)" when it succeeds).
std::string error_of(const Config& config)
{
    try {
        read_capture_file(config, "");
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

// Two whole records, then a third cut inside its data.
Bytes cut_pcap()
{
    Bytes b = classic_pcap(1, {Bytes(60, 1), Bytes(60, 2), Bytes(60, 3)});
    b.resize(b.size() - 30);
    return b;
}

} // namespace

TEST(Replay, ReadingAndWritingTheSameFileIsRefusedBeforeAnythingIsWritten)
{
    TempFiles files;
    const Bytes content = classic_pcap(1, {Bytes(60, 1)});
    Config config;
    config.read_file = files.make("in.pcap", content);
    config.output = config.read_file;
    EXPECT_EQ(error_of(config),
              "-w " + *config.output + " is the file -r reads (" + *config.read_file + "); write the copy elsewhere");
    // Through another name of the same file, a hard link.
    const std::string linked = files.path("linked.pcap");
    ASSERT_EQ(::link(config.read_file->c_str(), linked.c_str()), 0);
    config.output = linked;
    EXPECT_NE(error_of(config).find("is the file -r reads"), std::string::npos);
    EXPECT_EQ(read_all(*config.read_file), content);
}

TEST(Replay, AFailedReadLeavesAnExistingCopyAsItWas)
{
    TempFiles files;
    Config config;
    config.read_file = files.make("cut.pcap", cut_pcap());
    config.output = files.make("existing.pcapng", Bytes{'o', 'l', 'd'});
    const std::string error = error_of(config);
    EXPECT_NE(error.find("; " + *config.output + " is left as it was"), std::string::npos) << error;
    EXPECT_EQ(read_all(*config.output), (Bytes{'o', 'l', 'd'}));

    config.read_file = files.make("not-a-capture", Bytes(100, 'x'));
    EXPECT_NE(error_of(config).find("is left as it was"), std::string::npos);
    EXPECT_EQ(read_all(*config.output), (Bytes{'o', 'l', 'd'}));
}

TEST(Replay, AFailedReadKeepsThePacketsBeforeItWhereThereWasNoCopy)
{
    TempFiles files;
    Config config;
    config.read_file = files.make("cut.pcap", cut_pcap());
    config.output = files.path("new.pcapng");
    const std::string error = error_of(config);
    EXPECT_NE(error, "(no error)");
    EXPECT_EQ(error.find("left as it was"), std::string::npos) << error;
    // The section and interface blocks, then one Enhanced Packet Block (32
    // bytes and the 60 of data) per whole record.
    const Bytes out = read_all(*config.output);
    size_t packets = 0;
    for (size_t at = 0; at + 8 <= out.size();) {
        uint32_t type = 0, length = 0;
        std::memcpy(&type, out.data() + at, 4);
        std::memcpy(&length, out.data() + at + 4, 4);
        ASSERT_GE(length, 12u);
        packets += type == 6;
        at += length;
    }
    EXPECT_EQ(packets, 2u);

    // Nothing read: nothing left behind.
    config.read_file = files.make("not-a-capture", Bytes(100, 'x'));
    config.output = files.path("none.pcapng");
    EXPECT_NE(error_of(config), "(no error)");
    EXPECT_NE(::access(config.output->c_str(), F_OK), 0);
}
