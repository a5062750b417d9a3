// The kernel's symbol index, asked from a syscall program, against the text
// of /proc/kallsyms. Needs root (CI runs the unit tests as root).
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "host/kallsyms.hpp"

using namespace xdpcap;

namespace {

// kptr_restrict hides every address from both, which would make them agree.
bool addresses_shown()
{
    std::ifstream restrict_file("/proc/sys/kernel/kptr_restrict");
    int level = 0;
    return geteuid() == 0 && restrict_file >> level && level < 2;
}

} // namespace

TEST(SymbolLookup, TheIndexAgreesWithProcKallsyms)
{
    if (!addresses_shown())
        GTEST_SKIP() << "needs root, with kernel addresses shown";
    // Text, a kfunc, data, and a name no kernel has.
    const std::vector<const char*> names{"_text", "__bpf_call_base", "bpf_prog_test_run_syscall", "__start_rodata",
                                         "xdpcap_no_such_symbol"};
    const auto asked = look_up_kernel_symbols(names);
    ASSERT_TRUE(asked) << "this kernel cannot run the lookup program (Linux 5.16 and later can)";
    const std::vector<uint64_t> scanned = scan_kallsyms(names);
    EXPECT_EQ(*asked, scanned);
    EXPECT_NE((*asked)[0], 0u);
    EXPECT_NE((*asked)[1], 0u);
    EXPECT_NE((*asked)[3], 0u);
    EXPECT_EQ((*asked)[4], 0u);
}

TEST(SymbolLookup, ANameTooLongForTheProgramIsScanned)
{
    if (!addresses_shown())
        GTEST_SKIP() << "needs root, with kernel addresses shown";
    const std::string long_name(80, 'x');
    EXPECT_FALSE(look_up_kernel_symbols({"_text", long_name.c_str()}));
    EXPECT_EQ(kernel_symbol_addresses({"_text", long_name.c_str()}), (std::vector<uint64_t>{
        scan_kallsyms({"_text"})[0], 0}));
}
