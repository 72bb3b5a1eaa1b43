#include "cli/run_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "../support/temp_dir.h"
#include "config/settings.h"

namespace mcpexec::cli {
namespace {

using ::testing::AllOf;
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

TEST(RunArgs, InputsAreReadIntoFiles) {
  testing::TempDir dir;
  const std::string binary("\x89PNG\r\n\x1a\n\x00\xff", 10);
  std::ofstream(dir.Path() + "/in.csv") << "a,b\n1,2\n";
  std::ofstream(dir.Path() + "/blob.bin", std::ios::binary) << binary;
  std::ofstream(dir.Path() + "/eq=sign") << "named with =";
  RunOptions o =
      Parse({"--code", "pass", "--input", "data/in.csv=" + dir.Path() + "/in.csv", "--input",
             "blob.bin=" + dir.Path() + "/blob.bin", "--input", "e=" + dir.Path() + "/eq=sign"});
  std::istringstream none;
  auto r = ResolveRunRequest(o, none);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->files.size(), 3u);
  EXPECT_EQ(r->files[0].path, "data/in.csv");
  EXPECT_EQ(r->files[0].content, "a,b\n1,2\n");
  EXPECT_EQ(r->files[1].path, "blob.bin");
  EXPECT_EQ(r->files[1].content, binary);
  EXPECT_EQ(r->files[2].path, "e");  // PATH ends at the first '='
  EXPECT_EQ(r->files[2].content, "named with =");
}

TEST(RunArgs, InputWithoutPathOrFileIsAnError) {
  std::istringstream none;
  for (const std::string input : {"data.csv", "=./data.csv", "data.csv=", "="}) {
    auto r = ResolveRunRequest(Parse({"--code", "pass", "--input", input}), none);
    ASSERT_FALSE(r.ok()) << input;
    EXPECT_THAT(r.error().message,
                AllOf(HasSubstr("--input " + input), HasSubstr("expected PATH=LOCALFILE")));
  }
  EXPECT_THROW(Parse({"--code", "pass", "--input"}), CLI::ParseError);
}

TEST(RunArgs, AnUnreadableInputFileIsAnError) {
  testing::TempDir dir;
  std::istringstream none;
  for (const std::string& local : {dir.Path() + "/missing.csv", dir.Path()}) {
    auto r = ResolveRunRequest(Parse({"--code", "pass", "--input", "x.csv=" + local}), none);
    ASSERT_FALSE(r.ok()) << local;
    EXPECT_EQ(r.error().message, "cannot read --input x.csv=" + local);
  }
}

// A local file is read only up to the limit and a little more: enough for validation to refuse
// it without holding all of it.
TEST(RunArgs, AnInputOverTheLimitIsRefusedByValidation) {
  testing::TempDir dir;
  std::ofstream(dir.Path() + "/big.bin") << std::string(1 << 20, 'x');
  std::istringstream none;
  auto r = ResolveRunRequest(
      Parse({"--code", "pass", "--input", "big.bin=" + dir.Path() + "/big.bin"}), none, 1000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->files.size(), 1u);
  EXPECT_GT(r->files[0].content.size(), 1000u);
  EXPECT_LT(r->files[0].content.size(), 1u << 20);
  config::Config c = config::Defaults("/r");
  c.max_input_file_bytes = 1000;
  EXPECT_THAT(
      exec::ValidateRequest(c, *r).error().message,
      AllOf(HasSubstr("files[0] (\"big.bin\")"), HasSubstr("MCP_EXEC_MAX_INPUT_FILE_BYTES")));
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

// `run --engine` takes its choices from MCP_EXEC_ENGINE's in the table, auto left out, so that
// an engine added there is one `run` can compare: its --help lists exactly those (the man page
// and the completion read them from there), each parses to the engine of its name, and auto is
// refused as a usage error.
TEST(RunArgs, EngineChoicesAreTheTablesButAuto) {
  const std::string kAuto = config::EngineName(config::EngineKind::kAuto);
  std::vector<std::string> expected;
  for (const std::string& name : config::SettingChoices(*config::FindSetting("MCP_EXEC_ENGINE"))) {
    if (name != kAuto) expected.push_back(name);
  }
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(RunEngineChoices(), expected);

  CLI::App app;
  RunOptions options;
  const std::string help = AddRunCommand(app, options)->help();
  std::string braced, piped;
  for (const std::string& name : expected) {
    braced += (braced.empty() ? "" : ",") + name;
    piped += (piped.empty() ? "" : " | ") + name;
  }
  EXPECT_THAT(help, HasSubstr("--engine TEXT:{" + braced + "}"));
  EXPECT_THAT(help, HasSubstr(piped + ": run in the sandbox that engine gives"));
  EXPECT_THAT(help, HasSubstr("so they are no faster here (default cold)"));

  EXPECT_EQ(Parse({"--code", "pass"}).engine, "cold");
  for (const std::string& name : expected) {
    SCOPED_TRACE(name);
    EXPECT_EQ(Parse({"--engine", name, "--code", "pass"}).engine, name);
    const std::optional<config::EngineKind> kind = config::EngineFromName(name);
    ASSERT_TRUE(kind.has_value());
    EXPECT_EQ(config::EngineName(*kind), name);
  }
  EXPECT_THROW(Parse({"--engine", kAuto, "--code", "pass"}), CLI::ValidationError);
  EXPECT_THROW(Parse({"--engine", "warm", "--code", "pass"}), CLI::ValidationError);
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

TEST(RunConfig, FileLimitFlags) {
  auto c = ResolveConfig(
      "/d", NoEnv(),
      Parse({"--max-input-files", "2", "--max-input-file-bytes", "1k", "--max-output-files", "3",
             "--max-output-file-bytes", "4k", "--max-result-bytes", "5k"})
          .config);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->max_input_files, 2u);
  EXPECT_EQ(c->max_input_file_bytes, 1024u);
  EXPECT_EQ(c->max_output_files, 3u);
  EXPECT_EQ(c->max_output_file_bytes, 4096u);
  EXPECT_EQ(c->max_result_bytes, 5120u);
  auto bad = ResolveConfig("/d", NoEnv(), Parse({"--max-output-files", "few"}).config);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("MCP_EXEC_MAX_OUTPUT_FILES"));
}

TEST(RunConfig, FigureMaxPxFlagWinsAndIsRangeChecked) {
  auto env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "MCP_EXEC_FIGURE_MAX_PX") return "1000";
    return std::nullopt;
  };
  auto c = ResolveConfig("/d", env, Parse({"--figure-max-px", "512"}).config);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->figure_max_px, 512);
  auto bad = ResolveConfig("/d", NoEnv(), Parse({"--figure-max-px", "32"}).config);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("MCP_EXEC_FIGURE_MAX_PX: '32' is outside [64, 8192]"));
}

