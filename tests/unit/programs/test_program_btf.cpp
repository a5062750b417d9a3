#include <gtest/gtest.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <memory>
#include <vector>

#include "programs/program_btf.hpp"
#include "programs/xdp_inventory.hpp"
#include "base/unique_fd.hpp"

using namespace xdpcap;

namespace {

// r0 = XDP_PASS; exit
std::vector<bpf_insn> pass_program()
{
    return {bpf_insn{BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, XDP_PASS}, bpf_insn{BPF_JMP | BPF_EXIT, 0, 0, 0, 0}};
}

} // namespace

TEST(ProgramBtf, APlainProgramGetsNone)
{
    const std::vector<bpf_insn> prog = pass_program();
    const ProgramBtf btf(prog);
    bpf_prog_load_opts opts{};
    btf.apply(opts);
    EXPECT_EQ(opts.prog_btf_fd, 0u);
    EXPECT_EQ(opts.func_info_cnt, 0u);
}

// What fentry needs of a program it attaches to: the main function by name,
// taking a pointer to the program type's context (else the tracer cannot
// read it). Needs root (CI runs the unit tests as root).
TEST(ProgramBtf, TheMainFunctionIsNamedAndTakesTheContext)
{
    if (geteuid() != 0)
        GTEST_SKIP() << "needs root to load BPF programs";
    const std::vector<bpf_insn> prog = pass_program();
    const ProgramBtf btf(prog, MainFunction{"xdpcap_filter", "xdp_md"});
    bpf_prog_load_opts opts{};
    opts.sz = sizeof opts;
    opts.expected_attach_type = BPF_XDP;
    btf.apply(opts);
    ASSERT_EQ(opts.func_info_cnt, 1u);
    const UniqueFd fd(bpf_prog_load(BPF_PROG_TYPE_XDP, "xdpcap_filter", "GPL", prog.data(), prog.size(), &opts));
    ASSERT_TRUE(fd) << "the kernel refused the program";

    const int64_t main_type = main_function_type_id(fd.get());
    ASSERT_GT(main_type, 0);
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    ASSERT_EQ(bpf_obj_get_info_by_fd(fd.get(), &info, &len), 0);
    EXPECT_EQ(describe_program(info.id).name, "xdpcap_filter");

    const std::unique_ptr<struct btf, decltype(&btf__free)> types(btf__load_from_kernel_by_id(info.btf_id),
                                                                  btf__free);
    ASSERT_TRUE(types);
    const btf_type* func = btf__type_by_id(types.get(), static_cast<uint32_t>(main_type));
    ASSERT_TRUE(func && btf_is_func(func));
    const btf_type* proto = btf__type_by_id(types.get(), func->type);
    ASSERT_TRUE(proto && btf_is_func_proto(proto));
    ASSERT_EQ(btf_vlen(proto), 1u);
    const btf_type* ptr = btf__type_by_id(types.get(), btf_params(proto)[0].type);
    ASSERT_TRUE(ptr && btf_is_ptr(ptr));
    const btf_type* context = btf__type_by_id(types.get(), ptr->type);
    ASSERT_TRUE(context && btf_is_struct(context));
    EXPECT_STREQ(btf__name_by_offset(types.get(), context->name_off), "xdp_md");
}
