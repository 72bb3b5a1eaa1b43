#include "sandbox/setup_error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../support/temp_dir.h"

namespace mcpexec::sandbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

TEST(ExplainUserns, NamesTheSysctlThatDisablesUserNamespacesAndItsFix) {
  UsernsFacts f;
  f.max_user_namespaces = 0;
  UsernsHint hint = ExplainUserns(f);
  EXPECT_THAT(hint.why, HasSubstr("user.max_user_namespaces is 0"));
  EXPECT_THAT(hint.fixes, ElementsAre(StartsWith("sysctl -w user.max_user_namespaces=")));

  f = UsernsFacts{};
  f.unprivileged_userns_clone = 0;
  EXPECT_THAT(ExplainUserns(f).fixes,
              ElementsAre(StartsWith("sysctl -w kernel.unprivileged_userns_clone=1")));
  f.root = true;  // root is not subject to it
  EXPECT_THAT(ExplainUserns(f).fixes, ElementsAre(Not(HasSubstr("unprivileged_userns_clone=1"))));

  f = UsernsFacts{};
  f.apparmor_restrict = 1;
  hint = ExplainUserns(f);
  EXPECT_THAT(hint.why, HasSubstr("apparmor_restrict_unprivileged_userns=1"));
  EXPECT_THAT(hint.fixes,
              ElementsAre(HasSubstr("AppArmor profile"),
                          HasSubstr("sysctl -w kernel.apparmor_restrict_unprivileged_userns=0")));

  EXPECT_THAT(ExplainUserns(UsernsFacts{}).fixes, ElementsAre(HasSubstr("seccomp=unconfined")));
}

TEST(ExplainUserns, TheReasonIsNotAFix) {
  // The fixes are data: no message carries "Fix:" prose for doctor to parse back out.
  for (const std::optional<long> max : {std::optional<long>(0), std::optional<long>()}) {
    UsernsFacts f;
    f.max_user_namespaces = max;
    EXPECT_THAT(ExplainUserns(f).why, Not(HasSubstr("Fix")));
    EXPECT_THAT(ExplainUserns(f).why, Not(HasSubstr("sysctl -w")));
  }
}

TEST(CloneError, ExplainsUserNamespaceFailuresAndCarriesTheFixes) {
  UsernsFacts f;
  f.max_user_namespaces = 0;
  Error e = CloneError(ENOSPC, f);
  EXPECT_EQ(e.code, ErrorCode::kUnavailable);
  EXPECT_THAT(e.message, HasSubstr("ENOSPC"));
  EXPECT_THAT(e.message, HasSubstr("user.max_user_namespaces is 0"));
  EXPECT_THAT(e.message, Not(HasSubstr("Fix")));
  EXPECT_EQ(e.fixes, ExplainUserns(f).fixes);
  EXPECT_THAT(CloneError(ENOSYS, f).message, HasSubstr("Linux 5.9"));
  EXPECT_EQ(CloneError(EAGAIN, f).code, ErrorCode::kResourceExhausted);
  EXPECT_THAT(CloneError(EAGAIN, f).fixes, IsEmpty());
}

TEST(CloneError, ErrorTextShowsTheReasonThenTheFixes) {
  UsernsFacts f;
  f.apparmor_restrict = 1;
  EXPECT_EQ(ErrorText(CloneError(EPERM, f)),
            "cannot create the sandbox's namespaces: clone3 failed with EPERM (Operation not "
            "permitted). AppArmor restricts unprivileged user namespaces "
            "(kernel.apparmor_restrict_unprivileged_userns=1)\n"
            "Fix one of:\n"
            "  - install an AppArmor profile for mcp-exec that grants 'userns,'\n"
            "  - or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0");
}

TEST(IdMapError, RootGetsTheUidFixAndOthersTheUsernsOnes) {
  const Error cause{ErrorCode::kPermissionDenied, EPERM, "write uid_map: EPERM"};
  UsernsFacts f;
  f.root = true;
  Error e = IdMapError(cause, f);
  EXPECT_EQ(e.message, "cannot map the sandbox's user: write uid_map: EPERM");
  EXPECT_THAT(e.fixes, ElementsAre(HasSubstr("host uid/gid")));
  f = UsernsFacts{};
  f.unprivileged_userns_clone = 0;
  e = IdMapError(cause, f);
  EXPECT_THAT(e.message, HasSubstr("kernel.unprivileged_userns_clone is 0"));
  EXPECT_EQ(e.fixes, ExplainUserns(f).fixes);
}

// A plan compiled on a directory that looks enough like a rootfs (as in plan_test.cc).
class ChildErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    namespace fs = std::filesystem;
    for (const char* d : {"proc", "dev", "tmp", "usr/bin"}) {
      fs::create_directories(Root() + "/" + d);
    }
    std::ofstream(Root() + "/usr/bin/python3") << "#!/bin/false\n";
    fs::permissions(Root() + "/usr/bin/python3", fs::perms::owner_all);
    SandboxSpec spec;
    spec.rootfs = Root();
    spec.outside_uid = 1000;
    spec.outside_gid = 1000;
    spec.seccomp_profile = kSeccompUnconfined;
    auto plan = Compile(spec, limits::MakeRlimitBackend(limits::ResourceLimits{}));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    plan_ = std::move(*plan);
  }
  std::string Root() const { return dir_.Path(); }
  static ChildReport Failure(ChildStep step, int err) {
    ChildReport report{};
    report.type = ReportType::kFailure;
    report.step = step;
    report.sys_errno = err;
    return report;
  }

  testing::TempDir dir_;
  std::shared_ptr<const LaunchPlan> plan_;
};

TEST_F(ChildErrorTest, MissingInterpreterCarriesTheRootfsFixes) {
  Error e = ChildError(*plan_, Failure(ChildStep::kExec, ENOENT), UsernsFacts{});
  EXPECT_EQ(e.code, ErrorCode::kNotFound);
  EXPECT_THAT(e.message, HasSubstr("is missing from the rootfs"));
  EXPECT_THAT(e.message, Not(HasSubstr("tools/build-rootfs")));
  EXPECT_THAT(e.fixes, ElementsAre(HasSubstr("tools/build-rootfs"), HasSubstr("MCP_EXEC_PYTHON")));
}

TEST_F(ChildErrorTest, RefusedMountCarriesTheUsernsAndHiddenProcFixes) {
  UsernsFacts f;
  f.apparmor_restrict = 1;
  Error e = ChildError(*plan_, Failure(ChildStep::kMountOp, EPERM), f);
  EXPECT_THAT(e.message, HasSubstr("AppArmor restricts unprivileged user namespaces"));
  std::vector<std::string> expected = ExplainUserns(f).fixes;
  for (const std::string& fix : HiddenProcFixes()) expected.push_back(fix);
  EXPECT_EQ(e.fixes, expected);
}

}  // namespace
}  // namespace mcpexec::sandbox
