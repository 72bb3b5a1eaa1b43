#include "sandbox/setup_error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mcpexec::sandbox {
namespace {

using ::testing::HasSubstr;

TEST(UsernsHint, NamesTheSysctlThatDisablesUserNamespaces) {
  UsernsFacts f;
  f.max_user_namespaces = 0;
  EXPECT_THAT(UsernsHint(f), HasSubstr("sysctl -w user.max_user_namespaces="));

  f = UsernsFacts{};
  f.unprivileged_userns_clone = 0;
  EXPECT_THAT(UsernsHint(f), HasSubstr("kernel.unprivileged_userns_clone=1"));
  f.root = true;  // root is not subject to it
  EXPECT_THAT(UsernsHint(f), ::testing::Not(HasSubstr("unprivileged_userns_clone=1")));

  f = UsernsFacts{};
  f.apparmor_restrict = 1;
  EXPECT_THAT(UsernsHint(f), HasSubstr("apparmor_restrict_unprivileged_userns"));

  EXPECT_THAT(UsernsHint(UsernsFacts{}), HasSubstr("seccomp=unconfined"));
}

TEST(CloneError, ExplainsUserNamespaceFailures) {
  UsernsFacts f;
  f.max_user_namespaces = 0;
  Error e = CloneError(ENOSPC, f);
  EXPECT_EQ(e.code, ErrorCode::kUnavailable);
  EXPECT_THAT(e.message, HasSubstr("ENOSPC"));
  EXPECT_THAT(e.message, HasSubstr("user.max_user_namespaces"));
  EXPECT_THAT(CloneError(ENOSYS, f).message, HasSubstr("Linux 5.9"));
  EXPECT_EQ(CloneError(EAGAIN, f).code, ErrorCode::kResourceExhausted);
}

}  // namespace
}  // namespace mcpexec::sandbox
