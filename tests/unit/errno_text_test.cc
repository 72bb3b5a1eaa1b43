// The one spelling of an errno in messages.
#include <cerrno>

#include <gtest/gtest.h>

#include "base/result.h"

namespace mcpexec {
namespace {

TEST(ErrnoText, NamesAndDescribes) {
  EXPECT_EQ(ErrnoName(EACCES), "EACCES");
  EXPECT_EQ(ErrnoText(ENOENT), "ENOENT (No such file or directory)");
}

TEST(ErrnoText, ANumberWithoutANameIsShownAsANumber) {
  EXPECT_EQ(ErrnoName(4095), "errno 4095");
}

TEST(ErrnoText, ErrnoUsesIt) {
  errno = EPERM;
  const Error e = Errno(ErrorCode::kPermissionDenied, "mount(/x)");
  EXPECT_EQ(e.sys_errno, EPERM);
  EXPECT_EQ(e.message, "mount(/x): " + ErrnoText(EPERM));
}

}  // namespace
}  // namespace mcpexec
