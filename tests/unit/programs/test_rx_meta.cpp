// Whether a device-bound program's kfunc calls reach the driver: judged from
// the verified instructions as the kernel shows them.
#include <gtest/gtest.h>

#include <linux/bpf.h>

#include <span>
#include <string_view>
#include <vector>

#include "base/ebpf_insn.hpp"
#include "programs/rx_meta.hpp"

namespace xdpcap {
namespace {

constexpr uint64_t kCallBase = 0xffffffff814dccd0;
constexpr uint64_t kDefaultVlan = 0xffffffff81efaa00;
constexpr uint64_t kDefaultHash = 0xffffffff81efa900;

bpf_insn kfunc_call(uint64_t target)
{
    return make_insn(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_KFUNC_CALL, 0,
                     static_cast<int32_t>(static_cast<int64_t>(target - kCallBase)));
}

TEST(KfuncCallTargets, DriverImplementationIsAnyTargetButTheDefault)
{
    const std::vector<bpf_insn> xlated{
        make_insn(BPF_ALU64 | BPF_MOV | BPF_K, 1, 0, 0, 0),
        kfunc_call(0xffffffff81e080f0), // veth_xdp_rx_vlan_tag
        make_insn(BPF_JMP | BPF_CALL, 0, 0, 0, 12), // a helper, not a kfunc
        kfunc_call(kDefaultHash),
        make_insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
    };
    const std::vector<uint64_t> defaults{kDefaultVlan, kDefaultHash};
    const KfuncCallTargets t = kfunc_call_targets(xlated, kCallBase, defaults);
    ASSERT_TRUE(t.known);
    EXPECT_TRUE(t.driver[0]);
    EXPECT_FALSE(t.driver[1]);
}

TEST(KfuncCallTargets, HiddenAddressesAreUnknown)
{
    const std::vector<uint64_t> defaults{kDefaultVlan};
    // The kernel zeroes the immediates for a reader without the right to see them.
    const std::vector<bpf_insn> hidden{make_insn(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_KFUNC_CALL, 0, 0)};
    EXPECT_FALSE(kfunc_call_targets(hidden, kCallBase, defaults).known);
    // kallsyms without addresses.
    const std::vector<bpf_insn> shown{kfunc_call(kDefaultVlan)};
    EXPECT_FALSE(kfunc_call_targets(shown, 0, defaults).known);
    const std::vector<uint64_t> no_defaults{0};
    EXPECT_FALSE(kfunc_call_targets(shown, kCallBase, no_defaults).known);
    // Fewer calls than expected: not what was loaded.
    EXPECT_FALSE(kfunc_call_targets(std::vector<bpf_insn>{}, kCallBase, defaults).known);
}

TEST(KfuncCallTargets, TheDefaultMeansTheDriverLacksIt)
{
    const std::vector<bpf_insn> xlated{kfunc_call(kDefaultVlan)};
    const std::vector<uint64_t> defaults{kDefaultVlan};
    const KfuncCallTargets t = kfunc_call_targets(xlated, kCallBase, defaults);
    ASSERT_TRUE(t.known);
    EXPECT_FALSE(t.driver[0]);
}

TEST(RxReads, VethIsAskedForTheHashItComputesOnlyWhereHashTypesAreWanted)
{
    const KernelRxMetadata both{.vlan = true, .hash = true};
    const RxReads nic = rx_reads(both, "mlx5_core", false);
    EXPECT_TRUE(nic.vlan && nic.hash);
    const RxReads veth = rx_reads(both, "veth", false);
    EXPECT_TRUE(veth.vlan);
    EXPECT_FALSE(veth.hash);
    EXPECT_TRUE(rx_reads(both, "veth", true).hash);

    // 6.3 to 6.7: the hash alone, so a veth's front would read nothing.
    const KernelRxMetadata hash_only{.vlan = false, .hash = true};
    EXPECT_FALSE(rx_reads(hash_only, "veth", false).any());
    EXPECT_TRUE(rx_reads(hash_only, "ice", false).any());
    EXPECT_FALSE(rx_reads(KernelRxMetadata{}, "ice", true).any());
}

} // namespace
} // namespace xdpcap

namespace xdpcap {

TEST(RxFrontBuild, TheKernelsKfuncsChooseIt)
{
    EXPECT_EQ(rx_front_build(KernelRxMetadata{true, true}), RxFrontBuild::VlanAndHash);
    EXPECT_EQ(rx_front_build(KernelRxMetadata{false, true}), RxFrontBuild::HashOnly); // 6.3 to 6.7
    EXPECT_EQ(rx_front_build(KernelRxMetadata{false, false}), std::nullopt);          // 6.1
}

// libbpf 1.1 refuses an object naming a kfunc the kernel lacks: the build
// for 6.3 to 6.7 must not name the VLAN one at all.
TEST(RxFrontBuild, TheHashOnlyObjectNamesNoVlanKfunc)
{
    const auto names = [](RxFrontBuild build, std::string_view kfunc) {
        const std::span<const uint8_t> object = rx_front_object(build);
        const std::string_view text(reinterpret_cast<const char*>(object.data()), object.size());
        return text.find(kfunc) != std::string_view::npos;
    };
    EXPECT_TRUE(names(RxFrontBuild::VlanAndHash, "bpf_xdp_metadata_rx_vlan_tag"));
    EXPECT_TRUE(names(RxFrontBuild::VlanAndHash, "bpf_xdp_metadata_rx_hash"));
    EXPECT_FALSE(names(RxFrontBuild::HashOnly, "bpf_xdp_metadata_rx_vlan_tag"));
    EXPECT_TRUE(names(RxFrontBuild::HashOnly, "bpf_xdp_metadata_rx_hash"));
}

} // namespace xdpcap
