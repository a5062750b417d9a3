// -r's reader against files built here byte by byte: classic pcap in both
// byte orders and resolutions, pcapng in both byte orders with several
// sections, timestamp resolutions, every packet block type and the options
// xdpcap's own files carry; malformed input, refused in one line; and
// broken files, read up to the break.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "input/capture_file.hpp"

using namespace xdpcap;

namespace {

using Bytes = std::vector<uint8_t>;

// Appends integers in the chosen byte order.
struct Out {
    bool big = false;
    Bytes b;
    Out& u8(uint8_t v)
    {
        b.push_back(v);
        return *this;
    }
    Out& u16(uint16_t v) { return big ? u8(v >> 8).u8(v & 0xff) : u8(v & 0xff).u8(v >> 8); }
    Out& u32(uint32_t v) { return big ? u16(v >> 16).u16(v & 0xffff) : u16(v & 0xffff).u16(v >> 16); }
    Out& u64(uint64_t v)
    {
        return big ? u32(static_cast<uint32_t>(v >> 32)).u32(static_cast<uint32_t>(v))
                   : u32(static_cast<uint32_t>(v)).u32(static_cast<uint32_t>(v >> 32));
    }
    Out& bytes(const Bytes& v)
    {
        b.insert(b.end(), v.begin(), v.end());
        return *this;
    }
    Out& pad()
    {
        while (b.size() % 4)
            b.push_back(0);
        return *this;
    }
    Out& option(uint16_t code, const Bytes& value)
    {
        return u16(code).u16(static_cast<uint16_t>(value.size())).bytes(value).pad();
    }
};

Bytes frame(uint8_t marker, size_t size = 60)
{
    Bytes f(size, 0);
    f[12] = 0x08;
    f[size - 1] = marker;
    return f;
}

Bytes block(bool big, uint32_t type, const Bytes& body)
{
    Out o{big, {}};
    Bytes padded = body;
    while (padded.size() % 4)
        padded.push_back(0);
    const auto length = static_cast<uint32_t>(12 + padded.size());
    o.u32(type).u32(length).bytes(padded).u32(length);
    return o.b;
}

Bytes shb(bool big, const std::string& application = "")
{
    Out o{big, {}};
    o.u32(0x1A2B3C4D).u16(1).u16(0).u64(~uint64_t{0});
    if (!application.empty())
        o.option(4, Bytes(application.begin(), application.end())).u16(0).u16(0);
    return block(big, 0x0A0D0D0A, o.b);
}

Bytes idb(bool big, const std::string& name, std::optional<uint8_t> tsresol, uint16_t link_type = 1)
{
    Out o{big, {}};
    o.u16(link_type).u16(0).u32(262144);
    if (!name.empty())
        o.option(2, Bytes(name.begin(), name.end()));
    if (tsresol)
        o.option(9, {*tsresol});
    o.u16(0).u16(0);
    return block(big, 1, o.b);
}

Bytes epb(bool big, uint32_t interface, uint64_t ticks, const Bytes& data, uint32_t orig_len, const Bytes& options = {})
{
    Out o{big, {}};
    o.u32(interface).u32(static_cast<uint32_t>(ticks >> 32)).u32(static_cast<uint32_t>(ticks));
    o.u32(static_cast<uint32_t>(data.size())).u32(orig_len).bytes(data).pad().bytes(options);
    return block(big, 6, o.b);
}

Bytes cat(std::initializer_list<Bytes> parts)
{
    Bytes all;
    for (const Bytes& p : parts)
        all.insert(all.end(), p.begin(), p.end());
    return all;
}

std::vector<CaptureFile::Packet> packets(CaptureFile& file, std::vector<CaptureFile::Record::Kind>* kinds = nullptr,
                                         std::vector<Bytes>* datas = nullptr)
{
    std::vector<CaptureFile::Packet> out;
    while (auto r = file.next()) {
        if (kinds)
            kinds->push_back(r->kind);
        if (r->kind == CaptureFile::Record::Kind::Packet) {
            out.push_back(r->packet);
            if (datas)
                datas->emplace_back(r->packet.data, r->packet.data + r->packet.cap_len);
        }
    }
    return out;
}

std::string refusal(const Bytes& bytes)
{
    CaptureFile file = CaptureFile::from_bytes(bytes);
    try {
        packets(file);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(CaptureFile, ClassicPcapBothByteOrdersAndResolutions)
{
    for (const bool big : {false, true}) {
        for (const bool nano : {false, true}) {
            Out o{big, {}};
            o.u32(nano ? 0xa1b23c4d : 0xa1b2c3d4).u16(2).u16(4).u32(0).u32(0).u32(96).u32(1);
            const Bytes f1 = frame(1), f2 = frame(2, 96);
            o.u32(1795431326).u32(nano ? 896062123 : 896062).u32(60).u32(60).bytes(f1);
            o.u32(1795431327).u32(5).u32(96).u32(1500).bytes(f2);
            CaptureFile file = CaptureFile::from_bytes(o.b);
            std::vector<Bytes> datas;
            const auto got = packets(file, nullptr, &datas);
            ASSERT_EQ(got.size(), 2u) << big << nano;
            EXPECT_FALSE(file.pcapng());
            ASSERT_EQ(file.interfaces().size(), 1u);
            EXPECT_EQ(file.interfaces()[0].link_type, 1);
            EXPECT_EQ(file.interfaces()[0].snaplen, 96u);
            EXPECT_EQ(got[0].timestamp_ns, 1795431326'896062123ull - (nano ? 0 : 123));
            EXPECT_EQ(got[1].timestamp_ns, 1795431327'000000000ull + (nano ? 5 : 5000));
            EXPECT_EQ(got[1].cap_len, 96u);
            EXPECT_EQ(got[1].orig_len, 1500u);
            EXPECT_EQ(datas[0], f1);
            EXPECT_EQ(datas[1], f2);
        }
    }
}

TEST(CaptureFile, PcapngSectionsResolutionsBlocksAndOptions)
{
    for (const bool big : {false, true}) {
        const Bytes f1 = frame(1), f2 = frame(2), f3 = frame(3), f4 = frame(4);
        Out opts{big, {}};
        opts.option(1, {'d', 'r', 'o', 'p', ' ', 'r', 'e', 'a', 's', 'o', 'n', ' ', 'X'});
        opts.option(2, Out{big, {}}.u32(2).b);          // epb_flags: outbound
        opts.option(4, Out{big, {}}.u64(7).b);          // epb_dropcount
        opts.option(6, Out{big, {}}.u32(3).b);          // epb_queue
        opts.option(7, cat({{2}, Out{big, {}}.u64(1).b})); // epb_verdict, eBPF XDP: XDP_DROP
        opts.u16(0).u16(0);
        const Bytes simple = block(big, 3, cat({Out{big, {}}.u32(60).b, f3}));
        const Bytes obsolete = block(big, 2, cat({Out{big, {}}.u16(0).u16(9).u32(0).u32(1000).u32(60).u32(60).b, f4}));
        const Bytes file_bytes = cat({shb(big), idb(big, "eth0@cpu1", 9), idb(big, "eth0@cpu1:drop", std::nullopt),
                                      epb(big, 1, 1'795'431'326'000'000ull, f1, 60, opts.b),
                                      block(big, 5, Out{big, {}}.u32(0).u32(0).u32(0).u16(0).u16(0).b),
                                      block(big, 0x0bad, {1, 2, 3, 4}),
                                      shb(big), idb(big, "", 0x8a), epb(big, 0, 3 * 1024 + 512, f2, 1500),
                                      simple, obsolete});
        CaptureFile file = CaptureFile::from_bytes(file_bytes);
        std::vector<CaptureFile::Record::Kind> kinds;
        std::vector<Bytes> datas;
        const auto got = packets(file, &kinds, &datas);
        using K = CaptureFile::Record::Kind;
        EXPECT_EQ(kinds, (std::vector<K>{K::SectionHeader, K::InterfaceDescription, K::InterfaceDescription, K::Packet,
                                         K::Statistics, K::Other, K::SectionHeader, K::InterfaceDescription, K::Packet,
                                         K::Packet, K::Packet}));
        ASSERT_EQ(got.size(), 4u);
        ASSERT_EQ(file.interfaces().size(), 3u);
        EXPECT_EQ(file.interfaces()[0].name, "eth0@cpu1");
        EXPECT_EQ(file.interfaces()[1].name, "eth0@cpu1:drop");
        // The first section: microseconds by default, nanoseconds by if_tsresol 9.
        EXPECT_EQ(got[0].interface_id, 1u);
        EXPECT_EQ(got[0].timestamp_ns, 1'795'431'326'000'000'000ull);
        EXPECT_EQ(got[0].comment, "drop reason X");
        EXPECT_EQ(got[0].flags, 2u);
        EXPECT_EQ(got[0].drop_count, 7u);
        EXPECT_EQ(got[0].queue, 3u);
        EXPECT_EQ(got[0].xdp_verdict, 1u);
        // The second section numbers its interfaces from 0 again; 2^-10 s ticks.
        EXPECT_EQ(got[1].interface_id, 2u);
        EXPECT_EQ(got[1].timestamp_ns, 3'500'000'000ull);
        EXPECT_EQ(got[1].orig_len, 1500u);
        EXPECT_FALSE(got[1].queue);
        EXPECT_EQ(got[2].interface_id, 2u); // simple packet block: interface 0
        EXPECT_EQ(got[3].drop_count, 9u);   // obsolete packet block
        EXPECT_EQ(datas, (std::vector<Bytes>{f1, f2, f3, f4}));
    }
}

TEST(CaptureFile, MalformedInputIsRefusedInOneLine)
{
    const Bytes good = cat({shb(false), idb(false, "x", std::nullopt), epb(false, 0, 1, frame(1), 60)});
    EXPECT_NE(refusal(good), "x"); // sanity: reads
    EXPECT_EQ(refusal(good), "");
    EXPECT_NE(refusal({}).find("the input is empty"), std::string::npos);
    EXPECT_NE(refusal({'r', 'o', 'o', 't', ':', 'x'}).find("neither pcap nor pcapng (it starts with 0x726f6f74)"),
              std::string::npos);
    Bytes cut(good.begin(), good.end() - 10);
    EXPECT_NE(refusal(cut).find("the input ends inside a block"), std::string::npos) << refusal(cut);
    Bytes trailer = good;
    trailer[trailer.size() - 4] ^= 4;
    EXPECT_NE(refusal(trailer).find("trailing length differs"), std::string::npos);
    Bytes odd = good;
    odd[good.size() - epb(false, 0, 1, frame(1), 60).size() + 4] = 13;
    EXPECT_NE(refusal(odd).find("a block of length"), std::string::npos) << refusal(odd);
    EXPECT_NE(refusal(odd).find(": bad block length at offset "), std::string::npos) << refusal(odd);
    const Bytes undescribed = cat({shb(false), epb(false, 0, 1, frame(1), 60)});
    EXPECT_NE(refusal(undescribed).find("interface 0, which the section does not describe"), std::string::npos);
    Bytes overlong = epb(false, 0, 1, frame(1), 60);
    overlong[20] = 200; // cap_len beyond the block
    EXPECT_NE(refusal(cat({shb(false), idb(false, "", std::nullopt), overlong})).find("a packet of 200 bytes"),
              std::string::npos);
    Out pcap{false, {}};
    pcap.u32(0xa1b2c3d4).u16(2).u16(4).u32(0).u32(0).u32(96).u32(1).u32(1).u32(0).u32(0x7fffffff).u32(60);
    EXPECT_NE(refusal(pcap.b).find("a packet record of 2147483647 bytes"), std::string::npos);
    // Each refusal is one line naming where.
    EXPECT_EQ(refusal(trailer).find('\n'), std::string::npos);
    EXPECT_NE(refusal(trailer).find(" at offset "), std::string::npos);
}

// libpcap hands out no more of a classic pcap record than the file's
// snapshot length (262144 where the header gives 0), and neither does -r.
TEST(CaptureFile, ClassicPcapRecordsAreCutToTheSnapshotLength)
{
    for (const uint32_t snaplen : {64u, 0u}) {
        Out o{false, {}};
        o.u32(0xa1b2c3d4).u16(2).u16(4).u32(0).u32(0).u32(snaplen).u32(1);
        const Bytes f = frame(1, 96);
        o.u32(1).u32(0).u32(96).u32(96).bytes(f);
        CaptureFile file = CaptureFile::from_bytes(o.b);
        std::vector<Bytes> datas;
        const auto got = packets(file, nullptr, &datas);
        ASSERT_EQ(got.size(), 1u);
        EXPECT_EQ(got[0].cap_len, snaplen ? snaplen : 96u);
        EXPECT_EQ(got[0].orig_len, 96u);
        EXPECT_EQ(datas[0], Bytes(f.begin(), f.begin() + (snaplen ? snaplen : 96)));
    }
}

// Sections xdpcap wrote (by their shb_userappl) mark their interfaces so;
// another program's do not.
TEST(CaptureFile, SectionsWrittenByXdpcapAreKnown)
{
    const Bytes bytes = cat({shb(false, "xdpcap 1.0"), idb(false, "eth0@cpu0", std::nullopt),
                             shb(false, "Dumpcap (Wireshark) 4.0.17"), idb(false, "eth0", std::nullopt),
                             shb(false), idb(false, "", std::nullopt)});
    CaptureFile file = CaptureFile::from_bytes(bytes);
    packets(file);
    ASSERT_EQ(file.interfaces().size(), 3u);
    EXPECT_TRUE(file.interfaces()[0].written_by_xdpcap);
    EXPECT_FALSE(file.interfaces()[1].written_by_xdpcap);
    EXPECT_FALSE(file.interfaces()[2].written_by_xdpcap);
}

// xdpcap's description of a container's host-side veth names the container,
// which -r shows in the interface column.
TEST(CaptureFile, ContainerOfTheDescription)
{
    EXPECT_EQ(described_container("veth1a2b (ifindex 7, container web, podman), CPU 3, tcx ingress, driver veth"),
              "web");
    EXPECT_EQ(described_container("eth0 (ifindex 2), CPU 0, XDP native mode, driver ice"), "");
    EXPECT_EQ(described_container("eth0 (ifindex 2), CPU 0, the container, done"), "");
    EXPECT_EQ(described_container("container web"), "");
}

namespace {

// The packets' markers read before the input failed, and what it said.
struct UpToBreak {
    std::vector<uint8_t> markers;
    std::string error;
};

UpToBreak read_up_to_break(CaptureFile file)
{
    UpToBreak got;
    try {
        while (auto r = file.next()) {
            if (r->kind == CaptureFile::Record::Kind::Packet)
                got.markers.push_back(r->packet.data[r->packet.cap_len - 1]);
        }
    } catch (const Error& e) {
        got.error = e.what();
    }
    return got;
}

} // namespace

// A file cut anywhere hands out every record before the cut, then says
// "truncated" and the offset of the record the cut is in.
TEST(CaptureFile, CutFilesAreReadUpToTheCut)
{
    std::vector<Bytes> pcapng_blocks = {shb(false, "xdpcap 1.0"), idb(false, "eth0@cpu0", 9),
                                              epb(false, 0, 1, frame(1), 60), idb(false, "eth0@cpu1", 6),
                                              epb(false, 1, 2, frame(2), 60), epb(false, 0, 3, frame(3), 60)};
    Out pcap{false, {}};
    pcap.u32(0xa1b2c3d4).u16(2).u16(4).u32(0).u32(0).u32(262144).u32(1);
    std::vector<Bytes> pcap_records{pcap.b};
    for (uint8_t marker = 1; marker <= 3; ++marker) {
        Out r{false, {}};
        const Bytes f = frame(marker, 60 + marker);
        r.u32(1).u32(0).u32(static_cast<uint32_t>(f.size())).u32(static_cast<uint32_t>(f.size())).bytes(f);
        pcap_records.push_back(r.b);
    }
    for (const auto* records : {&pcapng_blocks, &pcap_records}) {
        Bytes whole;
        struct Extent {
            size_t start, end;
            bool packet;
        };
        std::vector<Extent> extents;
        for (const Bytes& r : *records) {
            const bool packet = records == &pcap_records ? !extents.empty() : r[0] == 6;
            extents.push_back({whole.size(), whole.size() + r.size(), packet});
            whole.insert(whole.end(), r.begin(), r.end());
        }
        for (size_t cut = 1; cut <= whole.size(); ++cut) {
            size_t whole_packets = 0;
            const Extent* cut_in = nullptr;
            for (const Extent& e : extents) {
                whole_packets += e.packet && e.end <= cut;
                if (e.start < cut && cut < e.end)
                    cut_in = &e;
            }
            const UpToBreak got = read_up_to_break(CaptureFile::from_bytes(Bytes(whole.begin(), whole.begin() + cut)));
            EXPECT_EQ(got.markers.size(), whole_packets) << "cut at " << cut;
            for (size_t i = 0; i < got.markers.size(); ++i)
                EXPECT_EQ(got.markers[i], i + 1) << "cut at " << cut;
            if (!cut_in) {
                EXPECT_EQ(got.error, "") << "cut at " << cut;
                continue;
            }
            EXPECT_EQ(got.error.rfind("input: truncated at offset " + std::to_string(cut_in->start) +
                                          ": the input ends inside ",
                                      0),
                      0u)
                << "cut at " << cut << ": " << got.error;
            EXPECT_EQ(got.error.find('\n'), std::string::npos);
        }
    }
}

// A file another capture still writes is read to its current end, without
// waiting: a block half written is the truncated case.
TEST(CaptureFile, FileBeingWrittenIsReadToItsCurrentEnd)
{
    char name[] = "/tmp/xdpcap-growing-XXXXXX";
    const int fd = ::mkstemp(name);
    ASSERT_GE(fd, 0);
    ::close(fd);
    const Bytes written = cat({shb(false), idb(false, "", std::nullopt), epb(false, 0, 1, frame(1), 60),
                               epb(false, 0, 2, frame(2), 60)});
    std::ofstream writer(name, std::ios::binary);
    writer.write(reinterpret_cast<const char*>(written.data()), static_cast<std::streamsize>(written.size() - 20));
    writer.flush();
    const UpToBreak got = read_up_to_break(CaptureFile::open(name));
    ::unlink(name);
    EXPECT_EQ(got.markers, std::vector<uint8_t>{1});
    EXPECT_NE(got.error.find(std::string(name) + ": truncated at offset "), std::string::npos) << got.error;
}
