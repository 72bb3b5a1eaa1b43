// Who the program is (DESIGN.md section 3, invariants 1 to 3 and 5): new namespaces, a uid
// that is not root inside or outside, no way to lower oom_score_adj, no execution from the
// writable mounts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../support/host_processes.h"
#include "adversarial_test.h"
#include "host_fixtures.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;

TEST_P(Adversarial, ADV_01_AllSevenNamespacesAreNew) {
  const auto host = HostNamespaces();
  json o = Contained("adv01_namespaces", {{"host", host}});
  // The time namespace is the one thing shared besides the rootfs (DESIGN.md, invariant 1).
  EXPECT_EQ(o["shared with the host"], json({"time"}));
}

// The program's uid, as the host sees it, is the unprivileged one of this mode, never 0.
TEST_P(Adversarial, ADV_02_RootIsUnreachable) {
  const std::string marker = NewMarker("uid");
  BackgroundRun run = StartProbe("adv02_setuid_root", {{"marker", marker}});
  const std::vector<HostProcess> seen = WaitForProcesses(marker, 1, std::chrono::seconds(3));
  json o = ContainedReport(run.Wait());
  ASSERT_EQ(seen.size(), 1u) << "the marked process never appeared on the host";
  EXPECT_EQ(seen[0].uid, runner_.ExpectedHostUid());
  EXPECT_NE(seen[0].uid, 0u);
  const std::string host_uid = std::to_string(runner_.ExpectedHostUid());
  const std::string host_gid = std::to_string(ExpectedHostGid());
  // A zygote's run too: its user namespace is nested in the zygote's, which maps the host ids
  // to themselves, so the run's map reads as a cold run's.
  EXPECT_EQ(o["uid_map"], json({"65532", host_uid, "1"}));
  EXPECT_EQ(o["gid_map"], json({"65532", host_gid, "1"}));
  // Ids that the user namespace does not map do not exist: EINVAL, before any privilege check.
  ExpectEach(o, {"setuid(0)", "setresuid(0, 0, 0)", "setgid(0)", "seteuid(65534)"}, "EINVAL");
  ExpectEach(o, {"setgroups([0])", "write /proc/self/uid_map"}, "EPERM");
  EXPECT_EQ(o["ids"], json({65532, 65532, 65532, 65532, json::array()}));
}

TEST_P(Adversarial, ADV_15_OomScoreAdjCannotBeLowered) {
  json o = Contained("adv15_oom_score_adj");
  // Lowering needs CAP_SYS_RESOURCE; raising is every process's right.
  ExpectEach(o, {"oom_score_adj -1000", "oom_score_adj -1", "oom_adj -17"}, "EACCES");
  EXPECT_EQ(o["oom_score_adj 500"], json("ok"));
  EXPECT_EQ(o["final"], json("500"));
}

// A memfd is not on any mount, so noexec cannot apply to it; the process it becomes keeps every
// restriction, and the program could run native code through ctypes anyway.
TEST_P(Adversarial, ADV_16_DroppedBinariesCannotRunFromWritableMounts) {
  json o = Contained("adv16_dropped_binary");
  ExpectEach(o, {"execve /tmp/dropped", "execve /dev/shm/dropped"}, "EACCES");
  ExpectEach(o, {"mmap PROT_EXEC /tmp/dropped", "mmap PROT_EXEC /dev/shm/dropped"}, "EPERM");
  EXPECT_EQ(o["execve memfd"], json("ok"));
  EXPECT_EQ(o["memfd process"], json({{"CapEff", "0000000000000000"},
                                      {"CapBnd", "0000000000000000"},
                                      {"NoNewPrivs", "1"},
                                      {"Seccomp", "2"}}));
}

TEST_P(Adversarial, ADV_17_DevShmIsSizeCapped) {
  json o = Contained("adv17_dev_shm_size");
  EXPECT_EQ(o["size"], 64 << 20);
  EXPECT_EQ(o["write"], json("ENOSPC"));
  EXPECT_LE(o.value("written", -1L), 64 << 20);
  EXPECT_GE(o.value("written", -1L), 60 << 20);
}

}  // namespace
}  // namespace mcpexec::testing
