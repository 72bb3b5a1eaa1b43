#include "adversarial_test.h"

#include <unistd.h>

#include "../support/host_files.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;

constexpr gid_t kDefaultRootHostGid = 65532;

std::vector<std::string> ProbeArgs(const std::string& name, const json& params,
                                   const std::vector<std::string>& extra_args) {
  std::string problem;
  std::string code = ProbeSource(name, &problem);
  if (code.empty()) {
    ADD_FAILURE() << problem;
    code = "raise SystemExit('probe " + name + " could not be read')";
  }
  std::vector<std::string> args = {"--code", code, "--stdin", params.dump()};
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

}  // namespace mcpexec::testing
