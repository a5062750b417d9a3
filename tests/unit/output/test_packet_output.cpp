// The block a captured frame costs in the file: a 64-byte frame decoded from
// its perf record and written by PacketOutput, byte for byte. Every option
// on it is pinned here, so that one more per-packet option (or string) shows
// up as a failing size.
#include <gtest/gtest.h>

#include <cstring>

#include "ring/record.hpp"
#include "output/packet_output.hpp"
#include "output/pcapng.hpp"
#include "record_builder.hpp"
#include "test_outputs.hpp"

using namespace xdpcap;
using namespace xdpcap::test;

namespace {

constexpr uint64_t kRealtime = 0x0000000100000002ull;

Bytes frame64()
{
    Bytes frame(64);
    for (size_t i = 0; i < frame.size(); ++i)
        frame[i] = static_cast<uint8_t>(i);
    return frame;
}

// The file's bytes after the section header and interface description.
Bytes packet_blocks(const std::vector<Bytes>& records, bool verbose = false, bool single_queue = false)
{
    MemFile file;
    {
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false, {"eth0@cpu0"});
        output.set_interface_traits({{pcapng::kHashToeplitz, single_queue}});
        output.write_hash_types(verbose);
        output.begin({}, {pcapng::InterfaceDescription{}});
        for (const Bytes& record : records) {
            const DecodedRecord decoded = decode_record(record.data(), record.size());
            EXPECT_EQ(decoded.kind, RecordKind::Sample);
            output.write(0, decoded.sample, kRealtime);
        }
        output.flush();
    }
    const Bytes all = file.contents();
    size_t at = 0;
    for (int header_blocks = 0; header_blocks < 2; ++header_blocks) {
        uint32_t length;
        std::memcpy(&length, &all[at + 4], 4);
        at += length;
    }
    return Bytes(all.begin() + static_cast<long>(at), all.end());
}

Bytes with_hash(Bytes record, uint32_t hash, uint16_t hash_type)
{
    const uint16_t flags = XDPCAP_FLAG_HASH;
    std::memcpy(record.data() + 12 + offsetof(xdpcap_meta, hash), &hash, 4);
    std::memcpy(record.data() + 12 + offsetof(xdpcap_meta, hash_type), &hash_type, 2);
    std::memcpy(record.data() + 12 + offsetof(xdpcap_meta, flags), &flags, 2);
    return record;
}

// Header (28), the frame (64), epb_flags, epb_queue, end of options, length.
Bytes plain_block(uint32_t length)
{
    Bytes block = {
        0x06, 0x00, 0x00, 0x00, static_cast<uint8_t>(length), 0x00, 0x00, 0x00, // EPB, its length
        0x00, 0x00, 0x00, 0x00,                                                 // interface 0
        0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,                         // timestamp high, low
        0x40, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00,                         // caplen, origlen 64
    };
    const Bytes frame = frame64();
    block.insert(block.end(), frame.begin(), frame.end());
    const Bytes options = {
        0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, // epb_flags: inbound
        0x06, 0x00, 0x04, 0x00, 0x02, 0x00, 0x00, 0x00, // epb_queue 2
    };
    block.insert(block.end(), options.begin(), options.end());
    return block;
}

void end_block(Bytes& block, uint32_t length)
{
    const Bytes tail = {0x00, 0x00, 0x00, 0x00, static_cast<uint8_t>(length), 0x00, 0x00, 0x00};
    block.insert(block.end(), tail.begin(), tail.end());
}

} // namespace

TEST(PacketLayout, PlainFrameOf64BytesIs116Bytes)
{
    Bytes expected = plain_block(116);
    end_block(expected, 116);
    const Bytes blocks = packet_blocks({sample_record(frame64(), 64)});
    ASSERT_EQ(blocks.size(), 116u);
    EXPECT_EQ(blocks, expected);
}

Bytes with_queue(Bytes record, uint32_t queue)
{
    std::memcpy(record.data() + 12 + offsetof(xdpcap_meta, rx_queue), &queue, 4);
    return record;
}

