#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "programs/xdp_inventory.hpp"

using namespace xdpcap;

namespace {

// As Linux 6.18 prints them (the common lines first, then the kind's).
constexpr const char* kXdpLink = "pos:\t0\nflags:\t02000000\nmnt_id:\t17\nino:\t1039\nlink_type:\txdp\n"
                                 "link_id:\t619\nprog_tag:\t16fdb81e2af0730b\nprog_id:\t6636\nifindex:\t3\n";
constexpr const char* kTcxLink = "pos:\t0\nflags:\t02000000\nmnt_id:\t17\nino:\t1039\nlink_type:\ttcx\n"
                                 "link_id:\t618\nprog_tag:\td38dccca9e93e324\nprog_id:\t6634\nifindex:\t3\n"
                                 "attach_type:\t47 (egress)\n";
constexpr const char* kProgram = "pos:\t0\nflags:\t02000002\nmnt_id:\t17\nino:\t1039\nprog_type:\t6\n"
                                 "prog_jited:\t1\nprog_tag:\t16fdb81e2af0730b\nmemlock:\t4096\nprog_id:\t6636\n"
                                 "run_time_ns:\t0\nrun_cnt:\t0\nrecursion_misses:\t0\nverified_insns:\t75\n";
constexpr const char* kMap = "pos:\t0\nflags:\t02000002\nmnt_id:\t17\nino:\t1039\nmap_type:\t2\nkey_size:\t4\n"
                             "value_size:\t4\nmax_entries:\t1\nmap_flags:\t0x0\nmap_extra:\t0x0\nmemlock:\t280\n"
                             "map_id:\t6636\nfrozen:\t0\n";

} // namespace

TEST(XdpInventory, FdinfoOfALinkNamesItsProgram)
{
    const auto xdp = parse_bpf_fdinfo(kXdpLink);
    ASSERT_TRUE(xdp);
    EXPECT_TRUE(xdp->link);
    EXPECT_EQ(xdp->prog_id, 6636u);
    const auto tcx = parse_bpf_fdinfo(kTcxLink);
    ASSERT_TRUE(tcx);
    EXPECT_TRUE(tcx->link);
    EXPECT_EQ(tcx->prog_id, 6634u);
}

TEST(XdpInventory, FdinfoOfAProgram)
{
    const auto prog = parse_bpf_fdinfo(kProgram);
    ASSERT_TRUE(prog);
    EXPECT_FALSE(prog->link);
    EXPECT_EQ(prog->prog_id, 6636u);
}

TEST(XdpInventory, FdinfoOfAnythingElseIsNothing)
{
    EXPECT_FALSE(parse_bpf_fdinfo(kMap));
    EXPECT_FALSE(parse_bpf_fdinfo("pos:\t0\nflags:\t02\nmnt_id:\t15\nino:\t7\n"));
    EXPECT_FALSE(parse_bpf_fdinfo(""));
    // A key that merely ends in prog_id, a value that is no number, zero.
    EXPECT_FALSE(parse_bpf_fdinfo("link_id:\t1\nowner_prog_id:\t5\n"));
    EXPECT_FALSE(parse_bpf_fdinfo("link_id:\t1\nprog_id:\tx5\n"));
    EXPECT_FALSE(parse_bpf_fdinfo("prog_type:\t6\nprog_id:\t0\n"));
    // Neither a link's nor a program's lines around the prog_id.
    EXPECT_FALSE(parse_bpf_fdinfo("prog_id:\t5\n"));
}

TEST(XdpInventory, FdinfoWithoutFinalNewlineOrTab)
{
    const auto info = parse_bpf_fdinfo("link_type: xdp\nlink_id: 4\nprog_id: 77");
    ASSERT_TRUE(info);
    EXPECT_TRUE(info->link);
    EXPECT_EQ(info->prog_id, 77u);
}

namespace {

// A directory laid out as /proc: PID/fd/N links whose text names the kind
// of descriptor (dangling, as anon inodes read), PID/fdinfo/N files.
class FakeProc {
public:
    FakeProc()
    {
        char templ[] = "/tmp/xdpcap-unit-proc-XXXXXX";
        root_ = ::mkdtemp(templ);
    }
    ~FakeProc() { std::filesystem::remove_all(root_); }
    FakeProc(const FakeProc&) = delete;
    FakeProc& operator=(const FakeProc&) = delete;

    void fd(const std::string& pid, int fd, const std::string& kind, const char* fdinfo)
    {
        std::filesystem::create_directories(root_ + "/" + pid + "/fd");
        std::filesystem::create_directories(root_ + "/" + pid + "/fdinfo");
        std::filesystem::create_symlink(kind, root_ + "/" + pid + "/fd/" + std::to_string(fd));
        if (fdinfo)
            std::ofstream(root_ + "/" + pid + "/fdinfo/" + std::to_string(fd)) << fdinfo;
    }
    const std::string& root() const { return root_; }

private:
    std::string root_;
};

} // namespace

