#include "adversarial_test.h"

#include <unistd.h>

#include <filesystem>
#include <set>

#include "../support/host_files.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;

constexpr gid_t kDefaultRootHostGid = 65532;

const json& Expectations() {
  static const json expectations = [] {
    std::string text;
    const std::string path = std::string(MCPEXEC_ADVERSARIAL_PROBES_DIR) + "/expectations.json";
    if (!ReadWhole(path, &text)) return json::object();
    return json::parse(text, nullptr, false);
  }();
  return expectations;
}

// "FS-01" for a test named FS_01_RuntimeBinaryCannotBeOpenedForWriting/Caller.
std::string CaseOfRunningTest() {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (test == nullptr) return "";
  std::string name = test->name();
  const size_t second = name.find('_', name.find('_') + 1);
  if (second == std::string::npos) return "";
  name.resize(second);
  name[name.find('_')] = '-';
  return name;
}

std::vector<std::string> ProbeArgs(const std::string& name, const json& params,
                                   const std::vector<std::string>& extra_args) {
  std::string problem;
  std::string code = ProbeSource(name, &problem);
  if (code.empty()) {
    ADD_FAILURE() << problem;
    code = "raise SystemExit('probe " + name + " could not be read')";
  }
  const json expected = ProbeExpectation(name);
  EXPECT_EQ(expected.value("case", ""), CaseOfRunningTest())
      << "probes/expectations.json gives " << name << " another catalogue case than this test's";
  json stdin_params = expected.value("params", json::object());
  stdin_params.update(params);
  std::vector<std::string> args = {"--code", code, "--stdin", stdin_params.dump()};
  for (const json& arg : expected.value("args", json::array())) args.push_back(arg);
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  return args;
}

}  // namespace

std::string ProbeSource(const std::string& name, std::string* problem) {
  const std::string dir = MCPEXEC_ADVERSARIAL_PROBES_DIR;
  std::string prelude, probe;
  if (!ReadWhole(dir + "/_prelude.py", &prelude) || !ReadWhole(dir + "/" + name + ".py", &probe)) {
    *problem = "cannot read the probe " + dir + "/" + name + ".py or " + dir + "/_prelude.py";
    return "";
  }
  return prelude + probe;
}

json ProbeExpectation(const std::string& name) {
  const json& all = Expectations();
  if (!all.is_object() || !all.contains("probes") || !all["probes"].contains(name)) {
    ADD_FAILURE() << MCPEXEC_ADVERSARIAL_PROBES_DIR "/expectations.json does not list " << name;
    return json::object();
  }
  return all["probes"][name];
}

Outcome Adversarial::RunProbe(const std::string& name, const json& params,
                              const std::vector<std::string>& extra_args,
                              const LaunchOptions& options) {
  return runner_.Run(ProbeArgs(name, params, extra_args), options);
}

BackgroundRun Adversarial::StartProbe(const std::string& name, const json& params,
                                      const std::vector<std::string>& extra_args,
                                      const LaunchOptions& options) {
  return runner_.Start(ProbeArgs(name, params, extra_args), options);
}

json Adversarial::Contained(const std::string& name, const json& params,
                            const std::vector<std::string>& extra_args,
                            const LaunchOptions& options) {
  EXPECT_EQ(ProbeExpectation(name).value("outcome", "contained"), "contained") << name;
  return ContainedReport(RunProbe(name, params, extra_args, options));
}

json Adversarial::ContainedReport(const Outcome& outcome) {
  EXPECT_TRUE(IsRunResult(outcome));
  EXPECT_EQ(outcome.json.is_object() ? outcome.json.value("exit_code", -1) : -1, 0)
      << outcome.Describe();
  const json report = outcome.ProgramJson();
  if (!report.is_object() || !report.contains("observed") || !report["observed"].is_object()) {
    ADD_FAILURE() << "the probe printed no report:" << outcome.Describe();
    return json::object();
  }
  EXPECT_EQ(report.value("escaped", json(nullptr)), json::array())
      << "attacks that worked, as the program saw them:" << outcome.Describe();
  return report["observed"];
}

gid_t Adversarial::ExpectedHostGid() const {
  const uid_t runs_as = HostSetup::Get().Uid(GetParam());
  return runs_as == 0 ? kDefaultRootHostGid : HostSetup::Get().Gid(GetParam());
}

void ExpectEach(json& observed, std::initializer_list<std::string> keys, const json& expected) {
  for (const std::string& key : keys) {
    EXPECT_EQ(observed[key], expected) << "observed[\"" << key << "\"]";
  }
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(Adversarial);

// The expectations list every probe, and only probes that exist: a probe added to the suite is
// added to tools/security-compare's list with it.
TEST(ProbeExpectations, ListEveryProbeAndNoOther) {
  const json& all = Expectations();
  ASSERT_TRUE(all.is_object() && all.contains("probes")) << "probes/expectations.json is not valid";
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(MCPEXEC_ADVERSARIAL_PROBES_DIR)) {
    const std::string file = entry.path().filename();
    if (file.ends_with(".py") && !file.starts_with("_")) {
      files.insert(file.substr(0, file.size() - 3));
    }
  }
  std::set<std::string> listed;
  for (const auto& [name, expected] : all["probes"].items()) {
    listed.insert(name);
    EXPECT_TRUE(expected.contains("case")) << name;
    const std::string outcome = expected.value("outcome", "contained");
    EXPECT_TRUE(outcome == "contained" || outcome == "killed" || outcome == "timed out" ||
                outcome == "truncated")
        << name << ": " << outcome;
    EXPECT_EQ(outcome == "killed", expected.contains("signal")) << name;
  }
  EXPECT_EQ(listed, files);
}

}  // namespace mcpexec::testing
