// MCP_EXEC_ENGINE=auto, the default engine of `serve` (src/exec/engine_choice.h): on this host it
// chooses the zygote, a limit the warm engines cannot start under sends it to a slower engine
// with a log line that says why, an image the zygote cannot use gets the pool, and a preload the
// rootfs lacks stops the server instead.
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kInitialize =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
    R"("capabilities":{},"clientInfo":{"name":"engine-auto-test","version":"1"}}})"
    "\n";

// The server's log lines (JSON, one per line on stderr) whose "msg" is `msg`.
std::vector<nlohmann::json> LogLines(const std::string& err, const std::string& msg) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("msg", "") == msg) lines.push_back(j);
  }
  return lines;
}

class EngineAutoTest : public SandboxTest {
 protected:
  // `serve` over stdio with MCP_EXEC_ENGINE=auto and `env`, for one initialize; it stops at the
  // end of its input.
  Outcome Serve(std::vector<std::string> env) const {
    env.push_back("MCP_EXEC_ENGINE=auto");
    LaunchOptions options = WithInput(kInitialize);
    options.env = std::move(env);
    return runner_.RunCommand({runner_.Binary(), "serve", "--rootfs", runner_.Rootfs()}, options);
  }
};

TEST_P(EngineAutoTest, ChoosesTheZygoteHere) {
  const Outcome r = Serve({"MCP_EXEC_PRELOAD=decimal"});
  ASSERT_EQ(r.exit_status, 0) << r.Describe();
  const std::vector<nlohmann::json> starting = LogLines(r.err, "starting");
  ASSERT_EQ(starting.size(), 1u) << r.err;
  EXPECT_EQ(starting[0]["engine"], "zygote") << r.err;
  EXPECT_EQ(starting[0]["engine_setting"], "auto");
  EXPECT_THAT(LogLines(r.err, "an engine does not start here; runs take a slower one"),
              ::testing::IsEmpty());
  EXPECT_THAT(r.out, HasSubstr(R"("protocolVersion":"2025-06-18")"));
}

// A memory limit the preloads do not fit in: under cgroups the warm interpreters are killed
// while they import (or, where the kernel reclaims their files' pages instead, do not finish in
// time), and auto says so and serves cold; the rlimit backend has no memory limit to hit, and
// keeps the zygote.
TEST_P(EngineAutoTest, AWarmEngineThatCannotStartIsPassedOverWithWhy) {
  const Outcome r =
      Serve({"MCP_EXEC_MEMORY_MAX=48m", "MCP_EXEC_PRELOAD=numpy,pandas,matplotlib.pyplot"});
  ASSERT_EQ(r.exit_status, 0) << r.Describe();
  const std::vector<nlohmann::json> starting = LogLines(r.err, "starting");
  ASSERT_EQ(starting.size(), 1u) << r.err;
  const std::vector<nlohmann::json> passed_over =
      LogLines(r.err, "an engine does not start here; runs take a slower one");
  if (starting[0]["limits_backend"] == "rlimit") {
    EXPECT_EQ(starting[0]["engine"], "zygote") << r.err;
    EXPECT_THAT(passed_over, ::testing::IsEmpty());
    return;
  }
  EXPECT_EQ(starting[0]["engine"], "cold") << r.err;
  std::vector<std::string> engines;
  for (const nlohmann::json& line : passed_over) {
    engines.push_back(line["engine"]);
    EXPECT_EQ(line["level"], "warn");
    // Killed by the OOM killer, too slow while the kernel reclaims its pages, or ended by a
    // MemoryError it could not report: each message says why.
    EXPECT_THAT(line["error"].get<std::string>(),
                ::testing::AnyOf(HasSubstr("killed by SIGKILL"), HasSubstr("in time"),
                                 HasSubstr("needs more memory or processes than the limits")));
  }
  EXPECT_THAT(engines, ElementsAre("zygote", "pool"));
}

// Where the zygote cannot start, the pool is what auto takes, and what keeps the pool in the
// project (docs/engine.md#choosing-an-engine): an image without /mnt, where a zygote binds the
// rootfs its runs are built on. (The test rootfs hard-linked into a scratch directory, as the
// environments test makes its image: one inode per file, /mnt left out.)
TEST_P(EngineAutoTest, AnImageTheZygoteCannotUseIsServedByThePool) {
  char tmpl[] = "/tmp/mcp-exec-test-nomnt-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string image = dir + "/rootfs";
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  const std::string copy = "cp -al '" + runner_.Rootfs() + "' '" + image + "'";
  ASSERT_EQ(std::system(copy.c_str()), 0) << copy;
  ASSERT_EQ(rmdir((image + "/mnt").c_str()), 0) << image << "/mnt: " << strerror(errno);
  LaunchOptions options = WithInput(kInitialize);
  options.env = {"MCP_EXEC_ENGINE=auto", "MCP_EXEC_PRELOAD=decimal"};
  const Outcome r = runner_.RunCommand({runner_.Binary(), "serve", "--rootfs", image}, options);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.exit_status, 0) << r.Describe();
  const std::vector<nlohmann::json> starting = LogLines(r.err, "starting");
  ASSERT_EQ(starting.size(), 1u) << r.err;
  EXPECT_EQ(starting[0]["engine"], "pool") << r.err;
  const std::vector<nlohmann::json> passed_over =
      LogLines(r.err, "an engine does not start here; runs take a slower one");
  ASSERT_EQ(passed_over.size(), 1u) << r.err;
  EXPECT_EQ(passed_over[0]["engine"], "zygote");
  EXPECT_THAT(passed_over[0]["error"].get<std::string>(), HasSubstr("has no /mnt directory"));
  EXPECT_THAT(r.out, HasSubstr(R"("protocolVersion":"2025-06-18")"));
}

TEST_P(EngineAutoTest, APreloadTheRootfsLacksStopsTheServer) {
  const Outcome r = Serve({"MCP_EXEC_PRELOAD=numpyx"});
  EXPECT_EQ(r.exit_status, 1) << r.Describe();
  const std::vector<nlohmann::json> error = LogLines(r.err, "cannot start the engine");
  ASSERT_EQ(error.size(), 1u) << r.err;
  EXPECT_EQ(error[0]["engine"], "auto");
  EXPECT_THAT(error[0]["error"].get<std::string>(),
              HasSubstr("import numpyx: ModuleNotFoundError"));
  EXPECT_THAT(LogLines(r.err, "starting"), ::testing::IsEmpty());
  EXPECT_EQ(r.out, "");
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(EngineAutoTest);

}  // namespace
}  // namespace mcpexec::testing