TEST(XdpInventory, HoldersOfTheLinkAreFound)
{
    FakeProc proc;
    proc.fd("4242", 27, "anon_inode:bpf_link", kXdpLink); // the capture
    proc.fd("4242", 26, "anon_inode:bpf-prog", kProgram);
    proc.fd("500", 3, "anon_inode:bpf-prog", kProgram);   // holds only the program
    proc.fd("77", 5, "anon_inode:bpf_link", kTcxLink);     // another program's link
    proc.fd("77", 6, "anon_inode:bpf-map", kMap);          // a map with the same id
    proc.fd("88", 4, "anon_inode:bpf_link", nullptr);      // fdinfo gone meanwhile
    proc.fd("self", 27, "anon_inode:bpf_link", kXdpLink);  // not a pid
    proc.fd("99", 1, "/dev/null", kXdpLink);               // not a BPF descriptor
    std::filesystem::create_directories(proc.root() + "/123");  // no fd directory
    EXPECT_EQ(program_holders(6636, proc.root()), (std::vector<int>{4242}));
    EXPECT_EQ(program_holders(6634, proc.root()), (std::vector<int>{77}));
    EXPECT_TRUE(program_holders(9999, proc.root()).empty());
}

TEST(XdpInventory, WithoutALinkTheProgramsHoldersAreFound)
{
    FakeProc proc;
    proc.fd("31", 3, "anon_inode:bpf-prog", kProgram);
    proc.fd("7", 9, "anon_inode:bpf-prog", kProgram);
    EXPECT_EQ(program_holders(6636, proc.root()), (std::vector<int>{7, 31}));
}

TEST(XdpInventory, UnreadableProcIsNoHolder)
{
    EXPECT_TRUE(program_holders(6636, "/nonexistent/proc").empty());
}

namespace {

XdpAttachment attachment(const char* mode, const char* name, uint32_t id)
{
    XdpAttachment a;
    a.mode = mode;
    a.program = XdpProgramInfo{id, name, "0011223344556677"};
    return a;
}

} // namespace

TEST(DefaultReceive, TcOnVethLoAndDriversWithoutNativeXdp)
{
    EXPECT_EQ(default_receive(ReceiveFacts{"veth", false, true}), ReceiveAt::Tc);
    EXPECT_EQ(default_receive(ReceiveFacts{"", true, std::nullopt}), ReceiveAt::Tc);
    EXPECT_EQ(default_receive(ReceiveFacts{"", true, false}), ReceiveAt::Tc);
    EXPECT_EQ(default_receive(ReceiveFacts{"bridge", false, false}), ReceiveAt::Tc);
    EXPECT_EQ(default_receive(ReceiveFacts{"ixgbe", false, true}), ReceiveAt::NativeXdpElseTc);
    // A kernel that does not say (before 6.3): attach() tries native XDP.
    EXPECT_EQ(default_receive(ReceiveFacts{"ixgbe", false, std::nullopt}), ReceiveAt::NativeXdpElseTc);
}

TEST(ReceivedAtListing, NamesTheHookACaptureWouldUse)
{
    const std::vector<XdpAttachment> none;
    EXPECT_EQ(received_at_listing(ReceiveFacts{"", true, std::nullopt}, none, std::nullopt), "tc ingress");
    EXPECT_EQ(received_at_listing(ReceiveFacts{"veth", false, true}, none, std::nullopt), "tc ingress");
    EXPECT_EQ(received_at_listing(ReceiveFacts{"bridge", false, false}, none, std::nullopt), "tc ingress");
    EXPECT_EQ(received_at_listing(ReceiveFacts{"ixgbe", false, true}, none, std::nullopt), "XDP native mode");
    EXPECT_EQ(received_at_listing(ReceiveFacts{"ixgbe", false, std::nullopt}, none, std::nullopt),
              "XDP native mode (tc ingress where the driver has none)");
}

TEST(ReceivedAtListing, ForeignProgramAtTcOrTraced)
{
    const std::vector<XdpAttachment> generic{attachment("generic", "xdp_pass", 12)};
    const std::vector<XdpAttachment> native{attachment("native", "xdp_pass", 12)};
    // At tc ingress the program runs first and stays.
    EXPECT_EQ(received_at_listing(ReceiveFacts{"veth", false, true}, generic, std::nullopt),
              "tc ingress (after the XDP program there)");
    EXPECT_EQ(received_at_listing(ReceiveFacts{"", true, std::nullopt}, generic, std::string("no fentry")),
              "tc ingress (after the XDP program there)");
    // Where the hook would be XDP: trace mode, or nothing without it.
    EXPECT_EQ(received_at_listing(ReceiveFacts{"ixgbe", false, true}, native, std::nullopt),
              "trace mode (fentry/fexit on the XDP program there)");
    EXPECT_EQ(received_at_listing(ReceiveFacts{"ixgbe", false, true}, native, std::string("no fentry")),
              "nowhere (the XDP program there holds the XDP hook and cannot be traced: no fentry)");
}

TEST(ReceivedAtListing, BesideAnotherXdpcap)
{
    const std::vector<XdpAttachment> ours{attachment("native", "xdpcap_frags", 7)};
    EXPECT_EQ(received_at_listing(ReceiveFacts{"ixgbe", false, true}, ours, std::nullopt),
              "tc ingress (another xdpcap takes them with XDP)");
    EXPECT_EQ(received_at_listing(ReceiveFacts{"veth", false, true}, ours, std::nullopt),
              "tc ingress (another xdpcap takes them with XDP)");
}