// A device with one queue (a veth, lo, a bridge): a packet of queue 0
// carries no epb_queue; one of another queue (the device grew) still does.
TEST(PacketLayout, PlainFrameOf64BytesOnASingleQueueDeviceIs108Bytes)
{
    Bytes expected = plain_block(108);
    expected.resize(expected.size() - 8); // no epb_queue
    end_block(expected, 108);
    EXPECT_EQ(packet_blocks({with_queue(sample_record(frame64(), 64), 0)}, false, true), expected);

    Bytes queue2 = plain_block(116);
    end_block(queue2, 116);
    EXPECT_EQ(packet_blocks({sample_record(frame64(), 64)}, false, true), queue2) << "queue 2 is said";
    EXPECT_EQ(packet_blocks({with_queue(sample_record(frame64(), 64), 0)}, false, false).size(), 116u)
        << "a device with several queues: queue 0 is said too";
}

TEST(PacketLayout, FrameWithAHashIs128BytesWithoutItsTypeUnlessVerbose)
{
    Bytes expected = plain_block(128);
    const Bytes hash = {0x03, 0x00, 0x05, 0x00, 0x05, 0x44, 0x33, 0x22, 0x11, 0x00, 0x00, 0x00}; // epb_hash, Toeplitz
    expected.insert(expected.end(), hash.begin(), hash.end());
    end_block(expected, 128);
    const Bytes record = with_hash(sample_record(frame64(), 64), 0x11223344, 0x2a /* L4_IPV6_UDP */);
    EXPECT_EQ(packet_blocks({record}), expected) << "as large as a frame without a hash was before";

    const Bytes verbose = packet_blocks({record}, true);
    const std::string comment = "RSS hash type L4_IPV6_UDP";
    ASSERT_EQ(verbose.size(), 128u + 4 + pcapng::pad4(comment.size())) << "-v: the type in a comment";
    EXPECT_EQ(std::string(verbose.begin() + 124, verbose.begin() + 124 + static_cast<long>(comment.size())), comment);
}

TEST(PacketLayout, DropCountOnlyAfterALoss)
{
    const Bytes blocks = packet_blocks({sample_record(frame64(), 64, XDPCAP_META_TAG, 3), sample_record(frame64(), 64)});
    ASSERT_EQ(blocks.size(), 128u + 116u);
    const Bytes dropcount = {0x04, 0x00, 0x08, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    EXPECT_EQ(Bytes(blocks.begin() + 108, blocks.begin() + 120), dropcount) << "epb_dropcount 3 after the queue";
    EXPECT_EQ(blocks[4], 128);
    EXPECT_EQ(blocks[128 + 4], 116) << "the next packet, with nothing lost before it, has none";
}

// --drops: the drop record of a packet captured before it carries that
// record's epb_packetid; any other packet a new one. Without --drops, no
// packet carries one (see PlainFrameOf64BytesIs116Bytes).
TEST(PacketLayout, DropOfACapturedPacketSharesItsPacketId)
{
    DropLabels labels({{3, "NO_SOCKET"}}, KernelSymbols{});
    MemFile file;
    {
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false, {"eth0@cpu0"});
        output.set_drop_labels(&labels);
        output.begin({}, {pcapng::InterfaceDescription{}});
        const Bytes record = sample_record(frame64(), 64);
        const Sample captured = decode_record(record.data(), record.size()).sample;
        Sample dropped = captured;
        dropped.hook = XDPCAP_HOOK_DROP;
        dropped.verdict = 3;
        Bytes other = frame64();
        other[40] ^= 1;
        Sample unknown_drop = dropped;
        unknown_drop.data = other.data();
        output.write(0, captured, kRealtime);
        output.write(0, dropped, kRealtime);
        output.write(0, unknown_drop, kRealtime);
        output.write(0, captured, kRealtime); // the same bytes again: a packet of its own
        output.flush();
    }
    const Bytes all = file.contents();
    std::vector<uint64_t> ids;
    size_t at = 0;
    while (at + 12 <= all.size()) {
        uint32_t type, length;
        std::memcpy(&type, &all[at], 4);
        std::memcpy(&length, &all[at + 4], 4);
        if (type == pcapng::kEpbType) {
            // The option after epb_flags and epb_queue: epb_packetid.
            const size_t option = at + 28 + 64 + 16;
            EXPECT_EQ(Bytes(all.begin() + static_cast<long>(option), all.begin() + static_cast<long>(option) + 4),
                      (Bytes{0x05, 0x00, 0x08, 0x00}));
            uint64_t id;
            std::memcpy(&id, &all[option + 4], 8);
            ids.push_back(id);
        }
        at += length;
    }
    EXPECT_EQ(ids, (std::vector<uint64_t>{1, 1, 2, 3}));
}

