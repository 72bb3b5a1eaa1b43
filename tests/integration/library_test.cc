// The sandbox library in-process, as the test process itself (root or not): Create() and
// Run() are separable steps, and a sandbox destroyed without running leaves no process.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "../support/sandbox_runner.h"
#include "config/config.h"
#include "exec/exec.h"
#include "sandbox/plan.h"
#include "sandbox/sandbox.h"

namespace mcpexec::testing {
namespace {

using ::testing::HasSubstr;

class SandboxLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(HostSetup::Get().Problem(RunMode::kCaller), "");
    const config::Config config = config::Defaults(HostSetup::Get().Rootfs());
    auto plan = exec::PrepareSandboxes(config);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    plan_ = *plan;
  }

  static bool Alive(pid_t pid) { return kill(pid, 0) == 0; }

  std::shared_ptr<const sandbox::LaunchPlan> plan_;
};

TEST_F(SandboxLibraryTest, CreateThenRunLaterAreSeparableSteps) {
  auto box = sandbox::Sandbox::Create(plan_);
  ASSERT_TRUE(box.ok()) << box.error().message;
  const pid_t init = box->InitPid();
  ASSERT_GT(init, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(Alive(init)) << "the prepared sandbox did not wait for its program";

  sandbox::RunLimits limits;
  limits.timeout = std::chrono::seconds(10);
  auto result =
      box->Run(sandbox::Program{"import os, sys\nprint(os.getpid(), sys.stdin.read())", "input"},
               limits);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->stdout_data, "2 input\n");
  EXPECT_EQ(result->stderr_data, "");
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_FALSE(result->timed_out);
  // The run ends when every process of the sandbox is gone: its init included.
  EXPECT_EQ(kill(init, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST_F(SandboxLibraryTest, DestroyingAnUnrunSandboxKillsItsInit) {
  pid_t init = -1;
  {
    auto box = sandbox::Sandbox::Create(plan_);
    ASSERT_TRUE(box.ok()) << box.error().message;
    init = box->InitPid();
    ASSERT_TRUE(Alive(init)) << "positive control: the init runs before destruction";
  }
  EXPECT_EQ(kill(init, 0), -1) << "init " << init << " outlived its Sandbox";
  EXPECT_EQ(errno, ESRCH);
}

TEST_F(SandboxLibraryTest, APreparedSandboxKilledFromOutsideIsAnErrorNotAResult) {
  auto box = sandbox::Sandbox::Create(plan_);
  ASSERT_TRUE(box.ok()) << box.error().message;
  ASSERT_EQ(kill(box->InitPid(), SIGKILL), 0);
  auto result = box->Run(sandbox::Program{"print(1)", ""}, sandbox::RunLimits{});
  ASSERT_FALSE(result.ok()) << "exit_code " << result->exit_code;
  EXPECT_THAT(result.error().message, HasSubstr("init died before the program finished"));
  EXPECT_THAT(result.error().message, HasSubstr("SIGKILL"));
}

TEST_F(SandboxLibraryTest, RunIsRefusedTheSecondTime) {
  auto box = sandbox::Sandbox::Create(plan_);
  ASSERT_TRUE(box.ok()) << box.error().message;
  auto first = box->Run(sandbox::Program{"print(1)", ""}, sandbox::RunLimits{});
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->stdout_data, "1\n");
  auto second = box->Run(sandbox::Program{"print(2)", ""}, sandbox::RunLimits{});
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.error().message, HasSubstr("already run"));
}

}  // namespace
}  // namespace mcpexec::testing
