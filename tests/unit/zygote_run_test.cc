// The blob that tells a zygote's runs what to set up (PackZygoteRun, RelocateZygoteRun): what the
// supervisor packs is what the extension reads, and a blob that is not well formed is refused
// rather than followed out of its bounds.
#include <linux/sched.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "sandbox/child/zygote_run.h"
#include "sandbox/warm_agent.h"
#include "sandbox/zygote_extension.h"

namespace mcpexec::sandbox {
namespace {

ZygoteRunSetup ASetup() {
  ZygoteRunSetup setup;
  setup.mounts.push_back(MountOp{MountOpKind::kMount, false, "proc", "/mnt/proc", "proc",
                                 "", MS_NOSUID | MS_NODEV, 0, "mount /proc"});
  setup.mounts.push_back(
      MountOp{MountOpKind::kMkdir, true, "", "/mnt/tmp/outputs", "", "", 0, 0755, "outputs"});
  setup.mounts.push_back(
      MountOp{MountOpKind::kPivotRoot, false, "", "/mnt", "", "", 0, 0, "pivot_root"});
  setup.uid_map = "65532 1000 1\n";
  setup.gid_map = "65532 1000 1\n";
  setup.hostname = "sandbox";
  setup.workdir = "/tmp";
  setup.init_name = "a-supervisor-name-longer-than-15";
  setup.last_cap = 40;
  setup.rlimits = {RlimitView{RLIMIT_NOFILE, {256, 256}}, RlimitView{RLIMIT_CORE, {0, 0}}};
  setup.seccomp = {sock_filter{0x20, 0, 0, 4}, sock_filter{0x06, 0, 0, 0x7fff0000}};
  return setup;
}

// The blob in storage of its own, aligned as the extension's copy is.
struct Copy {
  explicit Copy(const std::string& blob)
      : bytes(static_cast<unsigned char*>(std::aligned_alloc(16, (blob.size() + 16) / 16 * 16)),
              &std::free),
        size(blob.size()) {
    std::memcpy(bytes.get(), blob.data(), blob.size());
  }
  ZygoteRunView* Relocate() { return RelocateZygoteRun(bytes.get(), size); }
  ZygoteRunBlob& Header() { return *reinterpret_cast<ZygoteRunBlob*>(bytes.get()); }

  std::unique_ptr<unsigned char, decltype(&std::free)> bytes{nullptr, &std::free};
  size_t size;
};

TEST(ZygoteRun, WhatIsPackedIsWhatTheRunReads) {
  Copy copy(PackZygoteRun(ASetup()));
  const ZygoteRunView* run = copy.Relocate();
  ASSERT_NE(run, nullptr);
  ASSERT_EQ(run->plan.mount_op_count, 3u);
  const MountOpView& proc = run->plan.mount_ops[0];
  EXPECT_EQ(proc.kind, MountOpKind::kMount);
  EXPECT_STREQ(proc.source, "proc");
  EXPECT_STREQ(proc.target, "/mnt/proc");
  EXPECT_STREQ(proc.fstype, "proc");
  EXPECT_EQ(proc.data, nullptr);  // empty: no data, as in a cold plan's view
  EXPECT_EQ(proc.flags, static_cast<unsigned long>(MS_NOSUID | MS_NODEV));
  const MountOpView& outputs = run->plan.mount_ops[1];
  EXPECT_TRUE(outputs.optional);
  EXPECT_EQ(outputs.source, nullptr);
  EXPECT_EQ(outputs.mode, 0755u);
  EXPECT_EQ(run->plan.mount_ops[2].kind, MountOpKind::kPivotRoot);
  EXPECT_STREQ(run->plan.hostname, "sandbox");
  EXPECT_EQ(run->plan.hostname_len, 7u);
  EXPECT_STREQ(run->plan.workdir, "/tmp");
  EXPECT_EQ(run->plan.last_cap, 40);
  ASSERT_EQ(run->plan.rlimit_count, 2u);
  EXPECT_EQ(run->plan.rlimits[0].resource, RLIMIT_NOFILE);
  EXPECT_EQ(run->plan.rlimits[0].limit.rlim_max, 256u);
  ASSERT_NE(run->plan.seccomp, nullptr);
  ASSERT_EQ(run->plan.seccomp->len, 2u);
  EXPECT_EQ(run->plan.seccomp->filter[1].k, 0x7fff0000u);
  EXPECT_STREQ(run->uid_map, "65532 1000 1\n");
  EXPECT_STREQ(run->gid_map, "65532 1000 1\n");
  EXPECT_STREQ(run->init_name, "a-supervisor-na");  // /proc/PID/comm holds 15 bytes
  EXPECT_EQ(run->namespaces, static_cast<uint64_t>(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID |
                                                   CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                                                   CLONE_NEWCGROUP));
  EXPECT_EQ(run->plan.supervisor_args, nullptr);  // the extension's to fill in
}

TEST(ZygoteRun, WithoutAFilterTheRunLoadsNone) {
  ZygoteRunSetup setup = ASetup();
  setup.seccomp.clear();
  Copy copy(PackZygoteRun(setup));
  const ZygoteRunView* run = copy.Relocate();
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->plan.seccomp, nullptr);
}

ZygoteRunSetup WithLayers() {
  ZygoteRunSetup setup = ASetup();
  setup.layers_dir = "/usr/lib/mcp-exec/packages";
  setup.layer_target = "/mnt/usr/lib/mcp-exec/packages";
  setup.layer_at = 1;
  setup.layer_remount_flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV;
  return setup;
}

TEST(ZygoteRun, WhereTheLayersAreAndWhereARunsGoesArePacked) {
  Copy copy(PackZygoteRun(WithLayers()));
  const ZygoteRunView* run = copy.Relocate();
  ASSERT_NE(run, nullptr);
  EXPECT_STREQ(run->layers_dir, "/usr/lib/mcp-exec/packages");
  EXPECT_STREQ(run->layer_target, "/mnt/usr/lib/mcp-exec/packages");
  EXPECT_EQ(run->layer_at, 1u);
  EXPECT_EQ(run->layer_remount_flags,
            static_cast<uint64_t>(MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV));
}

TEST(ZygoteRun, AZygoteWithoutLayersTellsItsRunsSo) {
  Copy copy(PackZygoteRun(ASetup()));
  const ZygoteRunView* run = copy.Relocate();
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->layers_dir, nullptr);
  EXPECT_EQ(run->layer_target, nullptr);
}