namespace {

// The text lines of one ingress frame on each of these interfaces, added as
// a file describes them (-r), each interface's frame after its description.
std::vector<std::string> lines_as_added(const std::vector<std::string>& names)
{
    MemFile file;
    {
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Text, false, {});
        const Bytes frame = frame64();
        for (uint32_t id = 0; id < names.size(); ++id)
            output.add_interface(names[id]);
        for (uint32_t id = 0; id < names.size(); ++id) {
            Sample s{};
            s.cap_len = s.orig_len = static_cast<uint32_t>(frame.size());
            s.data = frame.data();
            s.direction = XDPCAP_DIR_INGRESS;
            output.write(id, s, kRealtime);
        }
        output.flush();
    }
    const Bytes all = file.contents();
    std::vector<std::string> lines;
    std::string text(all.begin(), all.end());
    for (size_t at = 0; at < text.size();) {
        const size_t end = text.find('\n', at);
        // The first line of each packet's text, not its dump.
        if (text[at] != '\t' && text[at] != ' ')
            lines.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    return lines;
}

} // namespace

// One device's interfaces leave the lines as tcpdump's; a second device,
// however late it is described, gives every interface's lines the column.
TEST(PacketText, InterfacesAddedOneByOne)
{
    const auto one = lines_as_added({"eth0@cpu0", "eth0@cpu1", "", "eth0@cpu3"});
    ASSERT_EQ(one.size(), 4u);
    for (const std::string& line : one)
        EXPECT_EQ(line.find("In "), std::string::npos) << line;
    std::vector<std::string> many;
    for (int i = 0; i < 3000; ++i)
        many.push_back("eth0@cpu" + std::to_string(i));
    many.push_back("veth1@cpu0");
    const auto several = lines_as_added(many);
    ASSERT_EQ(several.size(), many.size());
    EXPECT_NE(several.front().find(" eth0  In  "), std::string::npos) << several.front();
    EXPECT_NE(several[2999].find(" eth0  In  "), std::string::npos) << several[2999];
    EXPECT_NE(several.back().find(" veth1 In  "), std::string::npos) << several.back();
}

