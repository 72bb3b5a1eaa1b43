// ProcStatusBytes reads /proc/<pid>/status by field: a process names itself, and its name must
// never be taken for a figure (issue 23: prctl(PR_SET_NAME, "VmHWM:999999999") read as 1 TB).
#include <gtest/gtest.h>
#include <sys/prctl.h>

#include <thread>

#include "base/sys.h"

namespace mcpexec {
namespace {

TEST(ProcStatusBytes, ReadsTheFieldsLineThatStartsWithItsKey) {
  const std::string status =
      "Name:\tpython3\nVmPeak:\t  20000 kB\nVmHWM:\t    1500 kB\nVmRSS:\t    1200 kB\n";
  EXPECT_EQ(ProcStatusBytes(status, "VmHWM"), 1500u * 1024);
  EXPECT_EQ(ProcStatusBytes(status, "VmRSS"), 1200u * 1024);
  EXPECT_EQ(ProcStatusBytes(status, "VmSwap"), std::nullopt);
  EXPECT_EQ(ProcStatusBytes(status, "Vm"), std::nullopt) << "a key is a whole field name";
  EXPECT_EQ(ProcStatusBytes("VmHWM:\tnone\n", "VmHWM"), std::nullopt);
}

TEST(ProcStatusBytes, ANameThatLooksLikeAFieldIsNotTakenForIt) {
  EXPECT_EQ(ProcStatusBytes("Name:\tVmHWM:999999999\nVmHWM:\t 1500 kB\n", "VmHWM"), 1500u * 1024);
  EXPECT_EQ(ProcStatusBytes("Name:\tVmRSS:\t9 kB\nUmask:\t0022\n", "VmRSS"), std::nullopt);
}

// The same, from the kernel: a thread that names itself like a field, read back from /proc.
TEST(ProcStatusBytes, AThreadNamedLikeAFieldReadsItsOwnFigure) {
  std::optional<uint64_t> hwm;
  std::thread([&] {
    ASSERT_EQ(prctl(PR_SET_NAME, "VmHWM:99999999"), 0);
    auto status = ReadFile("/proc/thread-self/status");
    ASSERT_TRUE(status.ok());
    ASSERT_NE(status->find("Name:\tVmHWM:99999999"), std::string::npos) << *status;
    hwm = ProcStatusBytes(*status, "VmHWM");
  }).join();
  ASSERT_TRUE(hwm.has_value());
  EXPECT_GT(*hwm, 0u);
  EXPECT_LT(*hwm, 99999999ull * 1024) << "the name was read as the figure";
}

}  // namespace
}  // namespace mcpexec
