// Files opened as -Z's user while the process is still root: created by the
// user, refused where the user may not write, and root again afterwards.
// Needs root (skipped otherwise), and changes no more than this thread's
// file-system ids and, for a moment, the groups.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "base/unique_fd.hpp"
#include "host/privileges.hpp"
#include "test_outputs.hpp"

using namespace xdpcap;
using namespace xdpcap::test;

namespace {

uid_t owner_of(const std::string& path)
{
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_uid;
}

} // namespace

TEST(FileSystemIdentity, FilesAreCreatedAsTheUserAndRootComesBack)
{
    if (::geteuid() != 0)
        GTEST_SKIP() << "needs root";
    const passwd* nobody = ::getpwnam("nobody");
    ASSERT_NE(nobody, nullptr);
    const RunAsUser user{"nobody", nobody->pw_uid, nobody->pw_gid};
    TempDir dir;
    ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0); // only root may create files in it
    const std::string open_to_all = dir / "open";
    ASSERT_EQ(::mkdir(open_to_all.c_str(), 0777), 0);
    ASSERT_EQ(::chmod(open_to_all.c_str(), 0777), 0);
    {
        const FileSystemIdentity as_user(user);
        UniqueFd created(::open((open_to_all + "/f").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
        EXPECT_TRUE(created);
        UniqueFd refused(::open((dir / "f").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
        EXPECT_FALSE(refused);
        EXPECT_EQ(errno, EACCES);
    }
    EXPECT_EQ(owner_of(open_to_all + "/f"), nobody->pw_uid);
    UniqueFd as_root(::open((dir / "g").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    EXPECT_TRUE(as_root);
    EXPECT_EQ(owner_of(dir / "g"), 0u);
}
