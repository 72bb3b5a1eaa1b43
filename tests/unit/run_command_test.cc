#include "cli/run_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "../support/temp_dir.h"

namespace mcpexec::cli {
namespace {

using ::testing::HasSubstr;

RunOptions Parse(std::vector<std::string> args) {
  CLI::App app;
  RunOptions options;
  AddRunCommand(app, options);
  args.insert(args.begin(), "run");
  std::reverse(args.begin(), args.end());  // CLI11 takes argv reversed
  app.parse(args);
  return options;
}

config::EnvLookup NoEnv() {
  return [](const std::string&) { return std::optional<std::string>(); };
}

TEST(RunArgs, CodeStdinAndTimeout) {
  RunOptions o = Parse({"--code", "print(1)", "--stdin", "in", "--timeout", "7"});
  std::istringstream none;
  auto r = ResolveRunRequest(o, none);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->code, "print(1)");
  EXPECT_EQ(r->stdin_data, "in");
  EXPECT_EQ(r->timeout_s, 7);
}

TEST(RunArgs, DashReadsCodeFromStandardInput) {
  RunOptions o = Parse({"-"});
  std::istringstream in("print('from stdin')\n");
  auto r = ResolveRunRequest(o, in);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->code, "print('from stdin')\n");
}

TEST(RunArgs, FileIsRead) {
  testing::TempDir dir;
  const std::string path = dir.Path() + "/prog.py";
  std::ofstream(path) << "x = 1\n";
  RunOptions o = Parse({"--file", path});
  std::istringstream none;
  auto r = ResolveRunRequest(o, none);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->code, "x = 1\n");
  o = Parse({"--file", dir.Path() + "/missing.py"});
  EXPECT_THAT(ResolveRunRequest(o, none).error().message, HasSubstr("cannot read --file"));
}

TEST(RunArgs, CodeSourcesExcludeEachOther) {
  EXPECT_THROW(Parse({"--code", "a", "--file", "b"}), CLI::ParseError);
  EXPECT_THROW(Parse({"--code", "a", "-"}), CLI::ParseError);
  EXPECT_THROW(Parse({"--timeout", "soon", "--code", "a"}), CLI::ParseError);
}

TEST(RunArgs, NoCodeIsAnError) {
  std::istringstream none;
  EXPECT_THAT(ResolveRunRequest(Parse({}), none).error().message, HasSubstr("no code given"));
  EXPECT_THAT(ResolveRunRequest(Parse({"prog.py"}), none).error().message,
              HasSubstr("unexpected argument 'prog.py'"));
}

TEST(RunConfig, FlagsWinOverTheEnvironment) {
  auto env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "MCP_EXEC_ROOTFS") return "/from-env";
    if (name == "MCP_EXEC_MAX_OUTPUT_BYTES") return "100";
    return std::nullopt;
  };
  auto c = ResolveConfig("/default", env, Parse({"--rootfs", "/from-flag"}).config);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rootfs, "/from-flag");
  EXPECT_EQ(c->max_output_bytes, 100u);
  auto d = ResolveConfig("/default", NoEnv(), Parse({}).config);
  EXPECT_EQ(d->rootfs, "/default");
}

TEST(RunConfig, BadFlagValueIsAnError) {
  auto c = ResolveConfig("/d", NoEnv(), Parse({"--workspace-bytes", "lots"}).config);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error().message, HasSubstr("MCP_EXEC_WORKSPACE_BYTES"));
}

TEST(ExitStatus, ProgramStatusSignalAndTimeout) {
  sandbox::RunResult r;
  r.exit_code = 3;
  EXPECT_EQ(ExitStatusFor(r), 3);
  r.exit_code = 128 + 9;
  EXPECT_EQ(ExitStatusFor(r), 137);
  r.exit_code = -1;
  r.timed_out = true;
  EXPECT_EQ(ExitStatusFor(r), kExitTimedOut);
}

TEST(ResultJson, SeedFieldsAndRepairedOutput) {
  sandbox::RunResult r;
  r.stdout_data = "ok\xFF";
  r.stderr_data = "";
  r.exit_code = 139;
  r.signal = 11;
  r.duration = std::chrono::milliseconds(42);
  nlohmann::json j = exec::ResultToJson(r, {});
  EXPECT_EQ(j["stdout"], "ok\xEF\xBF\xBD");
  EXPECT_EQ(j["exit_code"], 139);
  EXPECT_EQ(j["duration_ms"], 42);
  EXPECT_EQ(j["truncated"], false);
  EXPECT_EQ(j["timed_out"], false);
  EXPECT_EQ(j["signal"], "SIGSEGV");
  r.signal.reset();
  EXPECT_FALSE(exec::ResultToJson(r, {}).contains("signal"));
}

TEST(ExecRequest, EmptyCodeAndOversizedStdinAreInvalid) {
  config::Config c = config::Defaults("/r");
  c.max_stdin_bytes = 4;
  EXPECT_THAT(exec::ValidateRequest(c, {" \n\t", "", std::nullopt, {}}).error().message,
              HasSubstr("code is empty"));
  EXPECT_THAT(exec::ValidateRequest(c, {"pass", "12345", std::nullopt, {}}).error().message,
              HasSubstr("MCP_EXEC_MAX_STDIN_BYTES"));
  EXPECT_TRUE(exec::ValidateRequest(c, {"pass", "1234", std::nullopt, {}}).ok());
}

}  // namespace
}  // namespace mcpexec::cli