// A container's host-side veth: its column names the container beside the
// device, through a rename too, and --print-cpu's prefix does alike.
TEST(PacketText, ContainerInTheColumn)
{
    const auto lines = [](bool cpu_prefix, bool rename) {
        MemFile file;
        {
            text::TextOptions options;
            options.cpu_prefix = cpu_prefix;
            PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Text, false,
                                {"eth0@cpu0", "veth1a2b@cpu0"}, options);
            output.name_container(1, "web");
            const Bytes frame = frame64();
            Sample s{};
            s.cap_len = s.orig_len = static_cast<uint32_t>(frame.size());
            s.data = frame.data();
            s.direction = XDPCAP_DIR_INGRESS;
            output.write(0, s, kRealtime);
            if (rename)
                output.rename_device(1, "lan9");
            s.direction = XDPCAP_DIR_EGRESS;
            output.write(1, s, kRealtime);
            output.flush();
        }
        const Bytes text = file.contents();
        return std::string(text.begin(), text.end());
    };
    const std::string column = lines(false, false);
    EXPECT_NE(column.find(" eth0  In  "), std::string::npos) << column;
    EXPECT_NE(column.find(" veth1a2b(web) Out "), std::string::npos) << column;
    const std::string renamed = lines(false, true);
    EXPECT_NE(renamed.find(" lan9(web) Out "), std::string::npos) << renamed;
    // -r: a file's interface, as its description named the container.
    MemFile file;
    {
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Text, false, {});
        output.add_interface("eth0@cpu0");
        output.add_interface("veth1a2b@cpu0", text::LinkType::Ethernet, "web");
        const Bytes frame = frame64();
        Sample s{};
        s.cap_len = s.orig_len = static_cast<uint32_t>(frame.size());
        s.data = frame.data();
        s.direction = XDPCAP_DIR_INGRESS;
        output.write(1, s, kRealtime);
        output.flush();
    }
    const Bytes read = file.contents();
    const std::string replayed(read.begin(), read.end());
    EXPECT_NE(replayed.find(" veth1a2b(web) In  "), std::string::npos) << replayed;
    const std::string cpu = lines(true, false);
    EXPECT_NE(cpu.find(" eth0@cpu0 In "), std::string::npos) << cpu;
    EXPECT_NE(cpu.find(" veth1a2b(web)@cpu0 Out "), std::string::npos) << cpu;
}

namespace {

// A pcapng file's blocks in order: the type and, for IDBs, the name (its
// first option); for EPBs and ISBs, the interface id.
struct Block {
    Block(uint32_t block_type, uint32_t id = 0, std::string idb_name = {})
        : type(block_type), interface_id(id), name(std::move(idb_name))
    {
    }
    uint32_t type;
    uint32_t interface_id;
    std::string name;
    bool operator==(const Block&) const = default;
};

[[maybe_unused]] void PrintTo(const Block& b, std::ostream* os)
{
    *os << "{type " << b.type << ", interface " << b.interface_id << ", '" << b.name << "'}";
}

std::vector<Block> blocks_of(const Bytes& all)
{
    std::vector<Block> blocks;
    for (size_t at = 0; at + 12 <= all.size();) {
        uint32_t type, length;
        std::memcpy(&type, &all[at], 4);
        std::memcpy(&length, &all[at + 4], 4);
        Block block{type};
        if (type == pcapng::kEpbType || type == pcapng::kIsbType) {
            std::memcpy(&block.interface_id, &all[at + 8], 4);
        } else if (type == pcapng::kIdbType) {
            uint16_t code, size;
            std::memcpy(&code, &all[at + 16], 2);
            std::memcpy(&size, &all[at + 18], 2);
            if (code == 2)
                block.name.assign(reinterpret_cast<const char*>(&all[at + 20]), size);
        }
        blocks.push_back(block);
        at += length;
    }
    return blocks;
}

pcapng::InterfaceDescription named(const std::string& name)
{
    pcapng::InterfaceDescription idb;
    idb.name = name;
    return idb;
}

pcapng::InterfaceStatistics counted(uint32_t id, uint64_t received)
{
    pcapng::InterfaceStatistics isb;
    isb.interface_id = id;
    isb.if_received = received;
    return isb;
}

} // namespace

