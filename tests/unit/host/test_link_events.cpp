#include <gtest/gtest.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>
#include <vector>

#include "host/link_events.hpp"

using namespace xdpcap;

namespace {

// Netlink messages laid out as the kernel sends them: header, ifinfomsg,
// attributes, each padded to 4 bytes.
class Messages {
public:
    Messages& link(uint16_t type, int ifindex, uint8_t family = AF_UNSPEC)
    {
        start_ = bytes_.size();
        nlmsghdr header{};
        header.nlmsg_type = type;
        append(&header, sizeof header);
        ifinfomsg info{};
        info.ifi_family = family;
        info.ifi_index = ifindex;
        append(&info, sizeof info);
        set_length();
        return *this;
    }
    Messages& attr(uint16_t type, const void* value, size_t len)
    {
        rtattr a{};
        a.rta_type = type;
        a.rta_len = static_cast<unsigned short>(RTA_LENGTH(len));
        append(&a, sizeof a);
        append(value, len);
        bytes_.resize(NLMSG_ALIGN(bytes_.size()));
        set_length();
        return *this;
    }
    Messages& attr_u32(uint16_t type, uint32_t value) { return attr(type, &value, sizeof value); }
    Messages& name(const char* ifname) { return attr(IFLA_IFNAME, ifname, std::strlen(ifname) + 1); }
    // What the kernel sends in the old namespace when the interface moves.
    Messages& moved(int ifindex, int32_t nsid = 0, int new_ifindex = 7)
    {
        return link(RTM_DELLINK, ifindex).name("cap0").attr_u32(IFLA_NEW_NETNSID, static_cast<uint32_t>(nsid))
            .attr_u32(IFLA_NEW_IFINDEX, static_cast<uint32_t>(new_ifindex));
    }
    std::vector<uint8_t>& bytes() { return bytes_; }
    std::span<const uint8_t> span() const { return bytes_; }

private:
    void append(const void* p, size_t len)
    {
        const auto* b = static_cast<const uint8_t*>(p);
        bytes_.insert(bytes_.end(), b, b + len);
    }
    void set_length()
    {
        const auto len = static_cast<uint32_t>(bytes_.size() - start_);
        std::memcpy(bytes_.data() + start_, &len, sizeof len); // nlmsg_len comes first
    }
    std::vector<uint8_t> bytes_;
    size_t start_ = 0;
};

const std::vector<uint32_t> kWatched{3, 5};

} // namespace

TEST(LinkEvents, DeletionOfAWatchedInterface)
{
    Messages m;
    m.link(RTM_DELLINK, 5).name("cap1").attr_u32(IFLA_MTU, 1500);
    const auto lost = find_lost_link(m.span(), kWatched);
    ASSERT_TRUE(lost);
    EXPECT_EQ(lost->ifindex, 5u);
    EXPECT_FALSE(lost->moved);
}

TEST(LinkEvents, MoveToAnotherNamespaceSaysSo)
{
    Messages m;
    m.moved(3, 1);
    const auto lost = find_lost_link(m.span(), kWatched);
    ASSERT_TRUE(lost);
    EXPECT_EQ(lost->ifindex, 3u);
    EXPECT_TRUE(lost->moved);
}

TEST(LinkEvents, OtherInterfacesAndMessagesAreNotLosses)
{
    Messages m;
    m.link(RTM_NEWLINK, 3).name("cap0");           // a change, not a loss
    m.link(RTM_DELLINK, 4).name("other");          // not watched
    m.link(RTM_DELLINK, 3, AF_BRIDGE).name("cap0"); // left a bridge
    m.link(RTM_NEWADDR, 3);
    EXPECT_FALSE(find_lost_link(m.span(), kWatched));
    EXPECT_FALSE(find_lost_link({}, kWatched));
    Messages gone;
    gone.moved(3);
    EXPECT_FALSE(find_lost_link(gone.span(), {}));
}

TEST(LinkEvents, FindsTheLossAmongSeveralMessages)
{
    Messages m;
    m.link(RTM_NEWLINK, 3).name("cap0");
    m.link(RTM_DELLINK, 4).name("other");
    m.moved(5);
    const auto lost = find_lost_link(m.span(), kWatched);
    ASSERT_TRUE(lost);
    EXPECT_EQ(lost->ifindex, 5u);
    EXPECT_TRUE(lost->moved);
}

TEST(LinkEvents, EveryLossAmongSeveralMessagesInOrder)
{
    Messages m;
    m.link(RTM_DELLINK, 5).name("cap1");
    m.link(RTM_DELLINK, 4).name("other");
    m.moved(3);
    std::vector<LostLink> lost;
    find_lost_links(m.span(), kWatched, lost);
    ASSERT_EQ(lost.size(), 2u);
    EXPECT_EQ(lost[0].ifindex, 5u);
    EXPECT_FALSE(lost[0].moved);
    EXPECT_EQ(lost[1].ifindex, 3u);
    EXPECT_TRUE(lost[1].moved);
}

