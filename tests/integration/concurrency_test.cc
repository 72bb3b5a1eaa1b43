// Two runs at the same time are two separate sandboxes: neither sees the other's workspace or
// processes.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "../support/host_processes.h"
#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;

// Writes its own marker file, then waits twice for the host: before it looks around, and
// before it ends. It waits by starting a child that carries a marker (which the host finds in
// /proc) and waiting for it: the host kills both runs' children only once both have started one,
// so each run looks around while the other is alive, without any timing.
constexpr const char* kLookAround = R"py(
import json, os, subprocess, sys
def wait_for_host(marker):
    subprocess.run([sys.executable, "-c", "import time; time.sleep(60)", marker])
open("/tmp/@NAME@.marker", "w").write("@NAME@")
wait_for_host("@READY@")
files = workspace_tree()
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
wait_for_host("@LOOKED@")
print(json.dumps({"files": files, "pids": pids}))
)py";

class ConcurrencyTest : public SandboxTest {};

// Waits until both runs' children carry `marker`, then kills them, which lets both runs go on.
void ReleaseBoth(const std::string& marker) {
  const std::vector<HostProcess> waiting = WaitForProcesses(marker, 2, std::chrono::seconds(30));
  ASSERT_EQ(waiting.size(), 2u) << "both runs should wait at " << marker;
  KillAll(waiting);
}

TEST_P(ConcurrencyTest, ConcurrentRunsDoNotSeeEachOther) {
  const std::string ready = NewMarker("concurrency-ready");
  const std::string looked = NewMarker("concurrency-looked");
  const std::string program = ReplaceAll(
      ReplaceAll(std::string(kPythonWorkspaceTree) + kLookAround, "@READY@", ready), "@LOOKED@",
      looked);
  BackgroundRun a = runner_.StartCode(ReplaceAll(program, "@NAME@", "run-a"));
  BackgroundRun b = runner_.StartCode(ReplaceAll(program, "@NAME@", "run-b"));
  ReleaseBoth(ready);
  ReleaseBoth(looked);
  const Outcome ra = a.Wait();
  const Outcome rb = b.Wait();
  ASSERT_TRUE(IsRunResult(ra));
  ASSERT_TRUE(IsRunResult(rb));
  const json ja = ra.ProgramJson();
  const json jb = rb.ProgramJson();
  ASSERT_TRUE(ja.is_object()) << ra.Describe();
  ASSERT_TRUE(jb.is_object()) << rb.Describe();

  EXPECT_EQ(ja["files"], json(FreshWorkspaceTree({"run-a.marker"})));
  EXPECT_EQ(jb["files"], json(FreshWorkspaceTree({"run-b.marker"})));
  EXPECT_EQ(ja["pids"], json({1, 2}));
  EXPECT_EQ(jb["pids"], json({1, 2}));
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(ConcurrencyTest);

}  // namespace
}  // namespace mcpexec::testing