// -i any: the first interface's IDB comes up front (libpcap wants one),
// every other one just before its first packet, and the file's ids follow
// the order they were written in; the statistics name those ids, and an
// interface that carried no packet but counted some gets its IDB before its
// ISB; one that counted nothing (and is not the first) gets neither.
TEST(PacketLayout, InterfacesDescribedOnFirstUse)
{
    MemFile file;
    {
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false,
                            {"a@cpu0", "a@cpu1", "b@cpu0", "b@cpu1"});
        output.begin({}, {named("a@cpu0"), named("a@cpu1"), named("b@cpu0"), named("b@cpu1")}, true);
        const Bytes record = sample_record(frame64(), 64);
        const Sample sample = decode_record(record.data(), record.size()).sample;
        output.write(3, sample, kRealtime);
        output.write(1, sample, kRealtime);
        output.write(3, sample, kRealtime);
        output.finish({counted(0, 0), counted(1, 1), counted(2, 5), counted(3, 2)});
    }
    const std::vector<Block> want = {
        {pcapng::kShbType},     {pcapng::kIdbType, 0, "a@cpu0"}, {pcapng::kIdbType, 0, "b@cpu1"},
        {pcapng::kEpbType, 1}, {pcapng::kIdbType, 0, "a@cpu1"}, {pcapng::kEpbType, 2},
        {pcapng::kEpbType, 1}, {pcapng::kIsbType, 0},           {pcapng::kIsbType, 2},
        {pcapng::kIdbType, 0, "b@cpu0"}, {pcapng::kIsbType, 3}, {pcapng::kIsbType, 1},
    };
    EXPECT_EQ(blocks_of(file.contents()), want);
}

// An interface that joins during the capture: the next interface id, its IDB
// written just before its first packet, its text lines named after it.
TEST(PacketLayout, JoinedInterfaceDescribedBeforeItsFirstPacket)
{
    MemFile file;
    {
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false, {"a@cpu0"});
        output.begin({}, {named("a@cpu0")}, true);
        const Bytes record = sample_record(frame64(), 64);
        const Sample sample = decode_record(record.data(), record.size()).sample;
        output.write(0, sample, kRealtime);
        output.add_live_interface("veth9@cpu0", named("veth9@cpu0"), {});
        output.add_live_interface("veth9@cpu1", named("veth9@cpu1"), {});
        output.write(2, sample, kRealtime);
        output.write(0, sample, kRealtime);
        output.finish({counted(0, 2), counted(1, 0), counted(2, 1)});
    }
    const std::vector<Block> want = {
        {pcapng::kShbType},    {pcapng::kIdbType, 0, "a@cpu0"}, {pcapng::kEpbType, 0},
        {pcapng::kIdbType, 0, "veth9@cpu1"}, {pcapng::kEpbType, 1}, {pcapng::kEpbType, 0},
        {pcapng::kIsbType, 0}, {pcapng::kIsbType, 1},
    };
    EXPECT_EQ(blocks_of(file.contents()), want);

    // A pattern that matched one interface at the start: named from the
    // first line on, as tcpdump -i any's lines are.
    MemFile text_file;
    {
        PacketOutput output(Sink::open_file(text_file.path()), PacketOutput::Format::Text, false, {"eth0@cpu0"});
        output.name_devices();
        const Bytes frame = frame64();
        Sample s{};
        s.cap_len = s.orig_len = static_cast<uint32_t>(frame.size());
        s.data = frame.data();
        s.direction = XDPCAP_DIR_INGRESS;
        output.write(0, s, kRealtime);
        output.add_live_interface("veth9@cpu0", named("veth9@cpu0"), {});
        output.write(1, s, kRealtime);
        output.flush();
    }
    const Bytes text = text_file.contents();
    const std::string lines(text.begin(), text.end());
    const size_t second = lines.find('\n') + 1;
    EXPECT_NE(lines.substr(0, second).find(" eth0  In  "), std::string::npos) << lines;
    EXPECT_NE(lines.substr(second).find(" veth9 In  "), std::string::npos) << lines;
}

// Without it every IDB comes first, in the caller's order, as before.
TEST(PacketLayout, InterfacesDescribedUpFront)
{
    MemFile file;
    {
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false, {"a@cpu0", "b@cpu0"});
        output.begin({}, {named("a@cpu0"), named("b@cpu0")});
        const Bytes record = sample_record(frame64(), 64);
        output.write(1, decode_record(record.data(), record.size()).sample, kRealtime);
        output.finish({counted(0, 0), counted(1, 1)});
    }
    const std::vector<Block> want = {
        {pcapng::kShbType},     {pcapng::kIdbType, 0, "a@cpu0"}, {pcapng::kIdbType, 0, "b@cpu0"},
        {pcapng::kEpbType, 1}, {pcapng::kIsbType, 0},           {pcapng::kIsbType, 1},
    };
    EXPECT_EQ(blocks_of(file.contents()), want);
}