// A `rootfs` and beside it `environments/` with the image "x" (its metadata only), as
// tools/build-rootfs lays them out.
class RunEnvironment : public ::testing::Test {
 protected:
  RunEnvironment() {
    std::filesystem::create_directories(dir_.Path() + "/rootfs");
    const std::string meta = dir_.Path() + "/environments/x/usr/share/mcp-exec/environment";
    std::filesystem::create_directories(meta);
    std::ofstream(meta + "/name") << "x\n";
    std::ofstream(meta + "/hash") << "00000000000000aa\n";
    std::ofstream(meta + "/packages.json") << "[]";
    std::ofstream(meta + "/preload.txt") << "only_in_x\n";
    std::ofstream(meta + "/env.txt") << "ONLY_IN_X=yes\n";
  }

  // The environment `args` choose, with these MCP_EXEC_* variables.
  Result<exec::Environment> Choose(std::vector<std::string> args,
                                   std::map<std::string, std::string> vars = {}) {
    const RunOptions o = Parse(std::move(args));
    auto env = [&vars](const std::string& name) -> std::optional<std::string> {
      auto it = vars.find(name);
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
    auto c = ResolveConfig(dir_.Path() + "/rootfs", env, o.config);
    if (!c.ok()) return c.error();
    return ChooseRunEnvironment(*c, o);
  }

  testing::TempDir dir_;
};

TEST_F(RunEnvironment, TheOneNamedWithItsImageVariablesAndPreloads) {
  auto x = Choose({"--environment", "x"});
  ASSERT_TRUE(x.ok()) << x.error().message;
  EXPECT_EQ(x->name, "x");
  EXPECT_EQ(x->image, dir_.Path() + "/environments/x");
  EXPECT_EQ(x->env, std::vector<std::string>{"ONLY_IN_X=yes"});
  EXPECT_EQ(x->preload, std::vector<std::string>{"only_in_x"});
  auto def = Choose({"--environment", "default"}, {{"MCP_EXEC_PRELOAD", "decimal"}});
  ASSERT_TRUE(def.ok()) << def.error().message;
  EXPECT_EQ(def->image, dir_.Path() + "/rootfs");
  EXPECT_EQ(def->preload, std::vector<std::string>{"decimal"});
}

TEST_F(RunEnvironment, WithoutItTheDefaultEnvironmentOrWithRootfsDefault) {
  EXPECT_EQ(Choose({})->name, "default");
  EXPECT_EQ(Choose({}, {{"MCP_EXEC_DEFAULT_ENVIRONMENT", "x"}})->name, "x");
  auto rootfs =
      Choose({"--rootfs", dir_.Path() + "/rootfs"}, {{"MCP_EXEC_DEFAULT_ENVIRONMENT", "x"}});
  ASSERT_TRUE(rootfs.ok()) << rootfs.error().message;
  EXPECT_EQ(rootfs->name, "default");
  // The variable says only where default is, and so where the others are.
  auto moved =
      Choose({"--environment", "x"}, {{"MCP_EXEC_ROOTFS", dir_.Path() + "/elsewhere/rootfs"}});
  ASSERT_FALSE(moved.ok());
  EXPECT_THAT(moved.error().message,
              HasSubstr(dir_.Path() + "/elsewhere/environments/x is not built"));
}

TEST_F(RunEnvironment, OneNotOfferedSaysWhyNamesTheOfferedAndTheFix) {
  auto gpu = Choose({"--environment", "gpu"});
  ASSERT_FALSE(gpu.ok());
  EXPECT_THAT(gpu.error().message,
              AllOf(HasSubstr("environment \"gpu\" is not offered: its image " + dir_.Path() +
                              "/environments/gpu is not built"),
                    HasSubstr("`mcp-exec env build gpu` builds it"),
                    HasSubstr("Offered here: default, x")));
  auto by_default = Choose({}, {{"MCP_EXEC_DEFAULT_ENVIRONMENT", "gpu"}});
  ASSERT_FALSE(by_default.ok());
  EXPECT_THAT(by_default.error().message,
              AllOf(HasSubstr("\"gpu\" (MCP_EXEC_DEFAULT_ENVIRONMENT) is not offered"),
                    HasSubstr("name another with --environment or MCP_EXEC_DEFAULT_ENVIRONMENT")));
  auto left_out = Choose({"--environment", "x"}, {{"MCP_EXEC_ENVIRONMENTS", "default"}});
  ASSERT_FALSE(left_out.ok());
  EXPECT_THAT(left_out.error().message,
              AllOf(HasSubstr("it is built, but MCP_EXEC_ENVIRONMENTS (default) leaves it out"),
                    HasSubstr("Offered here: default (")));
}

TEST(ExitStatus, ProgramStatusSignalAndTimeout) {
  sandbox::RunResult r;
  r.exit_code = 3;
  EXPECT_EQ(ExitStatusFor(r), 3);
  r.exit_code = 128 + 9;
  EXPECT_EQ(ExitStatusFor(r), 137);
  r.exit_code = -1;
  r.outcome = sandbox::Outcome::kTimedOut;
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
