// `mcp-exec doctor` on this host: one OK / WARN / FAIL line per check, fixes under a FAIL, and
// an exit status of 0 only when nothing failed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kChecks[] = {"user namespaces", "cgroup limits", "seccomp", "rootfs",
                                   "figures", "engine", "sessions", "environments"};

// The check lines of the output, in order (fix and continuation lines start with spaces).
std::vector<std::string> CheckLines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != ' ') lines.push_back(line);
  }
  return lines;
}

// The check's line and the indented lines under it.
std::string Block(const std::string& out, const std::string& check) {
  std::istringstream in(out);
  std::string block;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != ' ') inside = line.find(" " + check + ": ") == 4;
    if (inside) block += line + "\n";
  }
  return block;
}

// Every check has exactly one line, in the documented order, with a label.
::testing::AssertionResult HasOneLinePerCheck(const Outcome& r) {
  const std::vector<std::string> lines = CheckLines(r.out);
  if (lines.size() != std::size(kChecks)) {
    return ::testing::AssertionFailure() << "not one line per check:" << r.Describe();
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string label = lines[i].substr(0, 5);
    if (label != "OK   " && label != "WARN " && label != "FAIL ") {
      return ::testing::AssertionFailure() << "line " << i << " has no label:" << r.Describe();
    }
    if (lines[i].compare(5, std::string(kChecks[i]).size() + 2, std::string(kChecks[i]) + ": ")) {
      return ::testing::AssertionFailure()
             << "line " << i << " is not the " << kChecks[i] << " check:" << r.Describe();
    }
  }
  return ::testing::AssertionSuccess();
}

class DoctorTest : public SandboxTest {
 protected:
  Outcome Doctor(const std::vector<std::string>& extra = {},
                 const LaunchOptions& options = {}) const {
    std::vector<std::string> argv = {runner_.Binary(), "doctor"};
    bool has_rootfs = false;
    for (const std::string& a : extra) has_rootfs |= a == "--rootfs";
    if (!has_rootfs) argv.insert(argv.end(), {"--rootfs", runner_.Rootfs()});
    argv.insert(argv.end(), extra.begin(), extra.end());
    return runner_.RunCommand(argv, options);
  }
};

// The limits backend of the caller's runs is whatever the test run was given; the rlimit
// backend is a WARN, any cgroup backend an OK.
bool CallerAsksForRlimits() {
  const char* limits = std::getenv("MCP_EXEC_LIMITS");
  return limits != nullptr && std::string(limits) == "rlimit";
}

TEST(DoctorCaller, EveryCheckPassesAndTheStackImports) {
  const SandboxRunner runner(RunMode::kCaller);
  ASSERT_EQ(runner.Problem(), "");
  const Outcome r = runner.RunCommand({runner.Binary(), "doctor", "--rootfs", runner.Rootfs()});
  EXPECT_EQ(r.exit_status, 0) << r.Describe();
  EXPECT_TRUE(HasOneLinePerCheck(r));
  EXPECT_THAT(r.out, HasSubstr("OK   user namespaces: "));
  if (CallerAsksForRlimits()) {
    EXPECT_THAT(r.out, HasSubstr("WARN cgroup limits: degraded: no memory limit"));
  } else {
    EXPECT_THAT(r.out, HasSubstr("OK   cgroup limits: cgroup"));
    EXPECT_THAT(r.out, HasSubstr("memory 256 MiB (no swap), pids 128, cpus 1 per run"));
  }
  EXPECT_THAT(r.out, HasSubstr("OK   seccomp: the kernel has filters with errno and "
                               "kill_process; the built-in default profile is "));
  EXPECT_THAT(r.out, HasSubstr("OK   rootfs: " + runner.Rootfs() + ": python 3."));
  EXPECT_THAT(Block(r.out, "sessions"), HasSubstr("kept its state for the second"));
  for (const char* module : {"numpy", "pandas", "matplotlib", "PIL", "yaml", "jinja2"}) {
    EXPECT_THAT(Block(r.out, "rootfs"), HasSubstr(std::string(", ") + module + " "));
  }
  EXPECT_THAT(r.out, HasSubstr("OK   figures: captured: "));
  EXPECT_THAT(r.out, HasSubstr("OK   environments: offered: default (the default, "));
  // The suite's engine reaches doctor as MCP_EXEC_ENGINE (sandbox_runner.h).
  EXPECT_THAT(Block(r.out, "engine"),
              StartsWith(TestEngine().empty()       ? "OK   engine: auto (MCP_EXEC_ENGINE) "
                                                       "chooses zygote (sandboxes kept ready"
                         : TestEngine() == "cold" ? "OK   engine: cold: every run starts"
                                                  : "OK   engine: " + TestEngine() +
                                                        " (sandboxes kept ready"));
  EXPECT_THAT(Block(r.out, "engine"),
              AllOf(HasSubstr("a pool sandbox was ready in "),
                    HasSubstr("a zygote and its first sandbox were ready in ")));
  EXPECT_EQ(r.err, "");
}

