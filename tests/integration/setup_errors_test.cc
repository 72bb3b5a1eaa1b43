// Set-up failures: exit status 125, no JSON, one line on stderr naming the cause, then the fixes
// the error carries (ErrorText's "Fix:" lines), if any.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kSetupFailed = 125;

// One line of stderr naming the cause, then only fix lines ("Fix: ...", or "Fix one of:" and its
// indented items), and nothing on stdout.
::testing::AssertionResult IsSetupError(const Outcome& r) {
  if (r.exit_status != kSetupFailed) {
    return ::testing::AssertionFailure() << "exit status is not 125:" << r.Describe();
  }
  if (!r.out.empty()) {
    return ::testing::AssertionFailure() << "stdout is not empty:" << r.Describe();
  }
  if (r.err.empty() || r.err.back() != '\n') {
    return ::testing::AssertionFailure() << "stderr is not whole lines:" << r.Describe();
  }
  size_t line = r.err.find('\n') + 1;
  for (bool in_list = false; line < r.err.size(); line = r.err.find('\n', line) + 1) {
    const std::string text = r.err.substr(line, r.err.find('\n', line) - line);
    const bool fix = (line == r.err.find('\n') + 1 && text.starts_with("Fix: ")) ||
                     (!in_list && text == "Fix one of:") || (in_list && text.starts_with("  "));
    if (!fix) {
      return ::testing::AssertionFailure() << "stderr line \"" << text
                                           << "\" is neither the cause nor a fix:" << r.Describe();
    }
    in_list = in_list || text == "Fix one of:";
  }
  return ::testing::AssertionSuccess();
}

class SetupErrorTest : public SandboxTest {};

TEST_P(SetupErrorTest, MissingRootfsNamesTheRootfsAndTheBuildTool) {
  const Outcome r = runner_.RunCode("print(1)", {"--rootfs", "/nonexistent"});
  EXPECT_TRUE(IsSetupError(r));
  EXPECT_THAT(r.err, HasSubstr("/nonexistent"));
  EXPECT_THAT(r.err, HasSubstr("tools/build-rootfs"));
}

TEST_P(SetupErrorTest, MissingInterpreterNamesMcpExecPython) {
  const Outcome r = runner_.RunCode("print(1)", {"--python", "python9"});
  EXPECT_TRUE(IsSetupError(r));
  EXPECT_THAT(r.err, HasSubstr("python9"));
  EXPECT_THAT(r.err, HasSubstr("MCP_EXEC_PYTHON"));
}

TEST_P(SetupErrorTest, ProgramLargerThanTheWorkspaceNamesWorkspaceBytes) {
  // 200 KB of code does not fit a 64 KiB workspace; it goes through standard input because one
  // argument may not exceed 128 KiB.
  const std::string code = std::string(200'000, '#') + "\nprint('must not run')\n";
  const Outcome r = runner_.Run({"-", "--workspace-bytes", "64k"}, WithInput(code));
  EXPECT_TRUE(IsSetupError(r));
  EXPECT_THAT(r.err, HasSubstr("MCP_EXEC_WORKSPACE_BYTES"));
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(SetupErrorTest);

// Caller mode only: `unshare --map-root-user` maps just the caller. user.max_user_namespaces is
// per user namespace, so setting it to 0 in a throwaway namespace leaves the host alone and
// makes mcp-exec's clone3 fail with ENOSPC there.
TEST(UserNamespacesDisabled, FailsWith125NamingMaxUserNamespaces) {
  const SandboxRunner runner(RunMode::kCaller);
  ASSERT_EQ(runner.Problem(), "");
  const Outcome r = runner.RunCommand(
      {"/usr/bin/unshare", "--user", "--map-root-user", "/bin/sh", "-c",
       "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" run --rootfs \"$1\" --code "
       "'print(1)'",
       runner.Binary(), runner.Rootfs()});
  EXPECT_TRUE(IsSetupError(r));
  EXPECT_THAT(r.err, HasSubstr("user.max_user_namespaces is 0"));
  // The fix, carried as data and rendered on its own line.
  EXPECT_THAT(r.err, HasSubstr("\nFix: sysctl -w user.max_user_namespaces="));
  // The cause: clone3 fails with ENOSPC ("the limit on nested user namespaces would be
  // exceeded", clone(2)); the message must report that errno, not one left over from reading
  // the sysctls afterwards.
  EXPECT_THAT(r.err, HasSubstr("ENOSPC"));
}

}  // namespace
}  // namespace mcpexec::testing
