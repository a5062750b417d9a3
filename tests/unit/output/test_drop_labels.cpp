// --drops' names: the kernel's reasons by value, code addresses as
// function+offset from a kallsyms listing, and the count by reason.
#include <gtest/gtest.h>

#include "output/drop_labels.hpp"
#include "programs/drops.hpp"
#include "programs/kernel_btf.hpp"

using namespace xdpcap;

namespace {

const char* const kKallsyms = "ffffffff81000000 T _stext\n"
                              "ffffffff81a3c010 t __udp4_lib_rcv\n"
                              "ffffffff81a3d000 T udp_rcv\n"
                              "ffffffff82000000 D some_data\n"
                              "ffffffffc0a01000 t nft_do_chain\t[nf_tables]\n"
                              "0000000000000000 T hidden_from_users\n"
                              "garbage line\n";

DropLabels labels()
{
    return DropLabels({{2, "NOT_SPECIFIED"}, {3, "NO_SOCKET"}, {12, "NETFILTER_DROP"}}, KernelSymbols::parse(kKallsyms));
}

} // namespace

TEST(KernelSymbols, CodeSymbolsWithTheirOffset)
{
    const KernelSymbols symbols = KernelSymbols::parse(kKallsyms);
    EXPECT_EQ(symbols.size(), 4u); // data, zero addresses and garbage are left out
    EXPECT_EQ(symbols.describe(0xffffffff81a3c4bc), "__udp4_lib_rcv+0x4ac");
    EXPECT_EQ(symbols.describe(0xffffffff81a3d000), "udp_rcv+0x0");
    EXPECT_EQ(symbols.describe(0xffffffffc0a01042), "nft_do_chain+0x42");
    EXPECT_EQ(symbols.describe(0x1234), "0x1234"); // before every symbol
    EXPECT_EQ(KernelSymbols{}.describe(0xffffffff81a3c4bc), "0xffffffff81a3c4bc");
}

TEST(DropLabels, ReasonNamesFromTheKernel)
{
    DropLabels l = labels();
    EXPECT_EQ(l.reason(3), "NO_SOCKET");
    EXPECT_EQ(l.reason(12), "NETFILTER_DROP");
    EXPECT_EQ(l.reason(77), "reason 77"); // a value the kernel's BTF does not name
    EXPECT_EQ(l.comment(3, 0xffffffff81a3c4bc), "drop reason NO_SOCKET at __udp4_lib_rcv+0x4ac");
    // Built once: the same view for the same pair.
    EXPECT_EQ(l.comment(3, 0xffffffff81a3c4bc).data(), l.comment(3, 0xffffffff81a3c4bc).data());
}

// -r: a reason known by its name from a file's comment gets one value per
// name, the kernel's own when it names one, and is shown escaped.
TEST(DropLabels, InternedNamesFromFiles)
{
    DropLabels l = labels();
    EXPECT_EQ(l.intern("NO_SOCKET"), 3u);
    const uint32_t odd = l.intern("ODD\x1b[31m\r\x9b");
    EXPECT_EQ(l.intern("ODD\x1b[31m\r\x9b"), odd);
    EXPECT_NE(l.intern("OTHER"), odd);
    EXPECT_EQ(l.reason(odd), "ODD^[[31m^MM-^[");
    EXPECT_EQ(l.intern("reason 77"), l.intern("reason 77"));
    // Many distinct names: each found again by its own value.
    const auto name = [](int i) {
        std::string n = std::to_string(i);
        n.insert(n.begin(), 'R');
        return n;
    };
    std::vector<uint32_t> values;
    for (int i = 0; i < 1000; ++i)
        values.push_back(l.intern(name(i)));
    for (int i = 0; i < 1000; ++i) {
        EXPECT_EQ(l.intern(name(i)), values[static_cast<size_t>(i)]);
        EXPECT_EQ(l.reason(values[static_cast<size_t>(i)]), name(i));
    }
}

TEST(DropLabels, MostFrequentFirst)
{
    DropLabels l = labels();
    for (uint32_t reason : {12u, 3u, 3u, 2u, 3u, 12u, 99u})
        l.count(reason);
    const auto list = l.by_frequency();
    ASSERT_EQ(list.size(), 4u);
    EXPECT_EQ(list[0], (std::pair<std::string, uint64_t>{"NO_SOCKET", 3}));
    EXPECT_EQ(list[1], (std::pair<std::string, uint64_t>{"NETFILTER_DROP", 2}));
    EXPECT_EQ(list[2], (std::pair<std::string, uint64_t>{"NOT_SPECIFIED", 1}));
    EXPECT_EQ(list[3], (std::pair<std::string, uint64_t>{"reason 99", 1}));
}

TEST(DropReasonsRefusal, SaysWhatTheKernelLacks)
{
    KernelBtf btf;
    const auto no_btf = drop_reasons_refusal(btf);
    ASSERT_TRUE(no_btf);
    EXPECT_NE(no_btf->find("BTF"), std::string::npos) << *no_btf;
    EXPECT_EQ(no_btf->find('\n'), std::string::npos);

    btf.loaded = true;
    const auto no_reasons = drop_reasons_refusal(btf);
    ASSERT_TRUE(no_reasons);
    EXPECT_EQ(*no_reasons,
              "--drops needs the kernel's drop reasons (Linux 5.17 and later); this kernel's skb:kfree_skb has none");

    btf.drop_reasons = {{2, "NO_SOCKET"}};
    EXPECT_FALSE(drop_reasons_refusal(btf));
}
