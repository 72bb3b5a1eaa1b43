#include "sandbox/setup_error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace mcpexec::sandbox
