// -r's -w file: written under a temporary name and renamed into place only
// when the reading ended well; an existing file is never replaced by a run
// that failed, and a symbolic link at the name is refused.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.hpp"
#include "output/replaced_file.hpp"
#include "test_outputs.hpp"

using namespace xdpcap;
using namespace xdpcap::test;

namespace {

void write_text(const std::string& path, const std::string& text)
{
    std::ofstream(path, std::ios::binary) << text;
}

std::string text_of(const std::string& path)
{
    const Bytes bytes = read_file(path);
    return std::string(bytes.begin(), bytes.end());
}

void write_to(const ReplacedFile& file, const std::string& text)
{
    const UniqueFd fd = file.writer();
    ASSERT_EQ(::write(fd.get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
}

size_t entries(const TempDir& dir)
{
    size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path()))
        ++n;
    return n;
}

} // namespace

TEST(ReplacedFile, TakesThePlaceOfTheFileOnlyOnSuccess)
{
    TempDir dir;
    const std::string out = dir / "out.pcapng";
    write_text(out, "old");
    ReplacedFile file = ReplacedFile::create(out);
    EXPECT_TRUE(file.existed());
    write_to(file, "new");
    EXPECT_EQ(text_of(out), "old") << "written beside it, not into it";
    file.finish(true);
    EXPECT_EQ(text_of(out), "new");
    EXPECT_EQ(entries(dir), 1u) << "no temporary left";
}

TEST(ReplacedFile, AFailureLeavesAnExistingFileAsItWas)
{
    TempDir dir;
    const std::string out = dir / "out.pcapng";
    write_text(out, "old");
    ReplacedFile file = ReplacedFile::create(out);
    write_to(file, "part of the copy");
    file.finish(false);
    EXPECT_EQ(text_of(out), "old");
    EXPECT_EQ(entries(dir), 1u);
}

TEST(ReplacedFile, AFailureKeepsWhatWasWrittenWhereThereWasNoFile)
{
    TempDir dir;
    const std::string out = dir / "out.pcapng";
    ReplacedFile file = ReplacedFile::create(out);
    EXPECT_FALSE(file.existed());
    write_to(file, "the packets before the break");
    file.finish(false);
    EXPECT_EQ(text_of(out), "the packets before the break");
    EXPECT_EQ(entries(dir), 1u);

    const std::string empty = dir / "empty.pcapng";
    ReplacedFile(ReplacedFile::create(empty)).finish(false);
    EXPECT_FALSE(std::filesystem::exists(empty)) << "nothing written: no file";
    EXPECT_EQ(entries(dir), 1u);
}

TEST(ReplacedFile, AnUnfinishedTemporaryIsRemoved)
{
    TempDir dir;
    {
        ReplacedFile file = ReplacedFile::create(dir / "out.pcapng");
        write_to(file, "abandoned");
        EXPECT_EQ(entries(dir), 1u);
    }
    EXPECT_EQ(entries(dir), 0u);
    // Left to another process: this one removes nothing.
    {
        ReplacedFile file = ReplacedFile::create(dir / "out.pcapng");
        file.leave_to_other_process();
    }
    EXPECT_EQ(entries(dir), 1u);
}

TEST(ReplacedFile, ASymbolicLinkOrDirectoryIsRefusedAndOtherFilesAreWrittenInPlace)
{
    TempDir dir;
    const std::string victim = dir / "victim";
    write_text(victim, "victim");
    const std::string link = dir / "link.pcapng";
    ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
    // In a directory others may write, anyone could have made the link.
    ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
    try {
        (void)ReplacedFile::wanted_for(link);
        ADD_FAILURE() << "a symbolic link was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "cannot write " + link + ": it is a symbolic link, which xdpcap does not follow");
    }
    EXPECT_EQ(text_of(victim), "victim");
    // In this user's private directory it is this user's: written in place.
    ASSERT_EQ(::chmod(dir.path().c_str(), 0700), 0);
    EXPECT_FALSE(ReplacedFile::wanted_for(link));
    EXPECT_THROW((void)ReplacedFile::wanted_for(dir.path()), Error);
    EXPECT_TRUE(ReplacedFile::wanted_for(dir / "new.pcapng"));
    EXPECT_TRUE(ReplacedFile::wanted_for(victim));
    EXPECT_FALSE(ReplacedFile::wanted_for("/dev/null"));
    const std::string fifo = dir / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_FALSE(ReplacedFile::wanted_for(fifo));
}
