// The output cap: combined stdout+stderr is cut at max-output-bytes, the program is never
// blocked on a full pipe, and the supervisor's memory stays bounded while it discards the rest.
#include <gtest/gtest.h>

#include <string>

#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using std::chrono::milliseconds;

class OutputLimitTest : public SandboxTest {};

TEST_P(OutputLimitTest, FloodIsTruncatedAtTheCapWithBoundedSupervisorMemory) {
  // 1600 x 64 KiB on each stream: 200 MiB in all.
  const Outcome r = runner_.RunCode(
      "import os\n"
      "chunk = b'x' * 65536\n"
      "for _ in range(1600):\n"
      "    os.write(1, chunk)\n"
      "    os.write(2, chunk)\n",
      {"--max-output-bytes", "1m", "--timeout", "30"});
  ASSERT_TRUE(IsRunResult(r));
  // exit 0: every write succeeded, so the program ran to its end, neither blocked nor killed.
  EXPECT_EQ(r.json["exit_code"], 0) << r.Describe();
  EXPECT_EQ(r.json["timed_out"], false);
  EXPECT_EQ(r.json["truncated"], true);
  EXPECT_EQ(r.exit_status, 0);
  const std::string out = r.json["stdout"].get<std::string>();
  const std::string err = r.json["stderr"].get<std::string>();
  EXPECT_LE(out.size() + err.size(), (1u << 20) + 8);
  EXPECT_GE(out.size() + err.size(), (1u << 20) - 8);
  EXPECT_EQ(out.find_first_not_of('x'), std::string::npos);
  EXPECT_EQ(err.find_first_not_of('x'), std::string::npos);
  EXPECT_LT(r.elapsed, milliseconds(10'000));
  EXPECT_LT(r.maxrss_kib, 48 * 1024) << "mcp-exec's peak memory, in KiB";
}

TEST_P(OutputLimitTest, OutputUnderTheCapIsComplete) {
  const Outcome r = runner_.RunCode(
      "import sys\n"
      "sys.stdout.write('o' * 1500)\n"
      "sys.stderr.write('e' * 500)\n",
      {"--max-output-bytes", "2k"});
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["stdout"], std::string(1500, 'o')) << r.Describe();
  EXPECT_EQ(r.json["stderr"], std::string(500, 'e'));
  EXPECT_EQ(r.json["truncated"], false);
}

TEST_P(OutputLimitTest, CapCountsBothStreamsTogether) {
  const Outcome r = runner_.RunCode(
      "import sys\n"
      "sys.stdout.write('o' * 1500); sys.stdout.flush()\n"
      "sys.stderr.write('e' * 1500)\n",
      {"--max-output-bytes", "2k"});
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["stdout"], std::string(1500, 'o')) << r.Describe();
  EXPECT_EQ(r.json["stderr"], std::string(2048 - 1500, 'e'));
  EXPECT_EQ(r.json["truncated"], true);
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(OutputLimitTest);

}  // namespace
}  // namespace mcpexec::testing
