// Output while it runs (issue 9, point 4): the exec tool, in-process with a real sandbox, hands
// a running program's output to the client's progress and log callbacks as it is written, at
// most every 100 ms, bounded and as it will be in the result.
#include "exec/live_output.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "../support/sandbox_runner.h"
#include "config/config.h"
#include "exec/exec.h"
#include "exec/exec_tool.h"

namespace mcpexec::testing {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Silent for 0.8 s (progress only says it is alive), then a line every 200 ms for 2 s, and
// one line on stderr halfway.
constexpr const char* kTicker = R"py(
import sys, time
time.sleep(0.8)
for i in range(10):
    print(f"line {i}", flush=True)
    if i == 5:
        print("halfway", file=sys.stderr, flush=True)
    time.sleep(0.2)
)py";

struct Seen {
  Clock::time_point at;
  double progress = 0;
  std::string text;
  std::string logger;  // log messages only
};

// The output text of a progress message: its "[stdout] "/"[stderr] " labels taken out.
std::string Unlabelled(const std::string& message, const std::string& label) {
  std::string out;
  size_t pos = 0;
  while ((pos = message.find(label, pos)) != std::string::npos) {
    pos += label.size();
    const size_t next = message.find("\n[std", pos);
    out += message.substr(pos, next == std::string::npos ? std::string::npos : next - pos + 1);
  }
  return out;
}

TEST(ExecLiveOutputTest, AProgramsOutputReachesProgressAndLogAsItIsWritten) {
  ASSERT_EQ(HostSetup::Get().Problem(RunMode::kCaller), "");
  config::Config config = config::Defaults(HostSetup::Get().Rootfs());
  ASSERT_TRUE(config::ApplyEnv(config::ProcessEnv(), config).ok());
  auto plan = exec::PrepareSandboxes(config);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  exec::ExecTool tool(config, exec::EnvironmentEngines::Single(engine::MakeColdEngine(*plan)));

  std::mutex mu;
  std::vector<Seen> progress, logs;
  mcp::ToolCallContext context;
  context.report_progress = [&](double p, const std::string& message) {
    std::lock_guard lock(mu);
    progress.push_back({Clock::now(), p, message, ""});
  };
  context.log = [&](mcp::LogLevel level, const std::string& logger, const std::string& data) {
    std::lock_guard lock(mu);
    EXPECT_EQ(level, mcp::LogLevel::kInfo);
    logs.push_back({Clock::now(), 0, data, logger});
  };
  const Clock::time_point start = Clock::now();
  json result = tool.Call({{"code", kTicker}}, context);
  const Clock::time_point done = Clock::now();
  ASSERT_EQ(result["isError"], false) << result;

  std::string expected;
  for (int i = 0; i < 10; ++i) expected += "line " + std::to_string(i) + "\n";
  EXPECT_EQ(result["structuredContent"]["stdout"], expected) << "the result is unchanged";
  EXPECT_EQ(result["structuredContent"]["stderr"], "halfway\n");

  // Liveness while silent, then output; increasing progress; at most one per 100 ms (the
  // supervisor's clock, read a little before ours: 90 ms of slack); none over 4 KiB.
  ASSERT_GE(progress.size(), 8u);
  EXPECT_THAT(progress.front().text, StartsWith("running for 0.")) << "a silent start";
  std::string streamed_stdout, streamed_stderr;
  for (size_t i = 0; i < progress.size(); ++i) {
    EXPECT_LE(progress[i].text.size(), exec::kLiveOutputMaxBytes);
    if (i > 0) {
      EXPECT_GT(progress[i].progress, progress[i - 1].progress);
      EXPECT_GE(progress[i].at - progress[i - 1].at, milliseconds(90)) << "notification " << i;
    }
    streamed_stdout += Unlabelled(progress[i].text, "[stdout] ");
    streamed_stderr += Unlabelled(progress[i].text, "[stderr] ");
  }
  // Everything but what came in the last moments went out before the result, unchanged.
  EXPECT_THAT(expected, StartsWith(streamed_stdout));
  EXPECT_GE(streamed_stdout.size(), std::string("line 0\n").size() * 8) << streamed_stdout;
  EXPECT_EQ(streamed_stderr, "halfway\n");
  // The first line went out well before the end: streamed, not collected.
  auto first = std::find_if(progress.begin(), progress.end(), [](const Seen& s) {
    return s.text.find("line 0") != std::string::npos;
  });
  ASSERT_NE(first, progress.end());
  EXPECT_EQ(first->text, "[stdout] line 0\n");
  EXPECT_GT(done - first->at, milliseconds(1500));
  EXPECT_GT(first->at - start, milliseconds(700));

  // The same output as log messages, one logger per stream.
  std::string logged_stdout, logged_stderr;
  for (const Seen& s : logs) {
    ASSERT_TRUE(s.logger == "stdout" || s.logger == "stderr") << s.logger;
    (s.logger == "stdout" ? logged_stdout : logged_stderr) += s.text;
  }
  EXPECT_EQ(logged_stdout, streamed_stdout);
  EXPECT_EQ(logged_stderr, "halfway\n");
}

}  // namespace
}  // namespace mcpexec::testing
