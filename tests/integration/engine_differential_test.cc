// Engines are invisible to the program: every program of tests/engine/corpus/ runs once per
// engine of kEngines, in both modes, and each engine's result must equal the cold engine's (a
// fresh interpreter per run) in every member the program decides: output, exit code, signal,
// timeout, truncation, OOM kill, files. Each cold run also meets the expectation its program
// states (`expect_exit`, ...), so a broken corpus or interpreter cannot pass by failing the same
// way everywhere. A second test checks that what should be random differs between runs of every
// engine, and between a warm engine and cold.
//
// A corpus program may start with one directive line, `# run: {JSON}`:
//   stdin, timeout (seconds, default kDefaultTimeoutS), args (more `mcp-exec run` arguments);
//   expect_exit (default 0), expect_signal (default none; null for none), expect_timed_out,
//   expect_truncated, expect_oom_killed (default false), expect_stdout_contains,
//   expect_stderr_contains; on_rlimit: expect_* members that replace the others when the run's
//   limits backend is `rlimit` (no memory limit there); documented: {member: why} for a
//   difference docs/engine.md lists as one a program can see (the preloads in sys.modules, the
//   agent's frames under the program's): that member is not compared, the others are.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "../support/host_files.h"
#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;

// The engines every program runs under, cold first: the others are compared with it.
constexpr std::array<const char*, 3> kEngines = {"cold", "pool", "zygote"};

// Result members that measure the run or the host rather than the program; every other member
// must be equal across engines.
const std::set<std::string> kIgnoredMembers = {"duration_ms", "memory_peak_bytes", "cpu_time_ms",
                                               "limits_backend"};

constexpr int kDefaultTimeoutS = 30;
constexpr size_t kMinCorpusSize = 45;

const std::set<std::string> kDirectiveKeys = {"stdin",
                                              "timeout",
                                              "args",
                                              "expect_exit",
                                              "expect_signal",
                                              "expect_timed_out",
                                              "expect_truncated",
                                              "expect_oom_killed",
                                              "expect_stdout_contains",
                                              "expect_stderr_contains",
                                              "on_rlimit",
                                              "documented"};

std::string EngineDir() { return MCPEXEC_ENGINE_TESTS_DIR; }
std::string CorpusDir() { return EngineDir() + "/corpus"; }

