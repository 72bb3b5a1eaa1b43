#include "sandbox/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <grp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "../support/temp_dir.h"

namespace mcpexec::sandbox {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::shared_ptr<limits::LimitsBackend> TestLimits() {
  return limits::MakeRlimitBackend(limits::ResourceLimits{});
}

// A directory that looks enough like a rootfs for Compile(): mount points and an interpreter.
class FakeRootfs {
 public:
  FakeRootfs() {
    for (const char* d : {"proc", "dev", "tmp", "usr/bin"}) fs::create_directories(Root() + "/" + d);
    std::ofstream(Root() + "/usr/bin/python3") << "#!/bin/false\n";
    fs::permissions(Root() + "/usr/bin/python3", fs::perms::owner_all);
  }
  std::string Root() const { return dir_.Path(); }

 private:
  testing::TempDir dir_;
};

SandboxSpec SpecFor(const std::string& root) {
  SandboxSpec spec;
  spec.rootfs = root;
  spec.outside_uid = 1000;
  spec.outside_gid = 1000;
  spec.seccomp_profile = kSeccompUnconfined;
  return spec;
}

const MountOp* FindOp(const LaunchPlan& plan, const std::string& what) {
  for (const MountOp& op : plan.MountOps()) {
    if (op.what == what) return &op;
  }
  return nullptr;
}

TEST(Compile, MapsTheSandboxUserToTheHostIds) {
  FakeRootfs rootfs;
  auto plan = Compile(SpecFor(rootfs.Root()), TestLimits());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ((*plan)->UidMap(), "65532 1000 1\n");
  EXPECT_EQ((*plan)->GidMap(), "65532 1000 1\n");
  EXPECT_EQ((*plan)->View().uid, 65532u);
  EXPECT_THAT((*plan)->Describe(), HasSubstr("setgroups deny"));
}

TEST(Compile, RootfsIsBoundReadOnlyNosuidNodevThenPivoted) {
  FakeRootfs rootfs;
  auto plan = Compile(SpecFor(rootfs.Root()), TestLimits());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const MountOp* ro = FindOp(**plan, "make the rootfs read-only, nosuid, nodev");
  ASSERT_NE(ro, nullptr);
  EXPECT_EQ(ro->flags & (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_REMOUNT | MS_BIND),
            MS_RDONLY | MS_NOSUID | MS_NODEV | MS_REMOUNT | MS_BIND);
  const auto& ops = (*plan)->MountOps();
  EXPECT_EQ(ops.front().flags, static_cast<unsigned long>(MS_REC | MS_PRIVATE));
  EXPECT_EQ(ops.back().kind, MountOpKind::kPivotRoot);
  EXPECT_EQ(ops.back().target, fs::canonical(rootfs.Root()).string());
}

TEST(Compile, WorkspaceIsASizedTmpfsOwnedByTheSandboxUser) {
  FakeRootfs rootfs;
  SandboxSpec spec = SpecFor(rootfs.Root());
  spec.workspace_bytes = 12345678;
  auto plan = Compile(spec, TestLimits());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const MountOp* ws = FindOp(**plan, "mount the workspace tmpfs on /tmp");
  ASSERT_NE(ws, nullptr);
  EXPECT_EQ(ws->fstype, "tmpfs");
  EXPECT_THAT(ws->data, HasSubstr("size=12345678"));
  EXPECT_THAT(ws->data, HasSubstr("uid=65532"));
  EXPECT_EQ(ws->flags & (MS_NOSUID | MS_NODEV), static_cast<unsigned long>(MS_NOSUID | MS_NODEV));
}

TEST(Compile, ProcIsFreshWithSensitivePathsMaskedOrReadOnly) {
  FakeRootfs rootfs;
  auto plan = Compile(SpecFor(rootfs.Root()), TestLimits());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const std::string d = (*plan)->Describe();
  EXPECT_THAT(d, HasSubstr("mount a fresh /proc: proc -> "));
  // Docker's MaskedPaths and ReadonlyPaths under /proc (issue 11, finding 9: interrupts).
  for (const char* file : {"interrupts", "kcore", "keys", "latency_stats", "timer_list",
                           "timer_stats", "sched_debug"}) {
    EXPECT_THAT(d, HasSubstr(std::string("mask /proc/") + file + ": /dev/null -> ")) << file;
  }
  for (const char* dir : {"acpi", "asound", "scsi"}) {
    EXPECT_THAT(d, HasSubstr(std::string("mask /proc/") + dir + ": tmpfs -> ")) << dir;
  }
  for (const char* path : {"sys", "sysrq-trigger", "irq", "bus", "fs"}) {
    EXPECT_THAT(d, HasSubstr(std::string("make /proc/") + path + " read-only")) << path;
  }
  for (const char* dev : {"null", "zero", "full", "random", "urandom"}) {
    EXPECT_THAT(d, HasSubstr(std::string("bind the host's /dev/") + dev));
  }
  EXPECT_THAT(d, HasSubstr("make /dev read-only"));
}

// Issue 11, finding 8: RTPRIO, NICE, MEMLOCK, MSGQUEUE and SIGPENDING were the server's.
// Each limit is set, soft and hard, never above this process's hard limit.
TEST(Compile, RlimitsAreSetForTheProgramNotInherited) {
  FakeRootfs rootfs;
  SandboxSpec spec = SpecFor(rootfs.Root());
  spec.workspace_bytes = 1 << 20;
  auto plan = Compile(spec, TestLimits());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  std::map<int, struct rlimit> set;
  const PlanView& view = (*plan)->View();
  for (size_t i = 0; i < view.rlimit_count; ++i) {
    EXPECT_EQ(set.count(view.rlimits[i].resource), 0u) << "set twice: " << view.rlimits[i].resource;
    set[view.rlimits[i].resource] = view.rlimits[i].limit;
  }
  const std::pair<int, rlim_t> wanted[] = {{RLIMIT_CORE, 0},      {RLIMIT_FSIZE, 1 << 20},
                                           {RLIMIT_NOFILE, 1024}, {RLIMIT_RTPRIO, 0},
                                           {RLIMIT_NICE, 0},      {RLIMIT_MEMLOCK, 64 << 10},
                                           {RLIMIT_MSGQUEUE, 0},  {RLIMIT_SIGPENDING, 1024}};
  for (const auto& [resource, value] : wanted) {
    struct rlimit own {};
    ASSERT_EQ(getrlimit(resource, &own), 0);
    const rlim_t expected = std::min(value, own.rlim_max);
    ASSERT_EQ(set.count(resource), 1u) << "resource " << resource << " is inherited";
    EXPECT_EQ(set[resource].rlim_cur, expected) << "resource " << resource;
    EXPECT_EQ(set[resource].rlim_max, expected) << "resource " << resource;
  }
}

TEST(Compile, EnvironmentIsCleanAndFixed) {
  FakeRootfs rootfs;
  auto plan = Compile(SpecFor(rootfs.Root()), TestLimits());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  std::vector<std::string> env;
  for (const char* const* e = (*plan)->View().envp; *e != nullptr; ++e) env.emplace_back(*e);
  EXPECT_THAT(env, ::testing::UnorderedElementsAre(
                       "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8",
                       "MPLBACKEND=Agg", "PYTHONDONTWRITEBYTECODE=1"));
  EXPECT_STREQ((*plan)->View().argv[0], "/usr/bin/python3");
  EXPECT_STREQ((*plan)->View().argv[1], "/tmp/main.py");
  EXPECT_EQ((*plan)->View().argv[2], nullptr);
}

// An environment image's env.txt adds variables to the program's environment, in the plan's
// description too; what mcp-exec sets itself is never replaced.
TEST(Compile, ExtraVariablesAreAddedAndNeverReplaceTheSandboxsOwn) {
  FakeRootfs rootfs;
  SandboxSpec spec = SpecFor(rootfs.Root());
  spec.extra_env = {"OMP_NUM_THREADS=1", "EMPTY="};
  auto plan = Compile(spec, TestLimits());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  std::vector<std::string> env;
  for (const char* const* e = (*plan)->View().envp; *e != nullptr; ++e) env.emplace_back(*e);
  EXPECT_THAT(env, ::testing::IsSupersetOf({"OMP_NUM_THREADS=1", "EMPTY=", "HOME=/tmp"}));
  EXPECT_THAT((*plan)->Describe(), HasSubstr(" OMP_NUM_THREADS=1"));
  const std::pair<const char*, const char*> refused[] = {
      {"PATH=/x", "set by mcp-exec itself"},     {"HOME=/", "set by mcp-exec itself"},
      {"LANG=C", "set by mcp-exec itself"},      {"MPLBACKEND=Agg", "set by mcp-exec itself"},
      {"PYTHONPATH=/x", "set by mcp-exec itself"}, {"MCP_EXEC_X=1", "set by mcp-exec itself"},
      {"NOEQUALS", "is not KEY=VALUE"},          {"=1", "is not KEY=VALUE"},
      {"A B=1", "not letters, digits and _"},    {"A=1\nB=2", "a NUL or a line break"},
  };
  for (const auto& [var, why] : refused) {
    spec.extra_env = {var};
    auto refused_plan = Compile(spec, TestLimits());
    ASSERT_FALSE(refused_plan.ok()) << var;
    EXPECT_THAT(refused_plan.error().message, HasSubstr(why)) << var;
  }
  spec.extra_env = {std::string("A=x\0y", 5)};
  ASSERT_FALSE(Compile(spec, TestLimits()).ok());
}

TEST(Compile, AWarmPlanHasTheColdCommandLineAndAOneLineAgent) {
  FakeRootfs rootfs;
  SandboxSpec spec = SpecFor(rootfs.Root());
  spec.warm = true;
  spec.preload = {"numpy", "matplotlib.pyplot"};
  auto plan = Compile(spec, TestLimits());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const PlanView& view = (*plan)->View();
  EXPECT_TRUE(view.warm);
  EXPECT_STREQ(view.argv[0], "/usr/bin/python3");
  EXPECT_STREQ(view.argv[1], "/tmp/main.py");
  EXPECT_EQ(view.argv[2], nullptr);
  EXPECT_STREQ(view.program_path, "/tmp/main.py");
  const std::string agent(view.agent, view.agent_len);
  EXPECT_EQ(agent.find('\n'), agent.size() - 1) << "one line, so that its frame is line 1";
  EXPECT_TRUE(agent.starts_with("exec(compile(\"")) << agent.substr(0, 40);
  EXPECT_TRUE(agent.ends_with("\"<mcp-exec agent>\", \"exec\")); _agent(5, [\"numpy\", "
                              "\"matplotlib.pyplot\"])\n"))
      << agent.substr(agent.size() - 120);
  auto cold = Compile(SpecFor(rootfs.Root()), TestLimits());
  ASSERT_TRUE(cold.ok());
  EXPECT_FALSE((*cold)->View().warm);
  EXPECT_EQ((*cold)->View().agent_len, 0u);
}

// The rootfs recipe's figure backend, in a fake rootfs: `mode` for the file, or a link to it.
void AddFigureBackend(const std::string& root, fs::perms mode, bool as_symlink = false) {
  const std::string dir = root + "/usr/lib/python3/dist-packages";
  fs::create_directories(dir);
  const std::string file = dir + (as_symlink ? "/real.py" : "/mcp_exec_figures.py");
  std::ofstream(file) << "# backend\n";
  fs::permissions(file, mode);
  if (as_symlink) fs::create_symlink("real.py", dir + "/mcp_exec_figures.py");
}

std::vector<std::string> EnvOf(const LaunchPlan& plan) {
  std::vector<std::string> env;
  for (const char* const* e = plan.View().envp; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

TEST(Compile, FigureBackendInTheRootfsReplacesAggAndGetsTheCap) {
  FakeRootfs rootfs;
  AddFigureBackend(rootfs.Root(), fs::perms(0644));
  SandboxSpec spec = SpecFor(rootfs.Root());
  spec.figure_max_px = 800;
  auto plan = Compile(spec, TestLimits());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE((*plan)->CapturesFigures());
  EXPECT_THAT(EnvOf(**plan), ::testing::UnorderedElementsAre(
                                 "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8",
                                 "MPLBACKEND=module://mcp_exec_figures",
                                 "MCP_EXEC_FIGURE_MAX_PX=800", "PYTHONDONTWRITEBYTECODE=1"));
}

// matplotlib fails to load a backend it cannot import; plain Agg always works.
TEST(Compile, WithoutAUsableFigureBackendTheProgramKeepsAgg) {
  FakeRootfs missing;
  FakeRootfs unreadable;
  AddFigureBackend(unreadable.Root(), fs::perms::owner_read | fs::perms::owner_write);
  FakeRootfs linked;
  AddFigureBackend(linked.Root(), fs::perms(0644), /*as_symlink=*/true);
  for (const FakeRootfs* rootfs : {&missing, &unreadable, &linked}) {
    auto plan = Compile(SpecFor(rootfs->Root()), TestLimits());
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_FALSE((*plan)->CapturesFigures()) << rootfs->Root();
    const std::vector<std::string> env = EnvOf(**plan);
    EXPECT_THAT(env, ::testing::Contains("MPLBACKEND=Agg")) << rootfs->Root();
    EXPECT_THAT(env, ::testing::Not(::testing::Contains(HasSubstr("MCP_EXEC_FIGURE_MAX_PX"))));
  }
}

// As root, with supplementary groups: 0 when Compile refuses `spec` until they are dropped.
int CompileHoldingGroups(const SandboxSpec& spec) {
  const gid_t groups[] = {4, 27};
  if (setgroups(2, groups) != 0) return 10;
  auto refused = Compile(spec, TestLimits());
  if (refused.ok() || refused.error().message.find("supplementary groups") == std::string::npos) {
    return 11;
  }
  if (!DropSupplementaryGroups().ok() || getgroups(0, nullptr) != 0) return 12;
  auto plan = Compile(spec, TestLimits());
  if (!plan.ok() || (*plan)->Describe().find("setgroups deny") == std::string::npos) return 13;
  return 0;
}

// As root, setgroups is denied as it is rootless, so a sandbox keeps the groups it inherits:
// a launcher that holds supplementary groups is refused until it drops them.
TEST(Compile, RootModeDeniesSetgroupsAndNeedsNoSupplementaryGroups) {
  if (geteuid() != 0) GTEST_SKIP() << "holding a supplementary group takes root";
  FakeRootfs rootfs;
  SandboxSpec spec = SpecFor(rootfs.Root());
  spec.privileged_id_mapping = true;
  spec.outside_uid = 65532;
  spec.outside_gid = 65532;
  // In a child process: the groups of the test binary stay as they are.
  EXPECT_EXIT(_exit(CompileHoldingGroups(spec)), ::testing::ExitedWithCode(0), "");
}

TEST(Compile, RefusesHostRoot) {
  FakeRootfs rootfs;
  SandboxSpec spec = SpecFor(rootfs.Root());
  spec.outside_uid = 0;
  auto plan = Compile(spec, TestLimits());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message, HasSubstr("host uid or gid 0"));
}

TEST(Compile, MissingRootfsSaysHowToBuildIt) {
  auto plan = Compile(SpecFor("/nonexistent/rootfs"), TestLimits());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(plan.error().message, HasSubstr("rootfs /nonexistent/rootfs"));
  EXPECT_THAT(plan.error().message, HasSubstr("tools/build-rootfs"));
  EXPECT_THAT(plan.error().message, HasSubstr("MCP_EXEC_ROOTFS"));
}

TEST(Compile, IncompleteRootfsNamesTheMissingDirectory) {
  FakeRootfs rootfs;
  fs::remove(rootfs.Root() + "/tmp");
  auto plan = Compile(SpecFor(rootfs.Root()), TestLimits());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message, HasSubstr("has no /tmp directory"));
}

// A zygote binds the rootfs a second time at /mnt, before anything is mounted below the root,
// and its agent builds each run's root on that bind and pivots into it as a cold init does.
TEST(Compile, AZygoteKeepsACleanRootfsForItsRuns) {
  FakeRootfs rootfs;
  fs::create_directories(rootfs.Root() + "/mnt");
  SandboxSpec spec = SpecFor(rootfs.Root());
  spec.warm = true;
  spec.zygote = true;
  auto plan = Compile(spec, TestLimits());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const auto& ops = (*plan)->MountOps();
  const auto at = [&](const std::string& what) {
    return std::find_if(ops.begin(), ops.end(), [&](const MountOp& op) { return op.what == what; });
  };
  const auto bind = at("bind the rootfs for the zygote's runs");
  ASSERT_NE(bind, ops.end());
  EXPECT_EQ(bind->target, fs::canonical(rootfs.Root()).string() + "/mnt");
  EXPECT_LT(bind, at("mount a fresh /proc")) << "the bind has nothing mounted below it";
  const auto& run = (*plan)->ZygoteRunMountOps();
  const auto run_at = [&](const std::string& target) {
    return std::find_if(run.begin(), run.end(),
                        [&](const MountOp& op) { return op.target == target; });
  };
  ASSERT_NE(run_at("/mnt/proc"), run.end()) << "each run mounts its /proc there";
  EXPECT_EQ(run_at("/mnt/proc")->fstype, "proc");
  ASSERT_FALSE(run.empty());
  EXPECT_EQ(run.back().kind, MountOpKind::kPivotRoot) << "each run pivots into its root";
  EXPECT_EQ(run.back().target, "/mnt");
  EXPECT_NE((*plan)->View().zygote_module, nullptr) << "the zygote's init hands it the extension";
  // The zygote's user namespace maps the host ids to themselves, and it runs as them; its runs'
  // workspaces are the sandbox user's, in their own namespaces.
  EXPECT_EQ((*plan)->UidMap(), "1000 1000 1\n");
  EXPECT_EQ((*plan)->GidMap(), "1000 1000 1\n");
  EXPECT_EQ((*plan)->View().uid, 1000u);
  const auto workspace = std::find_if(run.begin(), run.end(), [](const MountOp& op) {
    return op.fstype == "tmpfs" && op.target == "/mnt/tmp";
  });
  ASSERT_NE(workspace, run.end());
  EXPECT_THAT(workspace->data, HasSubstr("uid=65532,gid=65532"));

  fs::remove(rootfs.Root() + "/mnt");
  auto without = Compile(spec, TestLimits());
  ASSERT_FALSE(without.ok());
  EXPECT_THAT(without.error().message, HasSubstr("has no /mnt directory"));
  EXPECT_THAT(without.error().message, HasSubstr("MCP_EXEC_ENGINE=pool"));
}

TEST(Compile, InterpreterMustExistInTheRootfs) {
  FakeRootfs rootfs;
  SandboxSpec spec = SpecFor(rootfs.Root());
  spec.python = "python9";
  auto plan = Compile(spec, TestLimits());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message, HasSubstr("interpreter 'python9'"));
  EXPECT_THAT(plan.error().fixes, ::testing::Contains(HasSubstr("MCP_EXEC_PYTHON")));
  spec.python = "bin/python3";
  EXPECT_FALSE(Compile(spec, TestLimits()).ok());
  spec.python = "/usr/bin/python3";
  EXPECT_TRUE(Compile(spec, TestLimits()).ok());
}

}  // namespace
}  // namespace mcpexec::sandbox

