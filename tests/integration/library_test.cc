// The sandbox library in-process, as the test process itself (root or not): Create() and
// Run() are separable steps, and a sandbox destroyed without running leaves no process.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

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

// The pool engine's sandboxes, through the same library calls.
class WarmSandboxTest : public SandboxLibraryTest {
 protected:
  std::shared_ptr<const sandbox::LaunchPlan> WarmPlan(std::vector<std::string> preload) {
    sandbox::SandboxSpec spec = plan_->Spec();
    spec.warm = true;
    spec.preload = std::move(preload);
    auto warm = sandbox::Compile(spec, plan_->LimitsBackend());
    EXPECT_TRUE(warm.ok()) << warm.error().message;
    return warm.ok() ? *warm : nullptr;
  }
};

TEST_F(WarmSandboxTest, TheProgramRunsInTheInterpreterThatImportedThePreloads) {
  auto box = sandbox::Sandbox::Create(WarmPlan({"json", "decimal"}));
  ASSERT_TRUE(box.ok()) << box.error().message;
  EXPECT_TRUE(box->Waiting());
  auto result = box->Run(
      sandbox::Program{"import sys\nprint('decimal' in sys.modules, sys.argv, __name__)", ""},
      sandbox::RunLimits{});
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->stdout_data, "True ['/tmp/main.py'] __main__\n");
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_FALSE(box->Waiting());
}

TEST_F(WarmSandboxTest, APreloadThatDoesNotImportIsAnErrorAtCreate) {
  auto box = sandbox::Sandbox::Create(WarmPlan({"json", "no_such_module_here"}));
  ASSERT_FALSE(box.ok());
  EXPECT_THAT(box.error().message,
              HasSubstr("import no_such_module_here: ModuleNotFoundError: No module named "
                        "'no_such_module_here'"));
  EXPECT_THAT(box.error().message, HasSubstr("MCP_EXEC_PRELOAD"));
}

TEST_F(WarmSandboxTest, ASandboxThatEndedWhileItWaitedIsNotRun) {
  auto box = sandbox::Sandbox::Create(WarmPlan({}));
  ASSERT_TRUE(box.ok()) << box.error().message;
  ASSERT_EQ(kill(box->InitPid(), SIGKILL), 0);
  for (int i = 0; i < 100 && box->Waiting(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(box->Waiting());
  auto result = box->Run(sandbox::Program{"print(1)", ""}, sandbox::RunLimits{});
  ASSERT_FALSE(result.ok()) << "exit_code " << result->exit_code;
  EXPECT_THAT(result.error().message, HasSubstr("ended while it waited"));
}

TEST_F(WarmSandboxTest, APoolWithNothingReadyRunsCold) {
  config::Config config = config::Defaults(HostSetup::Get().Rootfs());
  config.engine = "pool";
  config.preload = {"decimal"};
  auto engine = exec::StartEngine(config, plan_, exec::EngineUse::kOneShot);
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  const sandbox::Program program{"import sys\nprint('decimal' in sys.modules)", ""};
  auto warm = (*engine)->Run(program, sandbox::RunLimits{}, {});
  ASSERT_TRUE(warm.ok()) << warm.error().message;
  EXPECT_EQ(warm->stdout_data, "True\n") << "the one prepared sandbox";
  // A one-shot pool makes no more: the next run must not wait for one.
  auto cold = (*engine)->Run(program, sandbox::RunLimits{}, {});
  ASSERT_TRUE(cold.ok()) << cold.error().message;
  EXPECT_EQ(cold->stdout_data, "False\n") << "a cold run";
}

}  // namespace
}  // namespace mcpexec::testing