// As the test user (switched from root, so it owns no cgroup) on a host without a cgroup v2
// hierarchy delegated to it: no backend is usable, and the fixes say how to get one or how to
// accept degraded limits.
TEST(DoctorUnprivileged, WithoutACgroupBackendFailsWithTheFixes) {
  const SandboxRunner runner(RunMode::kUnprivileged);
  ASSERT_EQ(runner.Problem(), "");
  ASSERT_EQ(geteuid(), 0u) << "this case needs the test user switched from root, which owns no "
                              "cgroup; run the integration tests as root";
  const Outcome r = runner.RunCommand({runner.Binary(), "doctor", "--rootfs", runner.Rootfs()},
                                      WithEnv({"MCP_EXEC_LIMITS=auto"}));
  EXPECT_EQ(r.exit_status, 1) << r.Describe();
  EXPECT_TRUE(HasOneLinePerCheck(r));
  EXPECT_THAT(r.out, HasSubstr("OK   user namespaces: "));
  const std::string limits = Block(r.out, "cgroup limits");
  EXPECT_THAT(limits, StartsWith("FAIL cgroup limits: no cgroup backend is usable")) << r.out;
  EXPECT_THAT(limits, HasSubstr("     fix: "));
  EXPECT_THAT(limits, HasSubstr("Delegate=yes"));
  EXPECT_THAT(limits, HasSubstr("MCP_EXEC_LIMITS=rlimit"));
  EXPECT_THAT(r.out, HasSubstr("OK   seccomp: "));
  EXPECT_THAT(r.out, HasSubstr("FAIL rootfs: skipped: needs the checks above"));
}

TEST(DoctorUnprivileged, RlimitsAreAWarningAndTheRestPasses) {
  const SandboxRunner runner(RunMode::kUnprivileged);
  ASSERT_EQ(runner.Problem(), "");
  const Outcome r = runner.RunCommand({runner.Binary(), "doctor", "--rootfs", runner.Rootfs()},
                                      WithEnv({"MCP_EXEC_LIMITS=rlimit"}));
  EXPECT_EQ(r.exit_status, 0) << r.Describe();
  EXPECT_TRUE(HasOneLinePerCheck(r));
  EXPECT_THAT(r.out, HasSubstr("OK   user namespaces: "));
  EXPECT_THAT(r.out, HasSubstr("WARN cgroup limits: degraded: no memory limit"));
  EXPECT_THAT(r.out, HasSubstr("OK   seccomp: "));
  EXPECT_THAT(r.out, HasSubstr("OK   rootfs: "));
}

TEST_P(DoctorTest, UnconfinedSeccompIsAWarning) {
  const Outcome r =
      Doctor({"--seccomp-profile", "unconfined"}, WithEnv({"MCP_EXEC_LIMITS=rlimit"}));
  EXPECT_EQ(r.exit_status, 0) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("WARN seccomp: seccomp is off by choice "
                               "(MCP_EXEC_SECCOMP_PROFILE=unconfined)"));
  EXPECT_THAT(r.out, HasSubstr("OK   rootfs: "));
}