// The corpus's programs by name (file name without ".py"), sorted. Empty when the directory
// cannot be read; EngineDifferentialCorpusTest says so.
std::vector<std::string> CorpusNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(CorpusDir(), ec)) {
    if (entry.path().extension() == ".py") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

struct Program {
  std::string name;
  std::string code;
  json directive = json::object();
  std::string problem;  // why the program cannot be used; empty when it can
};

Program LoadProgram(const std::string& name) {
  Program p;
  p.name = name;
  if (!ReadWhole(CorpusDir() + "/" + name + ".py", &p.code)) {
    p.problem = "cannot read " + CorpusDir() + "/" + name + ".py";
    return p;
  }
  const std::string prefix = "# run: ";
  if (!p.code.starts_with(prefix)) return p;
  const std::string line = p.code.substr(prefix.size(), p.code.find('\n') - prefix.size());
  p.directive = json::parse(line, nullptr, false);
  if (!p.directive.is_object()) {
    p.problem = "its `# run:` line is not a JSON object: " + line;
    return p;
  }
  for (const auto& [key, value] : p.directive.items()) {
    if (kDirectiveKeys.count(key) == 0) p.problem += "unknown directive member \"" + key + "\" ";
  }
  const json& d = p.directive;
  const json args = d.value("args", json::array());
  const bool args_ok = args.is_array() && std::all_of(args.begin(), args.end(),
                                                      [](const json& a) { return a.is_string(); });
  if (!args_ok || (d.contains("stdin") && !d["stdin"].is_string()) ||
      (d.contains("timeout") && !d["timeout"].is_number_integer())) {
    p.problem += "stdin must be a string, timeout an integer and args an array of strings ";
  }
  const json on_rlimit = d.value("on_rlimit", json::object());
  if (!on_rlimit.is_object()) {
    p.problem += "on_rlimit must be an object";
    return p;
  }
  for (const auto& [key, value] : on_rlimit.items()) {
    if (!key.starts_with("expect_") || kDirectiveKeys.count(key) == 0) {
      p.problem += "on_rlimit may hold only expect_* members, not \"" + key + "\" ";
    }
  }
  const json documented = d.value("documented", json::object());
  const bool documented_ok =
      documented.is_object() && std::all_of(documented.begin(), documented.end(), [](const json& why) {
        return why.is_string() && why.get<std::string>().find("docs/engine.md") != std::string::npos;
      });
  if (!documented_ok) {
    p.problem += "documented must map result members to reasons that cite docs/engine.md ";
  }
  return p;
}

std::vector<std::string> RunArgs(const Program& p, const std::string& engine) {
  std::vector<std::string> args = {
      "--code", p.code,      "--engine",
      engine,   "--timeout", std::to_string(p.directive.value("timeout", kDefaultTimeoutS))};
  if (p.directive.contains("stdin")) {
    args.insert(args.end(), {"--stdin", p.directive["stdin"].get<std::string>()});
  }
  for (const auto& arg : p.directive.value("args", json::array())) args.push_back(arg);
  return args;
}

// `text` cut to about `max` characters around `at`, for failure messages.
std::string Abbreviated(const std::string& text, size_t at, size_t max = 300) {
  if (text.size() <= max) return text;
  const size_t begin = at > max / 3 ? std::min(at - max / 3, text.size() - max) : 0;
  std::string cut = text.substr(begin, max);
  if (begin > 0) cut = "[" + std::to_string(begin) + " characters] ..." + cut;
  if (begin + max < text.size()) {
    cut += "... [" + std::to_string(text.size() - begin - max) + " more characters]";
  }
  return cut;
}

// A member's value for messages: its JSON text, or "(absent)".
std::string Shown(const json& result, const std::string& member) {
  return result.contains(member) ? result[member].dump() : "(absent)";
}

// Empty when `other`'s result equals `cold`'s in every compared member; otherwise one paragraph
// per differing member naming it and showing both values.
std::string Differences(const std::string& program, const std::string& engine, const json& cold,
                        const json& other, const json& documented) {
  std::set<std::string> members;
  for (const auto& [key, value] : cold.items()) members.insert(key);
  for (const auto& [key, value] : other.items()) members.insert(key);
  std::string report;
  for (const std::string& member : members) {
    if (kIgnoredMembers.count(member) != 0 || documented.contains(member)) continue;
    const bool in_cold = cold.contains(member), in_other = other.contains(member);
    if (in_cold && in_other && cold[member] == other[member]) continue;
    const std::string a = Shown(cold, member), b = Shown(other, member);
    size_t at = 0;
    while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
    report += "\nprogram " + program + ", engine " + engine + ": member \"" + member +
              "\" differs (first at character " + std::to_string(at) + " of its JSON text)" +
              "\n  cold: " + Abbreviated(a, at) + "\n  " + engine + ": " + Abbreviated(b, at);
  }
  return report;
}

// Checks the cold result against what the program's directive says it does.
void ExpectDirective(const Program& p, const Outcome& cold) {
  json expect = p.directive;
  if (cold.json.value("limits_backend", "") == "rlimit" && expect.contains("on_rlimit")) {
    expect.update(expect["on_rlimit"]);
  }
  const json& r = cold.json;
  const std::string where = "program " + p.name + ", engine cold:" + cold.Describe();
  EXPECT_EQ(r.value("exit_code", -999), expect.value("expect_exit", 0)) << where;
  const json signal = expect.value("expect_signal", json(nullptr));
  EXPECT_EQ(Shown(r, "signal"), signal.is_null() ? "(absent)" : signal.dump()) << where;
  for (const char* flag : {"timed_out", "truncated", "oom_killed"}) {
    EXPECT_EQ(r.value(flag, json(nullptr)), expect.value(std::string("expect_") + flag, false))
        << flag << " of " << where;
  }
  for (const char* stream : {"stdout", "stderr"}) {
    const std::string key = std::string("expect_") + stream + "_contains";
    if (!expect.contains(key)) continue;
    EXPECT_NE(r.value(stream, "").find(expect[key].get<std::string>()), std::string::npos)
        << stream << " lacks " << expect[key].dump() << " in " << where;
  }
}

using CorpusParam = std::tuple<RunMode, std::string>;

class EngineDifferentialTest : public ::testing::TestWithParam<CorpusParam> {
 protected:
  EngineDifferentialTest() : runner_(std::get<0>(GetParam())) {}

  void SetUp() override {
    ASSERT_EQ(runner_.Problem(), "")
        << "cannot run the " << ModeName(runner_.Mode()) << " mode here";
  }

  SandboxRunner runner_;
};

TEST_P(EngineDifferentialTest, EveryEngineGivesTheColdResult) {
  const Program p = LoadProgram(std::get<1>(GetParam()));
  ASSERT_EQ(p.problem, "");
  // The engines run at the same time: a warm engine's one-shot run prepares its sandbox first
  // (about 1 s of imports), and the corpus would otherwise take minutes per mode.
  std::vector<BackgroundRun> runs;
  runs.reserve(kEngines.size());
  for (const char* engine : kEngines) runs.push_back(runner_.Start(RunArgs(p, engine)));
  std::vector<Outcome> results;
  for (BackgroundRun& run : runs) results.push_back(run.Wait());

  ASSERT_TRUE(IsRunResult(results[0])) << "program " << p.name << ", engine " << kEngines[0];
  ExpectDirective(p, results[0]);
  for (size_t i = 1; i < kEngines.size(); ++i) {
    ASSERT_TRUE(IsRunResult(results[i])) << "program " << p.name << ", engine " << kEngines[i];
    const std::string differences =
        Differences(p.name, kEngines[i], results[0].json, results[i].json,
                    p.directive.value("documented", json::object()));
    EXPECT_TRUE(differences.empty()) << differences;
  }
}

std::string CorpusParamName(const ::testing::TestParamInfo<CorpusParam>& info) {
  return ModeName(std::get<0>(info.param)) + "_" + std::get<1>(info.param);
}

INSTANTIATE_TEST_SUITE_P(, EngineDifferentialTest,
                         ::testing::Combine(::testing::Values(RunMode::kCaller,
                                                              RunMode::kUnprivileged),
                                            ::testing::ValuesIn(CorpusNames())),
                         CorpusParamName);

TEST(EngineDifferentialCorpusTest, HasEnoughProgramsWithValidDirectives) {
  const std::vector<std::string> names = CorpusNames();
  EXPECT_GE(names.size(), kMinCorpusSize) << "programs in " << CorpusDir();
  const std::regex file_name("[0-9][0-9]_[a-z0-9_]+");
  for (const std::string& name : names) {
    EXPECT_TRUE(std::regex_match(name, file_name)) << name << ".py is not named NN_name.py";
    EXPECT_EQ(LoadProgram(name).problem, "") << name;
  }
}

class EngineDifferentialRandomnessTest : public SandboxTest {};

// The values tests/engine/randomness.py printed, by name; an empty object when it failed (the
// failure is recorded).
json RandomValues(const Outcome& r, const std::string& engine) {
  EXPECT_TRUE(IsRunResult(r)) << "engine " << engine;
  EXPECT_EQ(r.json.value("exit_code", -1), 0) << "engine " << engine << r.Describe();
  const json values = r.ProgramJson();
  EXPECT_TRUE(values.is_object() && values.size() == 6) << "engine " << engine << r.Describe();
  return values.is_object() ? values : json::object();
}

TEST_P(EngineDifferentialRandomnessTest, RandomValuesDifferBetweenRunsOfEveryEngine) {
  std::string code;
  ASSERT_TRUE(ReadWhole(EngineDir() + "/randomness.py", &code)) << EngineDir();
  constexpr int kRunsPerEngine = 2;
  std::vector<BackgroundRun> started;
  for (const char* engine : kEngines) {
    for (int i = 0; i < kRunsPerEngine; ++i) {
      started.push_back(runner_.Start({"--code", code, "--engine", engine, "--timeout", "30"}));
    }
  }
  std::vector<json> values;
  for (size_t i = 0; i < started.size(); ++i) {
    values.push_back(RandomValues(started[i].Wait(), kEngines[i / kRunsPerEngine]));
  }
  // Every value of a run differs from that value in the engine's other run and in cold's runs.
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t engine = i / kRunsPerEngine;
    for (size_t j = 0; j < i; ++j) {
      if (j / kRunsPerEngine != engine && j / kRunsPerEngine != 0) continue;
      for (const auto& [name, value] : values[i].items()) {
        EXPECT_NE(value, values[j].value(name, json()))
            << name << ": run " << i % kRunsPerEngine + 1 << " of engine " << kEngines[engine]
            << " repeats run " << j % kRunsPerEngine + 1 << " of engine "
            << kEngines[j / kRunsPerEngine];
      }
    }
  }
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(EngineDifferentialRandomnessTest);

}  // namespace
}  // namespace mcpexec::testing
