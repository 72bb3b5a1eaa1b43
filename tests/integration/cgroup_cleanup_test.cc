// cgroup v1 clean-up (v1 has no cgroup.kill, so it signals the pids cgroup.procs lists) never
// signals a process that is not in the group when the signal is sent (issue 11, finding 10):
// here with a real group in the host's v1 pids hierarchy, as root, which is how the cgroup1
// backend runs. A pid listed once and gone from the group by the time it is pinned stands for
// a pid the kernel reused for an unrelated process.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/sys.h"
#include "limits/cgroup_fs.h"
#include "../support/sleeper.h"

namespace mcpexec::testing {
namespace {

// A fresh group in this process's v1 pids hierarchy, removed at the end.
class TestGroup {
 public:
  TestGroup() {
    auto files = limits::ReadProcCgroupFiles();
    EXPECT_TRUE(files.ok());
    const auto mount = limits::FindCgroup1Mount(*files, "pids");
    auto own = limits::OwnCgroup1Path(*files, "pids");
    if (!mount || !own.ok()) {
      problem_ = "no cgroup v1 pids hierarchy: the cgroup1 backend's clean-up cannot be tested";
      return;
    }
    dir_ = limits::CgroupDir(*mount, *own) + "/cleanup-test-" + std::to_string(getpid());
    if (mkdir(dir_.c_str(), 0755) != 0) problem_ = "mkdir(" + dir_ + "): " + strerror(errno);
  }
  ~TestGroup() {
    if (problem_.empty()) (void)limits::RemoveCgroupDir(dir_, false);
  }
  const std::string& Problem() const { return problem_; }
  const std::string& Dir() const { return dir_; }
  Result<void> Add(pid_t pid) {
    return limits::WriteCgroupFile(dir_, "cgroup.procs", std::to_string(pid));
  }

 private:
  std::string dir_, problem_;
};

TEST(CgroupCleanupTest, OnlyProcessesStillInTheGroupAreSignalled) {
  ASSERT_EQ(geteuid(), 0u) << "the cgroup1 backend, and so its clean-up, runs only as root";
  TestGroup group;
  ASSERT_EQ(group.Problem(), "");
  Sleeper member, outsider;
  ASSERT_TRUE(group.Add(member.Pid()).ok());

  // The first listing names both; the group itself is what the second read sees.
  int calls = 0;
  const int signalled = limits::KillListedMembers([&]() -> Result<std::string> {
    if (++calls == 1) {
      return std::to_string(member.Pid()) + "\n" + std::to_string(outsider.Pid()) + "\n";
    }
    return limits::ReadCgroupFile(group.Dir(), "cgroup.procs");
  });
  EXPECT_EQ(signalled, 1);
  const int member_status = member.Finish();
  EXPECT_TRUE(WIFSIGNALED(member_status) && WTERMSIG(member_status) == SIGKILL)
      << "positive control: the member was killed (wait status " << member_status << ")";
  const int outsider_status = outsider.Finish();
  EXPECT_TRUE(WIFEXITED(outsider_status) && WEXITSTATUS(outsider_status) == 0)
      << "the process outside the group was signalled (wait status " << outsider_status << ")";
}

TEST(CgroupCleanupTest, RemovingAGroupKillsWhatIsInItAndNothingElse) {
  ASSERT_EQ(geteuid(), 0u) << "the cgroup1 backend, and so its clean-up, runs only as root";
  TestGroup group;
  ASSERT_EQ(group.Problem(), "");
  Sleeper member, outsider;
  ASSERT_TRUE(group.Add(member.Pid()).ok());
  EXPECT_TRUE(limits::RemoveCgroupDir(group.Dir(), false).ok());
  const int member_status = member.Finish();
  EXPECT_TRUE(WIFSIGNALED(member_status) && WTERMSIG(member_status) == SIGKILL)
      << "wait status " << member_status;
  EXPECT_NE(access(group.Dir().c_str(), F_OK), 0) << "the group is gone";
  const int outsider_status = outsider.Finish();
  EXPECT_TRUE(WIFEXITED(outsider_status) && WEXITSTATUS(outsider_status) == 0);
}

}  // namespace
}  // namespace mcpexec::testing
