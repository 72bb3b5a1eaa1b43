// The seccomp filter every run gets by default (the profile compiled in from
// seccomp-profiles/default.json), and the explicit opt-out. The adversarial suite checks each
// denied family; these check that the filter is there at all, in both modes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using ::testing::HasSubstr;

class SeccompTest : public SandboxTest {};

constexpr const char* kProbe = R"py(
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
mode = open("/proc/self/status").read().split("Seccomp:")[1].split()[0]
rc = libc.unshare(0x10000000)  # CLONE_NEWUSER
print(mode, rc, errno.errorcode.get(ctypes.get_errno(), "0") if rc else "ok")
)py";

TEST_P(SeccompTest, DefaultProfileFiltersEveryRun) {
  const Outcome r = runner_.RunCode(kProbe);
  ASSERT_TRUE(IsRunResult(r));
  // Mode 2 is a filter; a new user namespace is refused by it with EPERM.
  EXPECT_EQ(r.json["stdout"], "2 -1 EPERM\n") << r.Describe();
}

TEST_P(SeccompTest, UnconfinedIsAnExplicitChoice) {
  const Outcome r = runner_.RunCode(kProbe, {"--seccomp-profile", "unconfined"});
  ASSERT_TRUE(IsRunResult(r));
  // Without the filter, only the namespaces stand: the nested user namespace is allowed.
  EXPECT_THAT(r.json["stdout"].get<std::string>(), ::testing::StartsWith("0 ")) << r.Describe();
}

TEST_P(SeccompTest, UnreadableProfileStopsTheRun) {
  const Outcome r = runner_.Run({"--seccomp-profile", "/nonexistent/profile.json", "--code", "pass"});
  EXPECT_EQ(r.exit_status, 125) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/profile.json"));
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(SeccompTest);

}  // namespace
}  // namespace mcpexec::testing