// A joined veth's container found later: its column names it from then on,
// and its IDB when written afterwards; one written before keeps its text.
TEST(PacketLayout, ContainerFoundAfterJoin)
{
    const Bytes frame = frame64();
    Sample s{};
    s.cap_len = s.orig_len = static_cast<uint32_t>(frame.size());
    s.data = frame.data();
    s.direction = XDPCAP_DIR_INGRESS;
    MemFile text_file;
    {
        PacketOutput output(Sink::open_file(text_file.path()), PacketOutput::Format::Text, false,
                            {"eth0@cpu0", "veth1@cpu0"});
        output.write(1, s, kRealtime);
        output.describe_container(1, "web", "veth1 (ifindex 7, container web, podman), CPU 0");
        output.write(1, s, kRealtime);
        output.flush();
    }
    const Bytes text = text_file.contents();
    const std::string lines(text.begin(), text.end());
    const size_t second = lines.find('\n') + 1;
    EXPECT_NE(lines.substr(0, second).find(" veth1 In  "), std::string::npos) << lines;
    EXPECT_NE(lines.substr(second).find(" veth1(web) In  "), std::string::npos) << lines;

    MemFile file;
    {
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false,
                            {"eth0@cpu0", "veth1@cpu0", "veth1@cpu1"});
        output.begin({}, {named("eth0@cpu0"), named("veth1@cpu0"), named("veth1@cpu1")}, true);
        const Bytes record = sample_record(frame64(), 64);
        output.write(1, decode_record(record.data(), record.size()).sample, kRealtime);
        output.describe_container(1, "web", "veth1 (ifindex 7, container web, podman), CPU 0");
        output.describe_container(2, "web", "veth1 (ifindex 7, container web, podman), CPU 1");
        output.write(2, decode_record(record.data(), record.size()).sample, kRealtime);
        output.flush();
    }
    const Bytes written = file.contents();
    const std::string contents(written.begin(), written.end());
    EXPECT_EQ(contents.find("container web, podman), CPU 0"), std::string::npos);
    EXPECT_NE(contents.find("veth1 (ifindex 7, container web, podman), CPU 1"), std::string::npos);
}

// A device renamed during the capture: later lines carry its new name, and
// so does its IDB when it is written after the rename (on first use).
TEST(PacketLayout, RenamedDeviceFollowed)
{
    MemFile text_file;
    {
        PacketOutput output(Sink::open_file(text_file.path()), PacketOutput::Format::Text, false,
                            {"eth0@cpu0", "veth1@cpu0"});
        const Bytes frame = frame64();
        Sample s{};
        s.cap_len = s.orig_len = static_cast<uint32_t>(frame.size());
        s.data = frame.data();
        s.direction = XDPCAP_DIR_INGRESS;
        output.write(1, s, kRealtime);
        output.rename_device(1, "lan9");
        output.write(1, s, kRealtime);
        output.flush();
    }
    const Bytes text = text_file.contents();
    const std::string lines(text.begin(), text.end());
    const size_t second = lines.find('\n') + 1;
    EXPECT_NE(lines.substr(0, second).find(" veth1 In  "), std::string::npos) << lines;
    EXPECT_NE(lines.substr(second).find(" lan9  In  "), std::string::npos) << lines;

    MemFile file;
    {
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false,
                            {"eth0@cpu0", "veth1@cpu0"});
        output.begin({}, {named("eth0@cpu0"), named("veth1@cpu0")}, true);
        output.rename_device(1, "lan9");
        const Bytes record = sample_record(frame64(), 64);
        output.write(1, decode_record(record.data(), record.size()).sample, kRealtime);
        output.flush();
    }
    const std::vector<Block> want = {{pcapng::kShbType}, {pcapng::kIdbType, 0, "eth0@cpu0"},
                                     {pcapng::kIdbType, 0, "lan9@cpu0"}, {pcapng::kEpbType, 1}};
    EXPECT_EQ(blocks_of(file.contents()), want);
}