TEST(ZygoteRun, ALayerPlacedOutsideTheStepsIsRefused) {
  ZygoteRunSetup setup = WithLayers();
  setup.layer_at = setup.mounts.size() + 1;
  Copy copy(PackZygoteRun(setup));
  EXPECT_EQ(copy.Relocate(), nullptr);
  ZygoteRunSetup untargeted = WithLayers();
  untargeted.layer_target.clear();
  Copy without_target(PackZygoteRun(untargeted));
  EXPECT_EQ(without_target.Relocate(), nullptr);
}

TEST(ZygoteRun, ABlobCutShortIsRefused) {
  const std::string blob = PackZygoteRun(ASetup());
  for (const size_t size : {size_t{0}, sizeof(ZygoteRunBlob) - 1, blob.size() - 1}) {
    Copy copy(blob.substr(0, size));
    EXPECT_EQ(copy.Relocate(), nullptr) << size;
  }
}

TEST(ZygoteRun, AnotherMagicIsRefused) {
  Copy copy(PackZygoteRun(ASetup()));
  copy.Header().magic[7] = '0';
  EXPECT_EQ(copy.Relocate(), nullptr);
}

TEST(ZygoteRun, AnOffsetOutsideTheBlobIsRefused) {
  Copy copy(PackZygoteRun(ASetup()));
  copy.Header().view.plan.mount_op_count = 1000;
  EXPECT_EQ(copy.Relocate(), nullptr);
  Copy hostname(PackZygoteRun(ASetup()));
  hostname.Header().view.plan.hostname = reinterpret_cast<const char*>(hostname.size + 8);
  EXPECT_EQ(hostname.Relocate(), nullptr);
}

TEST(ZygoteRun, AStringThatDoesNotEndInTheBlobIsRefused) {
  // init_name is the last object packed: its NUL is the blob's last byte.
  Copy copy(PackZygoteRun(ASetup()));
  ASSERT_EQ(copy.bytes.get()[copy.size - 1], '\0');
  copy.bytes.get()[copy.size - 1] = 'x';
  EXPECT_EQ(copy.Relocate(), nullptr);
}

TEST(ZygoteRun, APointerARunDoesNotUseIsRefused) {
  Copy copy(PackZygoteRun(ASetup()));
  copy.Header().view.plan.exec_path = reinterpret_cast<const char*>(sizeof(ZygoteRunBlob));
  EXPECT_EQ(copy.Relocate(), nullptr);
}

TEST(ZygoteRun, TheAgentSetsRunsUpWithTheCompiledStepsOnly) {
  const std::string agent = ZygoteAgentSource({"json"}, ASetup());
  EXPECT_EQ(agent.find("ctypes"), std::string::npos);
  EXPECT_NE(agent.find("mcp_exec_zygote"), std::string::npos);
}

TEST(ZygoteRun, TheExtensionIsEmbedded) {
  ASSERT_GT(kZygoteExtensionSize, 4u);
  EXPECT_EQ(std::memcmp(kZygoteExtension, "\x7f" "ELF", 4), 0);
}

}  // namespace
}  // namespace mcpexec::sandbox
