#include "config/settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/config_flags.h"
#include "config/config.h"
#include "exec/exec.h"
#include "limits/limits.h"
#include "sandbox/run_result.h"
#include "sandbox/spec.h"

namespace mcpexec::config {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Settings, EverySettingHasAVariableAFlagAndHelpUnderUniqueNames) {
  std::set<std::string_view> envs, flags;
  for (const Setting& s : Settings()) {
    SCOPED_TRACE(std::string(s.env));
    EXPECT_TRUE(s.env.starts_with("MCP_EXEC_"));
    EXPECT_TRUE(s.flag.starts_with("--"));
    EXPECT_TRUE(envs.insert(s.env).second) << "a second setting of this variable";
    EXPECT_TRUE(flags.insert(s.flag).second) << "a second setting of " << s.flag;
    EXPECT_FALSE(s.help.empty());
    EXPECT_FALSE(s.doc.empty());
    EXPECT_NE(s.store, nullptr);
    EXPECT_EQ(s.choices.empty(), s.type != SettingType::kChoice);
    EXPECT_THAT(std::string(s.help), Not(HasSubstr("(default "))) << "the table appends it";
    EXPECT_EQ(FindSetting(s.env), &s);
  }
  EXPECT_EQ(FindSetting("MCP_EXEC_NO_SUCH"), nullptr);
}

TEST(Settings, EveryDefaultParses) {
  for (const Setting& s : Settings()) {
    if (s.default_text.empty() && s.type != SettingType::kSwitch) continue;
    Config c;
    auto applied = ApplySetting(s, std::string(s.default_text), c);
    EXPECT_TRUE(applied.ok()) << s.env << ": " << applied.error().message;
  }
  EXPECT_TRUE(Validate(Defaults("/r")).ok());
}

// The struct's initializers are what a Config made in code (tests, the library) starts from:
// they must be the table's defaults.
TEST(Settings, TheStructsInitializersAreTheTablesDefaults) {
  for (const Setting& s : Settings()) {
    if (s.default_text.empty() && s.type != SettingType::kSwitch) continue;
    Config c;
    ASSERT_TRUE(ApplySetting(s, std::string(s.default_text), c).ok());
    EXPECT_TRUE(c == Config{}) << s.env << "'s default " << s.default_text
                               << " is not the initializer in config.h";
  }
  Config plain;
  const Config defaults = Defaults("/r");
  plain.rootfs = "/r";
  EXPECT_GE(defaults.max_concurrency, 1) << "the CPU count";
  plain.max_concurrency = defaults.max_concurrency;
  EXPECT_TRUE(plain == defaults);
}

// The modules below config (limits, sandbox) have defaults of their own for code that builds
// their structs directly; they must agree with the table.
TEST(Settings, TheLowerModulesDefaultsAgreeWithTheTable) {
  const Config c = Defaults("/r");
  EXPECT_EQ(limits::kDefaultMemoryMax, c.memory_max);
  EXPECT_EQ(limits::kDefaultPidsMax, c.pids_max);
  EXPECT_EQ(limits::kDefaultCpus, c.cpus);
  EXPECT_EQ(limits::ResourceLimits{}.max_timeout_s, c.max_timeout_s);
  EXPECT_EQ(sandbox::kDefaultWorkspaceBytes, c.workspace_bytes);
  EXPECT_EQ(sandbox::kDefaultFigureMaxPx, static_cast<uint32_t>(c.figure_max_px));
  EXPECT_EQ(std::string(sandbox::kSeccompDefault), c.seccomp_profile);
  EXPECT_EQ(sandbox::RunLimits{}.max_output_bytes, c.max_output_bytes);
  EXPECT_EQ(sandbox::RunLimits{}.timeout, std::chrono::seconds(c.default_timeout_s));
}

TEST(Settings, ChoicesAreTheNamesOfTheirEnums) {
  auto choices = [](std::string_view env) { return SettingChoices(*FindSetting(env)); };
  const auto transports = choices("MCP_EXEC_TRANSPORT");
  ASSERT_EQ(transports.size(), 3u);
  for (size_t i = 0; i < transports.size(); ++i) {
    EXPECT_EQ(TransportName(static_cast<Transport>(i)), transports[i]);
  }
  const auto modes = choices("MCP_EXEC_LIMITS");
  ASSERT_EQ(modes.size(), 4u);
  for (size_t i = 0; i < modes.size(); ++i) {
    EXPECT_EQ(LimitsModeName(static_cast<LimitsMode>(i)), modes[i]);
  }
  const auto auths = choices("MCP_EXEC_METRICS_AUTH");
  ASSERT_EQ(auths.size(), 2u);
  for (size_t i = 0; i < auths.size(); ++i) {
    EXPECT_EQ(MetricsAuthName(static_cast<MetricsAuth>(i)), auths[i]);
  }
  const auto engines = choices("MCP_EXEC_ENGINE");
  ASSERT_EQ(engines.size(), 4u);
  for (size_t i = 0; i < engines.size(); ++i) {
    EXPECT_EQ(EngineName(static_cast<EngineKind>(i)), engines[i]);
    EXPECT_EQ(EngineFromName(engines[i]), static_cast<EngineKind>(i));
  }
  EXPECT_EQ(EngineFromName("warm"), std::nullopt);
  Config c;
  ASSERT_TRUE(ApplyEnv(
                  [](const std::string& name) -> std::optional<std::string> {
                    if (name == "MCP_EXEC_TRANSPORT") return "sse";
                    if (name == "MCP_EXEC_LIMITS") return "cgroup1";
                    return std::nullopt;
                  },
                  c)
                  .ok());
  EXPECT_EQ(c.transport, Transport::kSse);
  EXPECT_EQ(c.limits, LimitsMode::kCgroup1);
}