namespace {

// A sample of every kind write_buffered() takes, as a batch carries them.
struct BufferedCase {
    uint32_t cap_len;
    uint32_t orig_len;
    uint8_t direction;
    uint16_t flags;
    uint32_t queue;
    uint32_t drops_before;
    bool stays; // the bytes stay until released: long ones are referred to
};

std::vector<BufferedCase> buffered_cases()
{
    std::vector<BufferedCase> cases;
    const uint16_t flag_sets[] = {0, XDPCAP_FLAG_HASH, XDPCAP_FLAG_CSUM_PARTIAL | XDPCAP_FLAG_GSO,
                                  XDPCAP_FLAG_HASH | XDPCAP_FLAG_VLAN_RESTORED | XDPCAP_FLAG_CSUM_PARTIAL};
    const uint32_t lengths[] = {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 511, 512, 1500, 2048};
    uint32_t n = 0;
    for (uint32_t cap_len : lengths) {
        for (uint16_t flags : flag_sets) {
            for (uint8_t direction : {uint8_t{XDPCAP_DIR_INGRESS}, uint8_t{XDPCAP_DIR_EGRESS}}) {
                ++n;
                cases.push_back(BufferedCase{cap_len, cap_len + (n % 3 == 0 ? 10u : 0u), direction, flags,
                                             n % 4 == 0 ? 0u : n % 5, n % 7 == 0 ? n : 0u, n % 2 == 0});
            }
        }
    }
    return cases;
}

Sample buffered_sample(const BufferedCase& c, const Bytes& bytes, uint64_t n)
{
    Sample sample{};
    sample.ifindex = 7;
    sample.rx_queue = c.queue;
    sample.orig_len = c.orig_len;
    sample.cap_len = c.cap_len;
    sample.drops_before = c.drops_before;
    sample.tstamp_ns = 1000 + n;
    sample.direction = c.direction;
    sample.hook = c.direction == XDPCAP_DIR_EGRESS ? XDPCAP_HOOK_TC_EGRESS : XDPCAP_HOOK_TC_INGRESS;
    sample.data = bytes.data();
    sample.hash = 0x11223344u + static_cast<uint32_t>(n);
    sample.hash_type = 0x2a;
    sample.flags = c.flags;
    return sample;
}

// Every case through write() or through write_buffered(), on a device with
// one queue or several; the file's bytes.
Bytes written_blocks(bool buffered, bool single_queue)
{
    Bytes frame(2048);
    for (size_t i = 0; i < frame.size(); ++i)
        frame[i] = static_cast<uint8_t>(i * 7 + 1);
    MemFile file;
    {
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false, {"eth0@cpu0"});
        output.set_interface_traits({{pcapng::kHashToeplitz, single_queue}});
        output.begin({}, {pcapng::InterfaceDescription{}});
        EXPECT_TRUE(output.writes_blocks_only());
        uint64_t n = 0;
        for (const BufferedCase& c : buffered_cases()) {
            const Sample sample = buffered_sample(c, frame, n++);
            if (buffered)
                EXPECT_TRUE(output.write_buffered(0, sample, kRealtime + n, c.stays)) << "case " << n;
            else
                output.write(0, sample, kRealtime + n, c.stays);
        }
        EXPECT_EQ(output.accepted(), n);
        output.release_references();
        output.flush();
    }
    return file.contents();
}

