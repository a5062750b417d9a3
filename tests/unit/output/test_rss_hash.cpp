#include <gtest/gtest.h>

#include "programs/kernel_btf.hpp"
#include "output/rss_hash.hpp"
#include "output/pcapng.hpp"

using namespace xdpcap;

// The kernel's enum xdp_rss_hash_type values (include/net/xdp.h) and their names.
TEST(RssHashType, NamedAsTheKernelNamesThem)
{
    EXPECT_EQ(rss_hash_type_name(0), "");
    EXPECT_EQ(rss_hash_type_name(0x1), "L3_IPV4");
    EXPECT_EQ(rss_hash_type_name(0x2), "L3_IPV6");
    EXPECT_EQ(rss_hash_type_name(0x5), "L3_IPV4_OPT");
    EXPECT_EQ(rss_hash_type_name(0x6), "L3_IPV6_EX");
    EXPECT_EQ(rss_hash_type_name(0x8), "L4_ANY");
    EXPECT_EQ(rss_hash_type_name(0x19), "L4_IPV4_TCP");
    EXPECT_EQ(rss_hash_type_name(0x29), "L4_IPV4_UDP");
    EXPECT_EQ(rss_hash_type_name(0x49), "L4_IPV4_SCTP");
    EXPECT_EQ(rss_hash_type_name(0x89), "L4_IPV4_IPSEC");
    EXPECT_EQ(rss_hash_type_name(0x109), "L4_IPV4_ICMP");
    EXPECT_EQ(rss_hash_type_name(0x1a), "L4_IPV6_TCP");
    EXPECT_EQ(rss_hash_type_name(0x1e), "L4_IPV6_TCP_EX");
    EXPECT_EQ(rss_hash_type_name(0x2e), "L4_IPV6_UDP_EX");
    EXPECT_EQ(rss_hash_type_name(0x10a), "L4_IPV6_ICMP");
}

TEST(RssHashType, CommentCarriesTheName)
{
    EXPECT_EQ(rss_hash_type_comment(0), "");
    EXPECT_EQ(rss_hash_type_comment(0x8), "RSS hash type L4_ANY");
    EXPECT_EQ(rss_hash_type_comment(0x8 | 0x200), "RSS hash type L4_ANY") << "bits beyond the enum are ignored";
}

TEST(RssHashAlgorithm, InterfaceWithoutRssIsUnregistered)
{
    EXPECT_EQ(rss_hash_algorithm("lo"), pcapng::kHashUnregistered);
    EXPECT_EQ(rss_hash_algorithm("no-such-interface"), pcapng::kHashUnregistered);
}

// The running kernel's BTF places sk_buff's two-bit ip_summed in one byte
// (inside an anonymous member group since 5.x), where the egress program
// reads it.
TEST(KernelBtf, FindsSkbIpSummed)
{
    const auto& facts = kernel_btf();
    ASSERT_TRUE(facts.skb_ip_summed.has_value()) << "no ip_summed in struct sk_buff's BTF";
    EXPECT_EQ(facts.skb_ip_summed->bits, 2u);
    EXPECT_LT(facts.skb_ip_summed->shift, 7u);
    EXPECT_GT(facts.skb_ip_summed->byte_offset, 64u) << "after the list heads, the socket and the timestamp";
    EXPECT_LT(facts.skb_ip_summed->byte_offset, 256u);
}
