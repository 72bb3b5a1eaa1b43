// The sandbox's init is a clone of mcp-exec, so /proc/<init>/exe is mcp-exec's executable.
// Whatever the install, that must not be a file the sandbox's uid can write (the runc
// CVE-2019-5736 family): a binary owned by that uid runs from a sealed memfd copy instead.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <thread>

#include "../support/host_processes.h"
#include "../support/sandbox_test.h"
#include "../support/temp_dir.h"

namespace mcpexec::testing {
namespace {

using std::chrono::milliseconds;
namespace fs = std::filesystem;

class SelfExeTest : public SandboxTest {
 protected:
  // The sandbox's init of a running `mcp-exec run`: its only child.
  static pid_t InitOf(pid_t launcher) {
    for (int i = 0; i < 300; ++i) {
      const std::vector<pid_t> children = ChildrenOf(launcher);
      if (children.size() == 1) return children[0];
      std::this_thread::sleep_for(milliseconds(10));
    }
    return -1;
  }

  static void ExpectUnwritableExe(pid_t init, bool expect_memfd) {
    const std::string exe = "/proc/" + std::to_string(init) + "/exe";
    const int fd = open(exe.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << exe << ": " << strerror(errno);
    const int seals = fcntl(fd, F_GET_SEALS);
    struct stat st {};
    ASSERT_EQ(fstat(fd, &st), 0);
    close(fd);
    char target[256] = {};
    ASSERT_GT(readlink(exe.c_str(), target, sizeof target - 1), 0);
    if (expect_memfd) {
      EXPECT_THAT(std::string(target), ::testing::StartsWith("/memfd:mcp-exec")) << target;
      ASSERT_GE(seals, 0) << "not a memfd: " << target;
      EXPECT_EQ(seals & F_SEAL_WRITE, F_SEAL_WRITE) << "memfd not sealed against writes";
      // Not even root can write it now.
      const int w = open(exe.c_str(), O_WRONLY | O_CLOEXEC);
      EXPECT_LT(w, 0) << "opened the running init's executable for writing";
      if (w >= 0) {
        EXPECT_LT(write(w, "x", 1), 0) << "wrote to the running init's executable";
        close(w);
      }
    } else {
      EXPECT_EQ(st.st_uid, 0u) << target;
      EXPECT_EQ(st.st_mode & (S_IWGRP | S_IWOTH), 0u) << target;
    }
  }
};

TEST_P(SelfExeTest, ABinaryTheSandboxUserOwnsRunsFromASealedCopy) {
  // A copy of mcp-exec owned by the uid the sandbox runs as on the host: what a rootless
  // install in ~/.local/bin is.
  TempDir dir;
  ASSERT_EQ(chmod(dir.Path().c_str(), 0755), 0);
  const std::string bin = dir.Path() + "/mcp-exec";
  fs::copy_file(runner_.Binary(), bin);
  ASSERT_EQ(chown(bin.c_str(), runner_.ExpectedHostUid(), static_cast<gid_t>(-1)), 0)
      << strerror(errno);
  ASSERT_EQ(chmod(bin.c_str(), 0755), 0);

  BackgroundRun run = runner_.StartCommand(
      {bin, "run", "--rootfs", runner_.Rootfs(), "--code", "import time; time.sleep(3)"});
  const pid_t init = InitOf(run.Pid());
  ASSERT_GT(init, 0) << "the sandbox did not start";
  ExpectUnwritableExe(init, true);
  const Outcome r = run.Wait();
  ASSERT_TRUE(IsRunResult(r)) << r.Describe();
  EXPECT_EQ(r.json["exit_code"], 0) << r.Describe();
}

TEST_P(SelfExeTest, TheTestBinaryIsEitherRootOwnedOrSealed) {
  BackgroundRun run = runner_.StartCode("import time; time.sleep(3)");
  const pid_t init = InitOf(run.Pid());
  ASSERT_GT(init, 0) << "the sandbox did not start";
  struct stat st {};
  ASSERT_EQ(stat(runner_.Binary().c_str(), &st), 0);
  ExpectUnwritableExe(init, st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0);
  const Outcome r = run.Wait();
  ASSERT_TRUE(IsRunResult(r)) << r.Describe();
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(SelfExeTest);

}  // namespace
}  // namespace mcpexec::testing