Bytes buffered_blocks(const std::vector<Bytes>& records, bool single_queue = false)
{
    MemFile file;
    {
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false, {"eth0@cpu0"});
        output.set_interface_traits({{pcapng::kHashToeplitz, single_queue}});
        output.begin({}, {});
        for (const Bytes& record : records) {
            const DecodedRecord decoded = decode_record(record.data(), record.size());
            EXPECT_EQ(decoded.kind, RecordKind::Sample);
            EXPECT_TRUE(output.write_buffered(0, decoded.sample, kRealtime, true));
        }
        output.flush();
    }
    const Bytes all = file.contents();
    uint32_t header;
    std::memcpy(&header, &all[4], 4);
    return Bytes(all.begin() + header, all.end());
}

} // namespace

// The writer of the frames the merge takes in a row from a batch writes the
// very blocks write() does: every length around the padding and the copy's
// steps, copied or referred to, every option it carries.
TEST(PacketLayout, BlocksWrittenFromABatchAreThoseOfWrite)
{
    for (bool single_queue : {false, true}) {
        const Bytes general = written_blocks(false, single_queue);
        const Bytes buffered = written_blocks(true, single_queue);
        ASSERT_GT(general.size(), 40'000u);
        EXPECT_TRUE(buffered == general) << "single queue " << single_queue;
    }
    // And the golden blocks of the layout tests above.
    Bytes plain = plain_block(116);
    end_block(plain, 116);
    EXPECT_EQ(buffered_blocks({sample_record(frame64(), 64)}), plain);
    Bytes single = plain_block(108);
    single.resize(single.size() - 8);
    end_block(single, 108);
    EXPECT_EQ(buffered_blocks({with_queue(sample_record(frame64(), 64), 0)}, true), single);
    Bytes hashed = plain_block(128);
    const Bytes hash = {0x03, 0x00, 0x05, 0x00, 0x05, 0x44, 0x33, 0x22, 0x11, 0x00, 0x00, 0x00};
    hashed.insert(hashed.end(), hash.begin(), hash.end());
    end_block(hashed, 128);
    EXPECT_EQ(buffered_blocks({with_hash(sample_record(frame64(), 64), 0x11223344, 0x2a)}), hashed);
}

// What write_buffered() leaves to write(): a block the buffer cannot take
// without a flush, and options of other kinds. Nothing is written then.
TEST(PacketLayout, BufferedWriterLeavesWhatItCannotWriteAsIs)
{
    MemFile file;
    PacketOutput output(Sink::open_file(file.path(), 256), PacketOutput::Format::Pcapng, false, {"eth0@cpu0"});
    output.begin({}, {});
    const uint64_t start = output.sink().bytes();
    const Bytes record = sample_record(frame64(), 64);
    const Sample plain = decode_record(record.data(), record.size()).sample;
    EXPECT_TRUE(output.write_buffered(0, plain, kRealtime, false));
    EXPECT_TRUE(output.write_buffered(0, plain, kRealtime, false));
    EXPECT_FALSE(output.write_buffered(0, plain, kRealtime, false)) << "a third 116-byte block needs a flush";
    Sample exit = plain;
    exit.hook = XDPCAP_HOOK_FEXIT;
    Sample dropped = plain;
    dropped.hook = XDPCAP_HOOK_DROP;
    Sample owned = plain;
    owned.flags = XDPCAP_FLAG_PROCESS;
    output.flush();
    for (const Sample& other : {exit, dropped, owned})
        EXPECT_FALSE(output.write_buffered(0, other, kRealtime, false));
    EXPECT_EQ(output.sink().bytes() - start, 232u);
    EXPECT_EQ(output.accepted(), 2u);

    PacketOutput verbose(Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false, {"eth0@cpu0"});
    verbose.write_hash_types(true);
    EXPECT_FALSE(verbose.writes_blocks_only()) << "-v's hash type comments";
    PacketOutput text(Sink::open_file(file.path()), PacketOutput::Format::Text, false, {"eth0@cpu0"});
    EXPECT_FALSE(text.writes_blocks_only());
}