TEST_P(DoctorTest, MissingRootfsFailsWithTheBuildTool) {
  const Outcome r = Doctor({"--rootfs", "/nonexistent"}, WithEnv({"MCP_EXEC_LIMITS=rlimit"}));
  EXPECT_EQ(r.exit_status, 1) << r.Describe();
  EXPECT_TRUE(HasOneLinePerCheck(r));
  const std::string rootfs = Block(r.out, "rootfs");
  EXPECT_THAT(rootfs, StartsWith("FAIL rootfs: "));
  EXPECT_THAT(rootfs, HasSubstr("/nonexistent"));
  EXPECT_THAT(rootfs, HasSubstr("     fix: build the rootfs with tools/build-rootfs"));
  EXPECT_THAT(rootfs, HasSubstr("MCP_EXEC_ROOTFS"));
  EXPECT_THAT(Block(r.out, "figures"), StartsWith("WARN figures: not checked: no usable rootfs"));
}

TEST_P(DoctorTest, InvalidConfigurationExitsWith2) {
  const Outcome r = Doctor({"--memory-max", "lots"});
  EXPECT_EQ(r.exit_status, 2) << r.Describe();
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("MCP_EXEC_MEMORY_MAX"));
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(DoctorTest);

// Caller mode only, as in UserNamespacesDisabled (setup_errors_test.cc): user namespaces are
// switched off inside a throwaway user namespace, where the probe's unshare fails with ENOSPC.
TEST(DoctorUserNamespacesDisabled, FailsNamingTheSysctlAndSkipsTheRootfsRun) {
  const SandboxRunner runner(RunMode::kCaller);
  ASSERT_EQ(runner.Problem(), "");
  const Outcome r = runner.RunCommand(
      {"/usr/bin/unshare", "--user", "--map-root-user", "/bin/sh", "-c",
       "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" doctor --rootfs \"$1\"",
       runner.Binary(), runner.Rootfs()},
      WithEnv({"MCP_EXEC_LIMITS=rlimit"}));
  EXPECT_EQ(r.exit_status, 1) << r.Describe();
  EXPECT_TRUE(HasOneLinePerCheck(r));
  const std::string userns = Block(r.out, "user namespaces");
  EXPECT_THAT(userns, StartsWith("FAIL user namespaces: unshare("));
  EXPECT_THAT(userns, HasSubstr("ENOSPC"));
  EXPECT_THAT(userns, HasSubstr("     fix: sysctl -w user.max_user_namespaces="));
  EXPECT_THAT(r.out, HasSubstr("FAIL rootfs: skipped: needs the checks above"));
}

// Caller mode only: what systemd's ProtectKernelTunables= does, a mount over /proc/sys, made
// in a throwaway user and mount namespace. The kernel then refuses the sandbox a fresh /proc.
TEST(DoctorProcOvermounted, FailsNamingTheMountAndTheSystemdOptions) {
  const SandboxRunner runner(RunMode::kCaller);
  ASSERT_EQ(runner.Problem(), "");
  const Outcome r = runner.RunCommand(
      {"/usr/bin/unshare", "--user", "--map-root-user", "--mount", "/bin/sh", "-c",
       "mount --bind /proc/sys /proc/sys && exec \"$0\" doctor --rootfs \"$1\"", runner.Binary(),
       runner.Rootfs()},
      WithEnv({"MCP_EXEC_LIMITS=rlimit"}));
  EXPECT_EQ(r.exit_status, 1) << r.Describe();
  EXPECT_TRUE(HasOneLinePerCheck(r));
  const std::string userns = Block(r.out, "user namespaces");
  EXPECT_THAT(userns, StartsWith("FAIL user namespaces: a fresh /proc cannot be mounted"));
  EXPECT_THAT(userns, HasSubstr("mounts cover /proc/sys"));
  EXPECT_THAT(userns, HasSubstr("     fix: under systemd, turn off ProtectKernelTunables="));
}

}  // namespace
}  // namespace mcpexec::testing
