// The capture program's re-insertion of the VLAN tag a NIC took out of a
// received frame, run by the kernel (BPF_PROG_TEST_RUN) at every snapshot
// length around the tag: cut before it, inside it, just after it, and
// further on. The tag is handed over in rx_meta as the device-bound program
// would hand it, so this runs on kernels without the kfunc too. Needs root
// (CI runs the unit tests as root).
#include <gtest/gtest.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <arpa/inet.h>
#include <sched.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "programs/capture.hpp"
#include "ring/record.hpp"
#include "ring/rings.hpp"
#include "xdpcap_abi.h"

using namespace xdpcap;

namespace {

using Bytes = std::vector<uint8_t>;

// 198.18.0.1.5000 > 198.18.0.2.7000 UDP, untagged as the NIC left it.
Bytes frame_without_tag()
{
    Bytes f = {0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00};
    const Bytes ip_udp = {0x45, 0, 0, 0x24, 0, 1, 0, 0, 0x40, 0x11, 0x0e, 0x0e, 0xc6, 0x12, 0, 1,
                          0xc6, 0x12, 0,    2, 0x13, 0x88, 0x1b, 0x58, 0, 0x10, 0xb3, 0x30};
    f.insert(f.end(), ip_udp.begin(), ip_udp.end());
    for (char c : std::string("abcdefgh"))
        f.push_back(static_cast<uint8_t>(c));
    return f;
}

struct Captured {
    bool ok = false;
    uint32_t orig_len = 0;
    uint16_t flags = 0;
    Bytes data;
};

Captured run_once(uint32_t snaplen, const Bytes& frame, uint16_t proto_be, uint16_t tci, bool tagged)
{
    Captured got;
    CaptureProgram program = CaptureProgram::load(snaplen, 1, false, Direction::InOut);
    // The per-CPU entry the device-bound program would fill, on every CPU.
    const int cpus = libbpf_num_possible_cpus();
    std::vector<xdpcap_rx_meta> rx(static_cast<size_t>(cpus));
    for (auto& m : rx) {
        m = xdpcap_rx_meta{};
        m.flags = tagged ? XDPCAP_FLAG_VLAN_RESTORED : 0;
        m.vlan_proto = proto_be;
        m.vlan_tci = tci;
    }
    const uint32_t key = 0;
    EXPECT_EQ(bpf_map_update_elem(program.rx_meta_map_fd(), &key, rx.data(), BPF_ANY), 0) << std::strerror(errno);
    PerfRings rings(program.events_map_fd(), RingSettings{8, 1});

    bpf_test_run_opts opts{};
    opts.sz = sizeof opts;
    opts.data_in = frame.data();
    opts.data_size_in = static_cast<uint32_t>(frame.size());
    opts.repeat = 1;
    EXPECT_EQ(bpf_prog_test_run_opts(program.program_fd(Hook::Xdp), &opts), 0)
        << std::strerror(errno);
    EXPECT_EQ(opts.retval, static_cast<uint32_t>(XDP_PASS));
    uint64_t corrupt = 0;
    std::vector<uint8_t> scratch(kMaxRecordSize);
    for (PerfRingReader& reader : rings.readers()) {
        reader.drain(
            [&](const uint8_t* record, size_t size) {
                const DecodedRecord decoded = decode_record(record, size);
                if (decoded.kind == RecordKind::Sample) {
                    got.ok = true;
                    got.orig_len = decoded.sample.orig_len;
                    got.flags = decoded.sample.flags;
                    got.data.assign(decoded.sample.data, decoded.sample.data + decoded.sample.cap_len);
                }
                return true;
            },
            scratch.data(), corrupt);
    }
    return got;
}

} // namespace

TEST(TagReinsertion, EverySnapshotLengthAroundTheTag)
{
    if (geteuid() != 0)
        GTEST_SKIP() << "needs root to load BPF programs";
    // One CPU: the per-CPU metadata and the ring the sample lands in.
    cpu_set_t all;
    ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
    struct RestoreAffinity {
        cpu_set_t set;
        ~RestoreAffinity() { sched_setaffinity(0, sizeof set, &set); }
    } restore{all};
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);

    const Bytes frame = frame_without_tag();
    struct Tag {
        uint16_t proto; // host order
        uint16_t tci;
    };
    for (const Tag tag : {Tag{0x8100, 100}, Tag{0x88a8, 0xe00c}}) {
        Bytes wire(frame.begin(), frame.begin() + 12);
        for (uint8_t b : {static_cast<uint8_t>(tag.proto >> 8), static_cast<uint8_t>(tag.proto),
                          static_cast<uint8_t>(tag.tci >> 8), static_cast<uint8_t>(tag.tci)})
            wire.push_back(b);
        wire.insert(wire.end(), frame.begin() + 12, frame.end());
        std::vector<uint32_t> snaplens;
        for (uint32_t s = 1; s <= 24; ++s)
            snaplens.push_back(s);
        for (uint32_t s : {40u, 53u, 54u, 55u, 262144u})
            snaplens.push_back(s);
        for (uint32_t snaplen : snaplens) {
            const Captured got = run_once(snaplen, frame, htons(tag.proto), tag.tci, true);
            ASSERT_TRUE(got.ok) << "no sample at -s " << snaplen;
            const size_t want = std::min<size_t>(snaplen, wire.size());
            EXPECT_EQ(got.data, Bytes(wire.begin(), wire.begin() + static_cast<long>(want)))
                << "-s " << snaplen << ", tag 0x" << std::hex << tag.proto;
            EXPECT_EQ(got.orig_len, wire.size()) << "-s " << snaplen << ": the original length counts the tag";
            EXPECT_TRUE(got.flags & XDPCAP_FLAG_VLAN_RESTORED) << "-s " << snaplen;
        }
    }
    // Nothing handed over: the frame as it came, at the same cuts.
    for (uint32_t snaplen : {12u, 14u, 16u, 262144u}) {
        const Captured got = run_once(snaplen, frame, 0, 0, false);
        ASSERT_TRUE(got.ok);
        EXPECT_EQ(got.data, Bytes(frame.begin(), frame.begin() + static_cast<long>(std::min<size_t>(snaplen, frame.size()))));
        EXPECT_EQ(got.orig_len, frame.size());
        EXPECT_FALSE(got.flags & XDPCAP_FLAG_VLAN_RESTORED);
    }
}
