// Marked helper calls turned into kfunc calls before a program's load.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "base/ebpf_insn.hpp"
#include "xdpcap_abi.h"

using namespace xdpcap;

namespace {

constexpr bpf_insn call_helper(int32_t id)
{
    return make_insn(BPF_JMP | BPF_CALL, 0, 0, 0, id);
}

bool same(const bpf_insn& a, const bpf_insn& b)
{
    return std::memcmp(&a, &b, sizeof a) == 0;
}

} // namespace

// No kernel's helper may share the number the tc programs mark the call by.
static_assert(XDPCAP_KERN_CTX_CALL > __BPF_FUNC_MAX_ID, "the marker is a helper number no kernel has");
static_assert(XDPCAP_RX_VLAN_CALL > __BPF_FUNC_MAX_ID && XDPCAP_RX_HASH_CALL > __BPF_FUNC_MAX_ID,
              "the RX metadata markers are helper numbers no kernel has");
static_assert(XDPCAP_RX_VLAN_CALL != XDPCAP_RX_HASH_CALL && XDPCAP_RX_VLAN_CALL != XDPCAP_KERN_CTX_CALL &&
                  XDPCAP_RX_HASH_CALL != XDPCAP_KERN_CTX_CALL,
              "each marker names one kfunc");

TEST(EbpfInsn, EveryMarkedCallBecomesTheKfuncsCallAndNothingElseChanges)
{
    const std::vector<bpf_insn> before{
        make_insn(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0),
        call_helper(XDPCAP_KERN_CTX_CALL),
        call_helper(BPF_FUNC_probe_read_kernel),
        // The same number elsewhere: an immediate move and a call to a subprogram.
        make_insn(BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, XDPCAP_KERN_CTX_CALL),
        make_insn(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, XDPCAP_KERN_CTX_CALL),
        call_helper(XDPCAP_KERN_CTX_CALL),
        make_insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
    };
    std::vector<bpf_insn> insns = before;
    EXPECT_EQ(call_kfunc_at_marker(insns, XDPCAP_KERN_CTX_CALL, 63537), 2u);
    const bpf_insn kfunc_call = make_insn(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_KFUNC_CALL, 0, 63537);
    for (size_t i = 0; i < insns.size(); ++i) {
        if (i == 1 || i == 5)
            EXPECT_TRUE(same(insns[i], kfunc_call)) << i;
        else
            EXPECT_TRUE(same(insns[i], before[i])) << i;
    }
    // A second pass finds nothing left to turn.
    EXPECT_EQ(call_kfunc_at_marker(insns, XDPCAP_KERN_CTX_CALL, 63537), 0u);
}
