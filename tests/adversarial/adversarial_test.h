// Adversarial: the fixture of the adversarial suite. Each case runs one hostile program from
// probes/ (with probes/_prelude.py in front) through `mcp-exec run`, in both modes (as the
// caller and as an unprivileged user, see tests/support/sandbox_runner.h), and checks what it
// observed: the errno that stopped each attack, so that a case fails when the mechanism changes
// and not only when an attack succeeds. tools/security-compare runs the same probes under
// bubblewrap.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../support/sandbox_test.h"

namespace mcpexec::testing {

// The program a probe runs: probes/_prelude.py then probes/<name>.py, from the directory compiled
// in as MCPEXEC_ADVERSARIAL_PROBES_DIR. Empty, with `*problem` saying why, when a file cannot be
// read.
std::string ProbeSource(const std::string& name, std::string* problem);

// What probes/expectations.json, which tools/security-compare reads too, says of probe `name`:
// its catalogue "case", its "outcome" ("contained" when absent), the fixed "params" and "args" of
// its runs, and the "host" set-up it needs. An empty object, with a recorded failure, for a probe
// the file does not list.
nlohmann::json ProbeExpectation(const std::string& name);

class Adversarial : public SandboxTest {
 protected:
  // Runs probe `name` with its expected params (ProbeExpectation), updated with `params`, as its
  // stdin (--stdin), and its expected args then `extra_args` after it. Records a failure when the
  // expectations give the probe another catalogue case than the running test's name (FS_01_...).
  Outcome RunProbe(const std::string& name, const nlohmann::json& params = nlohmann::json::object(),
                   const std::vector<std::string>& extra_args = {},
                   const LaunchOptions& options = {});
  BackgroundRun StartProbe(const std::string& name,
                           const nlohmann::json& params = nlohmann::json::object(),
                           const std::vector<std::string>& extra_args = {},
                           const LaunchOptions& options = {});

  // RunProbe, then checks that the probe is expected to be contained and that the run was a
  // normal one that exited 0 with a report whose "escaped" list is empty. Returns the report's
  // "observed" object (an empty object when there is no report; the failure is recorded).
  nlohmann::json Contained(const std::string& name,
                           const nlohmann::json& params = nlohmann::json::object(),
                           const std::vector<std::string>& extra_args = {},
                           const LaunchOptions& options = {});
  // The same checks on an outcome the test already has.
  nlohmann::json ContainedReport(const Outcome& outcome);

  // The host gid the sandbox's gid maps to in this mode (see SandboxRunner::ExpectedHostUid).
  gid_t ExpectedHostGid() const;
};

// Expects observed[key] == expected for each key, naming the key on failure.
void ExpectEach(nlohmann::json& observed, std::initializer_list<std::string> keys,
                const nlohmann::json& expected);

}  // namespace mcpexec::testing
