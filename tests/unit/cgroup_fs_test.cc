// KillListedMembers: cgroup v1 clean-up signals only processes that are still in the group
// once pinned by a pidfd (issue 11, finding 10). The group's cgroup.procs is a function here,
// so that a pid can leave the listing between the two reads as a reused pid would;
// tests/integration/cgroup_cleanup_test.cc does the same with a real cgroup.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "base/sys.h"
#include "limits/cgroup_fs.h"
#include "support/sleeper.h"

namespace mcpexec::limits {
namespace {

using ::mcpexec::testing::Sleeper;

bool ExitedNormally(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
bool Killed(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }

// Listings to return, one per call; an empty listing once they run out.
auto Listings(std::vector<std::string> listings, int* calls) {
  return [listings = std::move(listings), calls]() -> Result<std::string> {
    const size_t i = static_cast<size_t>((*calls)++);
    return i < listings.size() ? listings[i] : std::string();
  };
}

TEST(KillListedMembers, APidNoLongerListedOncePinnedIsNeverSignalled) {
  Sleeper gone;
  int calls = 0;
  EXPECT_EQ(KillListedMembers(Listings({gone.Line(), ""}, &calls)), 0);
  EXPECT_EQ(calls, 2);
  const int status = gone.Finish();
  EXPECT_TRUE(ExitedNormally(status)) << "wait status " << status;
}

TEST(KillListedMembers, APidStillListedIsKilled) {
  Sleeper member;
  int calls = 0;
  EXPECT_EQ(KillListedMembers(Listings({member.Line(), member.Line()}, &calls)), 1);
  const int status = member.Finish();
  EXPECT_TRUE(Killed(status)) << "wait status " << status;
}

TEST(KillListedMembers, OnlyPidsInBothListingsAreKilled) {
  Sleeper left, member, joined_late;
  int calls = 0;
  EXPECT_EQ(KillListedMembers(Listings(
                {left.Line() + member.Line(), member.Line() + joined_late.Line()}, &calls)),
            1);
  EXPECT_TRUE(ExitedNormally(left.Finish()));
  EXPECT_TRUE(Killed(member.Finish()));
  // Not pinned before the second listing: the next clean-up round deals with it.
  EXPECT_TRUE(ExitedNormally(joined_late.Finish()));
}

int OpenPidfds() {
  int count = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (dirent* e = readdir(dir)) {
    char target[64] = {};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    if (readlink(link.c_str(), target, sizeof target - 1) > 0 &&
        std::string(target) == "anon_inode:[pidfd]") {
      ++count;
    }
  }
  closedir(dir);
  return count;
}

TEST(KillListedMembers, MembershipIsReadAgainOnlyAfterThePidsArePinned) {
  Sleeper a, b;
  const int before = OpenPidfds();
  int calls = 0;
  int pinned_at_second_read = -1;
  const int signalled = KillListedMembers([&]() -> Result<std::string> {
    if (++calls == 2) pinned_at_second_read = OpenPidfds() - before;
    return a.Line() + b.Line();
  });
  EXPECT_EQ(signalled, 2);
  EXPECT_EQ(pinned_at_second_read, 2);
  EXPECT_EQ(OpenPidfds(), before) << "the pidfds are closed afterwards";
}

TEST(KillListedMembers, GonePidsAndUnreadableListingsSignalNothing) {
  Sleeper reaped;
  const pid_t pid = reaped.Pid();
  reaped.Finish();
  int calls = 0;
  EXPECT_EQ(KillListedMembers(Listings({std::to_string(pid) + "\nnot-a-pid\n\n"}, &calls)), 0);
  EXPECT_EQ(calls, 1) << "nothing pinned: no second read";
  EXPECT_EQ(KillListedMembers(
                [] { return Result<std::string>(MakeError(ErrorCode::kNotFound, "gone")); }),
            0);
}

// A CgroupFile reads its file from the start each time, as it is then (kernfs makes the text on
// each read; a regular file that is rewritten stands in here), and by path when the file could
// not be opened when it was made.
TEST(CgroupFile, EachReadIsTheWholeFileAsItIsThen) {
  char dir[] = "/tmp/cgroup-file-test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/memory.current";
  {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("1234\n", f);
    fclose(f);
  }
  const CgroupFile file(dir, "memory.current");
  EXPECT_EQ(*file.Read(), "1234\n");
  // Around the one read's 4 KiB: a first read that fills it is followed by more.
  for (const size_t size : {4095u, 4096u, 5000u, 8192u}) {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs(std::string(size, '7').c_str(), f);
    fclose(f);
    EXPECT_EQ(*file.Read(), std::string(size, '7')) << size;
  }
  const CgroupFile later(dir, "memory.events");  // not there yet
  EXPECT_FALSE(later.Read().ok());
  {
    FILE* f = fopen((std::string(dir) + "/memory.events").c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("oom_kill 1\n", f);
    fclose(f);
  }
  EXPECT_EQ(*later.Read(), "oom_kill 1\n");
  unlink(path.c_str());
  unlink((std::string(dir) + "/memory.events").c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace mcpexec::limits