namespace mcpexec::sandbox {
namespace {

TEST(Compile, HomeSkeletonIsCopiedIntoTheWorkspace) {
  FakeRootfs rootfs;
  const std::string skel = rootfs.Root() + "/usr/share/mcp-exec/home";
  fs::create_directories(skel + "/.cache/matplotlib");
  std::ofstream(skel + "/.cache/matplotlib/fontlist.json") << "{}";
  auto plan = Compile(SpecFor(rootfs.Root()), TestLimits());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const std::string root = fs::canonical(rootfs.Root()).string();
  const MountOp* copy = FindOp(**plan, "copy /usr/share/mcp-exec/home/.cache/matplotlib/fontlist.json into HOME");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->kind, MountOpKind::kCopyFile);
  EXPECT_EQ(copy->target, root + "/tmp/.cache/matplotlib/fontlist.json");
  const MountOp* dir = FindOp(**plan, "copy /usr/share/mcp-exec/home/.cache into HOME");
  ASSERT_NE(dir, nullptr);
  EXPECT_EQ(dir->kind, MountOpKind::kMkdir);
  // Directories come before what they hold, and everything before pivot_root.
  EXPECT_LT(dir, copy);
  EXPECT_EQ((*plan)->MountOps().back().kind, MountOpKind::kPivotRoot);
}

TEST(Compile, OversizedHomeSkeletonIsRefused) {
  FakeRootfs rootfs;
  const std::string skel = rootfs.Root() + "/usr/share/mcp-exec/home";
  fs::create_directories(skel);
  for (int i = 0; i < 70; ++i) std::ofstream(skel + "/f" + std::to_string(i)) << "x";
  auto plan = Compile(SpecFor(rootfs.Root()), TestLimits());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message, HasSubstr("too large to copy into every workspace"));
}

}  // namespace
}  // namespace mcpexec::sandbox
