// Two runs at the same time are two separate sandboxes: neither sees the other's workspace or
// processes.
#include <gtest/gtest.h>

#include <string>

#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;

// Writes its own marker file, looks around while the other run is alive, stays alive while
// the other looks. The timestamps prove the overlap.
constexpr const char* kLookAround = R"py(
import json, os, time
start = time.time()
open("/tmp/@NAME@.marker", "w").write("@NAME@")
time.sleep(0.8)
look = time.time()
files = workspace_tree()
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
time.sleep(0.8)
print(json.dumps({"start": start, "look": look, "end": time.time(), "files": files,
                  "pids": pids}))
)py";

class ConcurrencyTest : public SandboxTest {};

TEST_P(ConcurrencyTest, ConcurrentRunsDoNotSeeEachOther) {
  const std::string program = std::string(kPythonWorkspaceTree) + kLookAround;
  BackgroundRun a = runner_.StartCode(ReplaceAll(program, "@NAME@", "run-a"));
  BackgroundRun b = runner_.StartCode(ReplaceAll(program, "@NAME@", "run-b"));
  const Outcome ra = a.Wait();
  const Outcome rb = b.Wait();
  ASSERT_TRUE(IsRunResult(ra));
  ASSERT_TRUE(IsRunResult(rb));
  const json ja = ra.ProgramJson();
  const json jb = rb.ProgramJson();
  ASSERT_TRUE(ja.is_object()) << ra.Describe();
  ASSERT_TRUE(jb.is_object()) << rb.Describe();

  // Each looked while the other was alive.
  EXPECT_LT(ja["start"].get<double>(), jb["look"].get<double>());
  EXPECT_LT(jb["look"].get<double>(), ja["end"].get<double>());
  EXPECT_LT(jb["start"].get<double>(), ja["look"].get<double>());
  EXPECT_LT(ja["look"].get<double>(), jb["end"].get<double>());

  EXPECT_EQ(ja["files"], json(FreshWorkspaceTree({"run-a.marker"})));
  EXPECT_EQ(jb["files"], json(FreshWorkspaceTree({"run-b.marker"})));
  EXPECT_EQ(ja["pids"], json({1, 2}));
  EXPECT_EQ(jb["pids"], json({1, 2}));
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(ConcurrencyTest);

}  // namespace
}  // namespace mcpexec::testing
