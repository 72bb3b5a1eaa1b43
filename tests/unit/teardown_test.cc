// The teardown of finished runs (sandbox/teardown.h): remains wait in the background until
// their init has ended, at most kMaxPending at once, and a failed removal is counted and
// reported. Real processes stand for the inits; a fake cgroup records its removal.
#include "sandbox/teardown.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

namespace mcpexec::sandbox {
namespace {

// A child that ends once `release` reads EOF (all write ends closed).
ChildProcess ChildUntilEof(int release_read, int release_write) {
  const pid_t pid = fork();
  if (pid == 0) {
    close(release_write);
    char byte;
    while (read(release_read, &byte, 1) > 0) {
    }
    _exit(0);
  }
  return ChildProcess(pid, UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0))));
}

class FakeCgroup final : public limits::RunCgroup {
 public:
  FakeCgroup(std::atomic<int>& removed, bool fail) : removed_(removed), fail_(fail) {}
  int CloneIntoFd() const override { return -1; }
  Result<void> Move(pid_t) override { return Ok(); }
  Result<void> ExcludeCurrentUsage() override { return Ok(); }
  limits::Usage Read() const override { return {}; }
  Result<uint64_t> Tasks() const override { return uint64_t{1}; }
  void CloseFiles() override {}
  Result<void> Remove() override {
    ++removed_;
    if (fail_) return MakeError(ErrorCode::kInternal, "rmdir(run-x): Device or resource busy");
    return Ok();
  }

 private:
  std::atomic<int>& removed_;
  const bool fail_;
};

TEST(Teardown, WaitsForEachInitThenRemovesItsCgroup) {
  Teardown teardown;
  int release[2];
  ASSERT_EQ(pipe2(release, O_CLOEXEC), 0);
  std::atomic<int> removed{0};
  for (int i = 0; i < 3; ++i) {
    teardown.Add(SandboxRemains{nullptr, std::make_unique<FakeCgroup>(removed, false),
                                ChildUntilEof(release[0], release[1])});
  }
  usleep(100'000);
  // The inits still run: nothing is removed, all three wait.
  EXPECT_EQ(removed.load(), 0);
  EXPECT_EQ(teardown.GetStats().pending, 3u);
  close(release[1]);
  teardown.Drain();
  close(release[0]);
  const Teardown::Stats stats = teardown.GetStats();
  EXPECT_EQ(removed.load(), 3);
  EXPECT_EQ(stats.pending, 0u);
  EXPECT_EQ(stats.completed, 3u);
  EXPECT_EQ(stats.inline_, 0u);
  EXPECT_EQ(stats.failed, 0u);
}

TEST(Teardown, PastTheBoundTheCallerTearsDownItsOwn) {
  Teardown teardown;
  int release[2];
  ASSERT_EQ(pipe2(release, O_CLOEXEC), 0);
  std::atomic<int> removed{0};
  for (uint64_t i = 0; i < Teardown::kMaxPending; ++i) {
    teardown.Add(SandboxRemains{nullptr, std::make_unique<FakeCgroup>(removed, false),
                                ChildUntilEof(release[0], release[1])});
  }
  EXPECT_EQ(teardown.GetStats().pending, Teardown::kMaxPending);
  // One more, whose init has ended: Add removes its cgroup before it returns.
  ChildProcess ended = ChildUntilEof(release[0], release[1]);
  kill(ended.Pid(), SIGKILL);
  teardown.Add(SandboxRemains{nullptr, std::make_unique<FakeCgroup>(removed, false),
                              std::move(ended)});
  EXPECT_EQ(removed.load(), 1);
  Teardown::Stats stats = teardown.GetStats();
  EXPECT_EQ(stats.pending, Teardown::kMaxPending);
  EXPECT_EQ(stats.inline_, 1u);
  EXPECT_EQ(stats.completed, 1u);
  close(release[1]);
  teardown.Drain();
  close(release[0]);
  stats = teardown.GetStats();
  EXPECT_EQ(removed.load(), static_cast<int>(Teardown::kMaxPending) + 1);
  EXPECT_EQ(stats.completed, Teardown::kMaxPending + 1);
  EXPECT_EQ(stats.pending, 0u);
}

TEST(Teardown, AFailedRemovalIsCountedAndReported) {
  Teardown teardown;
  std::vector<std::string> reported;
  std::mutex mutex;
  teardown.OnFailure([&](const Error& error) {
    std::lock_guard lock(mutex);
    reported.push_back(error.message);
  });
  int release[2];
  ASSERT_EQ(pipe2(release, O_CLOEXEC), 0);
  std::atomic<int> removed{0};
  teardown.Add(SandboxRemains{nullptr, std::make_unique<FakeCgroup>(removed, true),
                              ChildUntilEof(release[0], release[1])});
  teardown.Add(SandboxRemains{nullptr, nullptr, ChildUntilEof(release[0], release[1])});
  close(release[1]);
  teardown.Drain();
  close(release[0]);
  const Teardown::Stats stats = teardown.GetStats();
  EXPECT_EQ(stats.completed, 2u);
  EXPECT_EQ(stats.failed, 1u);
  std::lock_guard lock(mutex);
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_NE(reported[0].find("rmdir(run-x)"), std::string::npos);
}

// Remains whose init is reaped already (a run killed at its deadline) wait for nothing.
TEST(Teardown, ReapedInitsGoAtOnce) {
  Teardown teardown;
  int release[2];
  ASSERT_EQ(pipe2(release, O_CLOEXEC), 0);
  ChildProcess init = ChildUntilEof(release[0], release[1]);
  close(release[1]);
  close(release[0]);
  ASSERT_TRUE(init.Wait().ok());
  std::atomic<int> removed{0};
  teardown.Add(SandboxRemains{nullptr, std::make_unique<FakeCgroup>(removed, false),
                              std::move(init)});
  teardown.Drain();
  EXPECT_EQ(removed.load(), 1);
  EXPECT_EQ(teardown.GetStats().completed, 1u);
}

}  // namespace
}  // namespace mcpexec::sandbox
