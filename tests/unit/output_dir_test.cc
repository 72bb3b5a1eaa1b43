// `mcp-exec run --output-dir DIR` on a plain host directory: what a run read from /tmp/outputs
// is written under DIR and nowhere else, whatever DIR already holds.
#include "cli/output_dir.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <sstream>

#include "../support/host_files.h"
#include "../support/temp_dir.h"
#include "base/unique_fd.h"

namespace mcpexec::cli {
namespace {

using sandbox::OutputCollection;
using sandbox::OutputFile;
using sandbox::OutputSkip;
using ::testing::HasSubstr;

using testing::ReadFile;
using testing::WriteFile;

OutputFile Read(const std::string& path, const std::string& data) {
  return OutputFile{path, "file", data.size(), OutputSkip::kNone, data};
}

struct Written {
  bool ok = false;
  std::string error;
  std::vector<exec::FileReport> reports;
};

Written Write(const std::string& dir, const OutputCollection& outputs) {
  Written w;
  w.reports = exec::ReportOutputs(config::Defaults("/r"), outputs, "not written");
  auto r = WriteOutputDir(dir, outputs, w.reports);
  w.ok = r.ok();
  if (!r.ok()) w.error = r.error().message;
  return w;
}

TEST(WriteOutputDir, WritesWhatWasReadAtItsPath) {
  testing::TempDir host;
  const std::string dir = host.Path() + "/out";  // created when missing
  OutputCollection outputs;
  const std::string binary("\x00\xff\x89PNG", 6);
  outputs.files = {Read("a/b/c.csv", "1,2\n"),
                   Read("plot.png", binary),
                   OutputFile{"link.png", "symlink", 0, OutputSkip::kNotRegular, ""},
                   OutputFile{"huge.bin", "file", 10ull << 30, OutputSkip::kTooLarge, ""},
                   Read("two\nlines \xff.txt", "odd name"),
                   Read("a/empty", "")};
  const Written w = Write(dir, outputs);
  ASSERT_TRUE(w.ok) << w.error;
  EXPECT_EQ(ReadFile(dir + "/a/b/c.csv"), "1,2\n");
  EXPECT_EQ(ReadFile(dir + "/plot.png"), binary);
  EXPECT_EQ(ReadFile(dir + "/two\nlines \xff.txt"), "odd name");
  EXPECT_EQ(ReadFile(dir + "/a/empty"), "");
  EXPECT_EQ(access((dir + "/link.png").c_str(), F_OK), -1);
  EXPECT_EQ(access((dir + "/huge.bin").c_str(), F_OK), -1);
  for (const size_t i : {0, 1, 4, 5}) {
    EXPECT_TRUE(w.reports[i].returned) << w.reports[i].path;
    EXPECT_EQ(w.reports[i].reason, "") << w.reports[i].path;
  }
  EXPECT_FALSE(w.reports[2].returned);
  EXPECT_EQ(w.reports[2].reason, "not a regular file (symlink)");
  EXPECT_FALSE(w.reports[3].returned);
  EXPECT_THAT(w.reports[3].reason, HasSubstr("MCP_EXEC_MAX_OUTPUT_FILE_BYTES"));
}

TEST(WriteOutputDir, AFileOfTheSameNameIsReplaced) {
  testing::TempDir dir;
  WriteFile(dir.Path() + "/r.txt", "an older and longer content");
  OutputCollection outputs;
  outputs.files = {Read("r.txt", "new")};
  const Written w = Write(dir.Path(), outputs);
  ASSERT_TRUE(w.ok) << w.error;
  EXPECT_TRUE(w.reports[0].returned);
  EXPECT_EQ(ReadFile(dir.Path() + "/r.txt"), "new");
}

// A link already in DIR, where a file or a directory on its way goes, is not followed: the file
// is reported not written and nothing is written where the link points.
TEST(WriteOutputDir, ALinkInTheWayIsNotFollowed) {
  testing::TempDir dir, outside;
  const std::string victim = outside.Path() + "/victim";
  WriteFile(victim, "outside DIR");
  ASSERT_EQ(symlink(victim.c_str(), (dir.Path() + "/plot.png").c_str()), 0);
  ASSERT_EQ(symlink(outside.Path().c_str(), (dir.Path() + "/sub").c_str()), 0);
  ASSERT_EQ(symlink("../../x", (dir.Path() + "/rel").c_str()), 0);
  OutputCollection outputs;
  outputs.files = {Read("plot.png", "from the sandbox"), Read("rel", "from the sandbox"),
                   Read("sub/new.txt", "from the sandbox"), Read("sub/victim", "overwritten"),
                   Read("z.txt", "after them")};
  const Written w = Write(dir.Path(), outputs);
  ASSERT_TRUE(w.ok) << w.error;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(w.reports[i].returned) << w.reports[i].path;
    EXPECT_THAT(w.reports[i].reason, HasSubstr("not written to --output-dir: a link is in the way"))
        << w.reports[i].path;
  }
  EXPECT_TRUE(w.reports[4].returned);
  EXPECT_EQ(ReadFile(victim), "outside DIR");
  EXPECT_EQ(access((outside.Path() + "/new.txt").c_str(), F_OK), -1);
  char target[64] = {};
  ASSERT_GT(readlink((dir.Path() + "/plot.png").c_str(), target, sizeof target - 1), 0);
  EXPECT_EQ(std::string(target), victim) << "the link itself is left alone";
}

// A hard link in DIR to a file elsewhere is the same inode: writing through it would change
// the file outside DIR.
TEST(WriteOutputDir, AHardLinkInTheWayIsNotWrittenThrough) {
  testing::TempDir host;
  const std::string dir = host.Path() + "/out";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  const std::string victim = host.Path() + "/victim";
  WriteFile(victim, "outside DIR");
  ASSERT_EQ(link(victim.c_str(), (dir + "/data.csv").c_str()), 0) << strerror(errno);
  OutputCollection outputs;
  outputs.files = {Read("data.csv", "from the sandbox")};
  const Written w = Write(dir, outputs);
  ASSERT_TRUE(w.ok) << w.error;
  EXPECT_EQ(ReadFile(victim), "outside DIR");
  EXPECT_FALSE(w.reports[0].returned);
  EXPECT_EQ(w.reports[0].reason,
            "not written to --output-dir: a hard link is in the way in the output directory");
}

// A FIFO in DIR where a file goes: opening it to write would wait for a reader. Were it
// opened, the test opens the reading end itself, so that a failure is a failure, not a hang.
TEST(WriteOutputDir, AFifoInTheWayIsNotOpened) {
  testing::TempDir dir;
  const std::string fifo = dir.Path() + "/out.csv";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  OutputCollection outputs;
  outputs.files = {Read("out.csv", "a,b\n"), Read("z.txt", "after it")};
  auto written = std::async(std::launch::async, [&] { return Write(dir.Path(), outputs); });
  UniqueFd reader;
  if (written.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "WriteOutputDir waits on the FIFO";
    reader.Reset(open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  }
  const Written w = written.get();
  ASSERT_TRUE(w.ok) << w.error;
  EXPECT_FALSE(w.reports[0].returned);
  EXPECT_EQ(w.reports[0].reason,
            "not written to --output-dir: a FIFO is in the way in the output directory");
  EXPECT_TRUE(w.reports[1].returned);
  EXPECT_EQ(ReadFile(dir.Path() + "/z.txt"), "after it");
}

TEST(WriteOutputDir, ADirThatCannotBeOneIsAnError) {
  testing::TempDir host;
  WriteFile(host.Path() + "/file", "");
  OutputCollection outputs;
  outputs.files = {Read("a", "a")};
  const Written w = Write(host.Path() + "/file", outputs);
  EXPECT_FALSE(w.ok);
  EXPECT_THAT(w.error, HasSubstr("--output-dir " + host.Path() + "/file"));
  const Written missing_parent = Write(host.Path() + "/no/such", outputs);
  EXPECT_FALSE(missing_parent.ok);
  EXPECT_THAT(missing_parent.error, HasSubstr("create --output-dir"));
}

}  // namespace
}  // namespace mcpexec::cli