TEST(LinkEvents, NamesOfWatchedInterfacesAsAnnounced)
{
    Messages m;
    m.link(RTM_NEWLINK, 3).attr_u32(IFLA_MTU, 1500).name("lan0"); // renamed
    m.link(RTM_NEWLINK, 4).name("other");                        // not watched
    m.link(RTM_NEWLINK, 5, AF_BRIDGE).name("cap1");              // a bridge's view
    m.link(RTM_DELLINK, 5).name("cap1");                         // a loss, not a name
    m.link(RTM_NEWLINK, 5);                                      // no name
    std::vector<NamedLink> named;
    find_link_names(m.span(), kWatched, named);
    ASSERT_EQ(named.size(), 1u);
    EXPECT_EQ(named[0].ifindex, 3u);
    EXPECT_EQ(named[0].name, "lan0");
}

TEST(LinkEvents, NewInterfacesOnceEachWithTheirNames)
{
    Messages m;
    m.link(RTM_NEWLINK, 9).name("veth0").link(RTM_NEWLINK, 3).name("cap0").link(RTM_NEWLINK, 9).name("veth0");
    m.link(RTM_NEWLINK, 7, AF_BRIDGE).name("port0").link(RTM_DELLINK, 8).name("gone0").link(RTM_NEWLINK, 10);
    std::vector<NamedLink> appeared;
    find_new_links(m.span(), kWatched, appeared);
    ASSERT_EQ(appeared.size(), 2u);
    EXPECT_EQ(appeared[0].ifindex, 9u);
    EXPECT_EQ(appeared[0].name, "veth0");
    EXPECT_EQ(appeared[1].ifindex, 10u);
    EXPECT_EQ(appeared[1].name, "");
}

TEST(LinkEvents, UnalignedBufferIsRead)
{
    Messages m;
    m.moved(3);
    std::vector<uint8_t> shifted(m.bytes().size() + 1);
    std::memcpy(shifted.data() + 1, m.bytes().data(), m.bytes().size());
    const auto lost = find_lost_link(std::span<const uint8_t>(shifted).subspan(1), kWatched);
    ASSERT_TRUE(lost);
    EXPECT_TRUE(lost->moved);
}

TEST(LinkEvents, NestedAttributeFlagsDoNotHideTheNamespace)
{
    Messages m;
    m.link(RTM_DELLINK, 3).attr_u32(IFLA_NEW_NETNSID | NLA_F_NET_BYTEORDER, 2);
    const auto lost = find_lost_link(m.span(), kWatched);
    ASSERT_TRUE(lost);
    EXPECT_TRUE(lost->moved);
}

TEST(LinkEvents, MalformedInputIsNotMisread)
{
    // A header claiming more than the buffer holds: nothing is read past it.
    Messages long_claim;
    long_claim.moved(3);
    long_claim.bytes().resize(long_claim.bytes().size() - 4);
    EXPECT_FALSE(find_lost_link(long_claim.span(), kWatched));

    // A length shorter than a header stops the walk instead of looping.
    Messages zero;
    zero.link(RTM_NEWLINK, 4);
    const uint32_t bad = 0;
    std::memcpy(zero.bytes().data(), &bad, sizeof bad);
    zero.moved(3);
    EXPECT_FALSE(find_lost_link(zero.span(), kWatched));

    // Too short for its ifinfomsg: skipped.
    Messages short_body;
    short_body.link(RTM_DELLINK, 3);
    short_body.bytes().resize(NLMSG_HDRLEN + 4);
    const uint32_t len = NLMSG_HDRLEN + 4;
    std::memcpy(short_body.bytes().data(), &len, sizeof len);
    EXPECT_FALSE(find_lost_link(short_body.span(), kWatched));

    // An attribute running past its message: the loss still counts, as a
    // deletion (the move cannot be read).
    Messages bad_attr;
    bad_attr.link(RTM_DELLINK, 3).attr_u32(IFLA_MTU, 1500);
    const unsigned short huge = 200;
    std::memcpy(bad_attr.bytes().data() + NLMSG_HDRLEN + sizeof(ifinfomsg), &huge, sizeof huge);
    bad_attr.attr_u32(IFLA_NEW_NETNSID, 0);
    const auto lost = find_lost_link(bad_attr.span(), kWatched);
    ASSERT_TRUE(lost);
    EXPECT_FALSE(lost->moved);
}