// MCP_EXEC_LIMITS is parsed by the table and acted on by limits::OpenBackend, through the one
// enum (base/limits_mode.h): every choice reaches the backend options as the mode of its name,
// and each mode that names a backend names it as results and logs do (limits_backend).
TEST(Settings, EveryLimitsModeNameRoundTripsToTheBackendOptions) {
  const auto modes = SettingChoices(*FindSetting("MCP_EXEC_LIMITS"));
  std::set<std::string> backends;
  for (const limits::Backend b :
       {limits::Backend::kCgroup2, limits::Backend::kCgroup1, limits::Backend::kRlimit}) {
    backends.insert(limits::BackendName(b));
  }
  std::set<std::string> named_backends;
  for (const std::string& name : modes) {
    SCOPED_TRACE(name);
    Config c;
    ASSERT_TRUE(ApplySetting(*FindSetting("MCP_EXEC_LIMITS"), name, c).ok());
    EXPECT_EQ(LimitsModeName(c.limits), name);
    EXPECT_EQ(LimitsModeName(exec::BackendOptionsFor(c).mode), name);
    if (c.limits != LimitsMode::kAuto) named_backends.insert(name);
  }
  EXPECT_EQ(named_backends, backends) << "a mode for each backend, under the backend's name";
  Config c;
  c.limits = LimitsMode::kRlimit;
  auto rlimit = limits::OpenBackend(exec::BackendOptionsFor(c));
  ASSERT_TRUE(rlimit.ok()) << rlimit.error().message;
  EXPECT_STREQ(limits::BackendName((*rlimit)->Kind()), LimitsModeName(LimitsMode::kRlimit));
}

std::string HelpOf(cli::Command command) {
  CLI::App app{"test"};
  cli::ConfigFlags flags;
  cli::AddConfigFlags(&app, command, flags);
  return app.help();
}

TEST(Settings, HelpListsEverySettingWithItsDefaultAndVariable) {
  const std::string serve = HelpOf(cli::Command::kServe);
  const std::string run = HelpOf(cli::Command::kRun);
  for (const Setting& s : Settings()) {
    SCOPED_TRACE(std::string(s.env));
    EXPECT_THAT(serve, HasSubstr(std::string(s.flag) + " "));
    EXPECT_THAT(serve, HasSubstr("(" + std::string(s.env)));
    const std::string help = FlagHelp(s);
    EXPECT_TRUE(
        help.ends_with("(" + std::string(s.env) + (s.type == SettingType::kSwitch ? "=1)" : ")")))
        << help << ": tools/cli_help.py reads the variable from the end";
    const std::string shown = ShownDefault(s);
    if (!shown.empty() && shown.find('`') == std::string::npos) {
      EXPECT_THAT(help, HasSubstr("(default " + shown + ")"));
    }
    if (s.scope == SettingScope::kAll) {
      EXPECT_THAT(run, HasSubstr(std::string(s.flag) + " "));
    } else {
      EXPECT_THAT(run, Not(HasSubstr(std::string(s.flag) + " "))) << "a serve-only flag";
    }
  }
  EXPECT_THAT(serve, HasSubstr("(default 16m) (MCP_EXEC_MAX_INPUT_FILE_BYTES)"));
  EXPECT_THAT(serve, HasSubstr("(default CPUs) (MCP_EXEC_MAX_CONCURRENCY)"));
}

// README.md's table of settings is generated; this fails when it was edited by hand or a
// setting changed without regenerating it.
TEST(Settings, ReadmeTableIsTheGeneratedOne) {
  const std::string path = std::string(MCPEXEC_SOURCE_DIR) + "/README.md";
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string readme = buffer.str();
  const size_t begin = readme.find(kReadmeTableBegin);
  const size_t end = readme.find(kReadmeTableEnd);
  ASSERT_NE(begin, std::string::npos) << path << " has no " << kReadmeTableBegin;
  ASSERT_NE(end, std::string::npos) << path << " has no " << kReadmeTableEnd;
  ASSERT_LT(begin, end);
  const size_t body = begin + kReadmeTableBegin.size() + 1;  // past the marker's line
  const std::string table = readme.substr(body, end - body);
  const std::string generated = SettingsMarkdownTable();
  if (table != generated && std::getenv("MCP_EXEC_UPDATE_README") != nullptr) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        << readme.substr(0, body) << generated << readme.substr(end);
    GTEST_SKIP() << "rewrote the table in " << path;
  }
  EXPECT_EQ(table, generated)
      << "README.md's table of settings differs from src/config/settings.cc. Change the table "
         "there, then regenerate README.md's with:\n  MCP_EXEC_UPDATE_README=1 "
         "build/tests/unit_tests --gtest_filter=Settings.ReadmeTableIsTheGeneratedOne";
}

}  // namespace
}  // namespace mcpexec::config
