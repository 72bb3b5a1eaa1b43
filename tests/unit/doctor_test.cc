#include <errno.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/doctor_checks.h"
#include "cli/doctor_command.h"
#include "limits/limits.h"

namespace mcpexec::cli::doctor {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The shape of limits::OpenBackend's error when no backend is usable (src/limits/limits.cc).
Error NoBackendError() {
  return MakeError(ErrorCode::kUnavailable,
                   "no cgroup backend is usable, and mcp-exec does not run code without its "
                   "memory, pids and cpu limits:\n"
                   "  - cgroup v2: the memory, pids, cpu controller(s) are not available\n"
                   "  - cgroup v1: cgroup v1 hierarchies cannot be delegated safely")
      .WithFixes({"run mcp-exec in a cgroup v2 scope delegated to it:\n"
                  "  systemd-run --user --scope -p Delegate=yes mcp-exec serve ...",
                  "install the unit packaging/systemd/mcp-exec.service",
                  "or accept degraded limits: MCP_EXEC_LIMITS=rlimit (no memory limit)"});
}

// A cgroup backend as OpenBackend returns one, without touching cgroups.
class FakeCgroupBackend final : public limits::LimitsBackend {
 public:
  explicit FakeCgroupBackend(const limits::ResourceLimits& l) : LimitsBackend(l) {}
  limits::Backend Kind() const override { return limits::Backend::kCgroup2; }
  Result<std::unique_ptr<limits::RunCgroup>> CreateRun() override {
    return std::unique_ptr<limits::RunCgroup>();
  }
  std::string Location() const override { return "/sys/fs/cgroup/user.slice/mcp"; }
};

sandbox::UsernsFacts Facts(std::optional<long> max, std::optional<long> clone,
                           std::optional<long> apparmor, bool root = false) {
  sandbox::UsernsFacts f;
  f.max_user_namespaces = max;
  f.unprivileged_userns_clone = clone;
  f.apparmor_restrict = apparmor;
  f.root = root;
  return f;
}

UsernsProbe Failed(UsernsProbe::Step step, int err) {
  UsernsProbe p;
  p.failed = step;
  p.err = err;
  return p;
}

// --------------------------------------------------------------------------- Render, exit

TEST(DoctorRender, OkLineIsOneLine) {
  Check c{"seccomp", Status::kOk, "fine", {}};
  EXPECT_EQ(Render(c), "OK   seccomp: fine\n");
}

TEST(DoctorRender, FailLinesIndentDetailAndFixes) {
  Check c{"rootfs", Status::kFail, "missing\n  more", {"build it", "or this:\n  cmd --x"}};
  EXPECT_EQ(Render(c),
            "FAIL rootfs: missing\n"
            "       more\n"
            "     fix: build it\n"
            "     fix: or this:\n"
            "            cmd --x\n");
}

TEST(DoctorRender, WarnLabelIsAlignedWithTheOthers) {
  EXPECT_THAT(Render(Check{"x", Status::kWarn, "weaker", {}}), StartsWith("WARN x: "));
}

TEST(DoctorExitStatus, OnlyFailFails) {
  EXPECT_EQ(ExitStatus({}), 0);
  EXPECT_EQ(ExitStatus({Check{"a", Status::kOk, "", {}}, Check{"b", Status::kWarn, "", {}}}), 0);
  EXPECT_EQ(ExitStatus({Check{"a", Status::kOk, "", {}}, Check{"b", Status::kFail, "", {}}}), 1);
}

// ------------------------------------------------------------------------- user namespaces

TEST(DoctorUserns, ProbeThatWorksIsOkAndListsTheSysctls) {
  Check c = UsernsCheck(Facts(15000, 1, std::nullopt), UsernsProbe{});
  EXPECT_EQ(c.status, Status::kOk);
  EXPECT_EQ(c.name, "user namespaces");
  EXPECT_THAT(c.detail, HasSubstr("user.max_user_namespaces=15000"));
  EXPECT_THAT(c.detail, HasSubstr("kernel.unprivileged_userns_clone=1"));
  EXPECT_TRUE(c.fixes.empty());
}

TEST(DoctorUserns, MaxUserNamespacesZeroFailsWithTheSysctlFix) {
  Check c = UsernsCheck(Facts(0, std::nullopt, std::nullopt),
                        Failed(UsernsProbe::Step::kUnshare, ENOSPC));
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_THAT(c.detail, HasSubstr("unshare(CLONE_NEWUSER"));
  EXPECT_THAT(c.detail, HasSubstr("ENOSPC"));
  EXPECT_THAT(c.detail, HasSubstr("user.max_user_namespaces is 0"));
  ASSERT_EQ(c.fixes.size(), 1u);
  EXPECT_THAT(c.fixes[0], StartsWith("sysctl -w user.max_user_namespaces="));
}

TEST(DoctorUserns, DebianSysctlFailsWithItsFix) {
  Check c = UsernsCheck(Facts(15000, 0, std::nullopt), Failed(UsernsProbe::Step::kUnshare, EPERM));
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_THAT(c.detail, HasSubstr("EPERM"));
  EXPECT_THAT(c.detail, HasSubstr("kernel.unprivileged_userns_clone=0"));
  ASSERT_EQ(c.fixes.size(), 1u);
  EXPECT_THAT(c.fixes[0], HasSubstr("sysctl -w kernel.unprivileged_userns_clone=1"));
}

TEST(DoctorUserns, UbuntuAppArmorRestrictionFailsAtTheMountWithProfileOrSysctlFix) {
  Check c = UsernsCheck(Facts(15000, std::nullopt, 1), Failed(UsernsProbe::Step::kMount, EPERM));
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_THAT(c.detail, HasSubstr("mount inside it failed with EPERM"));
  EXPECT_THAT(c.detail, HasSubstr("AppArmor restricts unprivileged user namespaces"));
  EXPECT_THAT(c.fixes, ElementsAre(HasSubstr("AppArmor profile"),
                                   HasSubstr("sysctl -w kernel.apparmor_restrict_unprivileged_"
                                             "userns=0")));
}

TEST(DoctorUserns, HiddenProcFailsNamingTheMountsAndTheSystemdOptions) {
  UsernsProbe p = Failed(UsernsProbe::Step::kProcMount, EPERM);
  p.proc_overmounts = {"/proc/sys", "/proc/kmsg"};
  Check c = UsernsCheck(Facts(15000, 1, std::nullopt), p);
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_THAT(c.detail, HasSubstr("a fresh /proc cannot be mounted"));
  EXPECT_THAT(c.detail, HasSubstr("mounts cover /proc/sys, /proc/kmsg"));
  ASSERT_EQ(c.fixes.size(), 2u);
  EXPECT_THAT(c.fixes[0], HasSubstr("ProtectKernelTunables="));
  EXPECT_THAT(c.fixes[1], HasSubstr("systempaths=unconfined"));
}

TEST(DoctorUserns, ProcMountFailureWithoutOvermountsFallsBackToTheUsernsHint) {
  Check c =
      UsernsCheck(Facts(15000, std::nullopt, 1), Failed(UsernsProbe::Step::kProcMount, EPERM));
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_THAT(c.fixes, ElementsAre(HasSubstr("AppArmor profile"), HasSubstr("sysctl -w")));
}

TEST(DoctorUserns, AppArmorRestrictionThatDoesNotApplyIsOkWithANote) {
  Check c = UsernsCheck(Facts(15000, std::nullopt, 1), UsernsProbe{});
  EXPECT_EQ(c.status, Status::kOk);
  EXPECT_THAT(c.detail, HasSubstr("but not for this process"));
}

TEST(DoctorUserns, UnexplainedFailureGivesTheContainerHintAsTheFix) {
  Check c = UsernsCheck(Facts(15000, 1, std::nullopt), Failed(UsernsProbe::Step::kUnshare, EPERM));
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_THAT(c.detail, HasSubstr("a container runtime's seccomp or AppArmor profile"));
  ASSERT_EQ(c.fixes.size(), 1u);
  EXPECT_THAT(c.fixes[0], HasSubstr("seccomp=unconfined"));
}

TEST(DoctorUserns, FixesAreTheOnesASandboxStartGives) {
  // One source for the fixes: what doctor lists is what a failed start carries.
  const sandbox::UsernsFacts facts = Facts(15000, std::nullopt, 1);
  Check c = UsernsCheck(facts, Failed(UsernsProbe::Step::kUnshare, EPERM));
  EXPECT_EQ(c.fixes, sandbox::CloneError(EPERM, facts).fixes);
  UsernsProbe hidden = Failed(UsernsProbe::Step::kProcMount, EPERM);
  hidden.proc_overmounts = {"/proc/sys"};
  EXPECT_EQ(UsernsCheck(facts, hidden).fixes, sandbox::HiddenProcFixes());
}

TEST(DoctorUserns, RootIsNotSubjectToTheUnprivilegedSysctls) {
  Check c =
      UsernsCheck(Facts(15000, 0, std::nullopt, true), Failed(UsernsProbe::Step::kUnshare, EPERM));
  ASSERT_EQ(c.fixes.size(), 1u);
  EXPECT_THAT(c.fixes[0], Not(HasSubstr("unprivileged_userns_clone=1")));
}

// ---------------------------------------------------------------------------------- limits

TEST(DoctorLimits, CgroupBackendIsOkWithItsLimits) {
  limits::ResourceLimits l;
  l.memory_max = 512ull << 20;
  l.pids_max = 64;
  l.cpus = 0.5;
  Result<std::shared_ptr<limits::LimitsBackend>> backend =
      std::shared_ptr<limits::LimitsBackend>(std::make_shared<FakeCgroupBackend>(l));
  Check c = LimitsCheck(backend);
  EXPECT_EQ(c.status, Status::kOk);
  EXPECT_EQ(c.detail,
            "cgroup2 at /sys/fs/cgroup/user.slice/mcp: memory 512 MiB (no swap), pids 64, "
            "cpus 0.5 per run");
}

TEST(DoctorLimits, RlimitBackendWarnsThatThereIsNoMemoryLimit) {
  Result<std::shared_ptr<limits::LimitsBackend>> backend =
      limits::MakeRlimitBackend(limits::ResourceLimits{});
  Check c = LimitsCheck(backend);
  EXPECT_EQ(c.status, Status::kWarn);
  EXPECT_THAT(c.detail, StartsWith("degraded: no memory limit"));
  EXPECT_THAT(c.detail, HasSubstr("processes 128"));
  ASSERT_EQ(c.fixes.size(), 1u);
  EXPECT_THAT(c.fixes[0], HasSubstr("Delegate=yes"));
}

TEST(DoctorLimits, NoBackendFailsWithTheBackendsFixes) {
  Result<std::shared_ptr<limits::LimitsBackend>> backend =
      NoBackendError();
  Check c = LimitsCheck(backend);
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_THAT(c.detail, StartsWith("no cgroup backend is usable"));
  EXPECT_THAT(c.detail, Not(HasSubstr("Fix one of")));
  const std::string rendered = Render(c);
  EXPECT_THAT(rendered, HasSubstr("     fix: or accept degraded limits: MCP_EXEC_LIMITS=rlimit"));
  EXPECT_THAT(rendered, HasSubstr("systemd-run --user --scope -p Delegate=yes"));
  EXPECT_THAT(rendered, Not(HasSubstr("mcp-exec doctor")));
}

// --------------------------------------------------------------------------------- seccomp

SeccompKernel GoodKernel() {
  SeccompKernel k;
  k.actions_avail = "kill_process kill_thread trap errno user_notif trace log allow";
  return k;
}

TEST(DoctorSeccomp, DefaultProfileOnAGoodKernelIsOk) {
  Check c = SeccompCheck(GoodKernel(), "default", SeccompSummary{420, 0});
  EXPECT_EQ(c.status, Status::kOk);
  EXPECT_THAT(c.detail, HasSubstr("built-in default profile is 420 BPF instructions"));
}

TEST(DoctorSeccomp, UnconfinedIsAWarningByChoice) {
  Check c = SeccompCheck(SeccompKernel{-1, EINVAL, std::nullopt}, "unconfined", SeccompSummary{});
  EXPECT_EQ(c.status, Status::kWarn);
  EXPECT_THAT(c.detail,
              StartsWith("seccomp is off by choice (MCP_EXEC_SECCOMP_PROFILE=unconfined)"));
}

TEST(DoctorSeccomp, KernelWithoutSeccompFails) {
  Check c = SeccompCheck(SeccompKernel{-1, EINVAL, std::nullopt}, "default", SeccompSummary{});
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_THAT(c.detail, HasSubstr("EINVAL"));
  EXPECT_THAT(c.fixes[0], HasSubstr("CONFIG_SECCOMP_FILTER"));
}

TEST(DoctorSeccomp, MissingActionsFail) {
  SeccompKernel k;
  k.actions_avail = "kill_thread trap errno allow";
  Check c = SeccompCheck(k, "default", SeccompSummary{});
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_THAT(c.detail, HasSubstr("lack the action(s) kill_process"));
  k.actions_avail.reset();
  EXPECT_EQ(SeccompCheck(k, "default", SeccompSummary{}).status, Status::kFail);
}

TEST(DoctorSeccomp, ProfileThatDoesNotLoadFails) {
  Check c = SeccompCheck(GoodKernel(), "/etc/p.json",
                         MakeError(ErrorCode::kInvalidArgument, "syscalls[3]: bad action"));
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_THAT(c.detail, HasSubstr("the profile /etc/p.json does not load: syscalls[3]"));
}

TEST(DoctorSeccomp, AlreadyFilteredProcessIsNoted) {
  SeccompKernel k = GoodKernel();
  k.mode = 2;
  Check c = SeccompCheck(k, "default", SeccompSummary{420, 2});
  EXPECT_EQ(c.status, Status::kOk);
  EXPECT_THAT(c.detail, HasSubstr("2 syscall names skipped"));
  EXPECT_THAT(c.detail, HasSubstr("runs under a seccomp filter already"));
}

// ---------------------------------------------------------------------------------- rootfs

TEST(DoctorRootfs, MissingRootfsFailsWithTheBuildFix) {
  Check c = RootfsMissing("/nope", MakeError(ErrorCode::kNotFound, "rootfs /nope: ENOENT"));
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_EQ(c.detail, "rootfs /nope: ENOENT");
  EXPECT_THAT(c.fixes, ElementsAre(HasSubstr("tools/build-rootfs"), HasSubstr("MCP_EXEC_ROOTFS")));
}

TEST(DoctorRootfs, SkippedSaysSo) {
  Check c = RootfsSkipped("/r", "/usr/bin/python3");
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_THAT(c.detail, StartsWith("skipped: needs the checks above"));
}

TEST(DoctorRootfs, SuccessfulRunListsTheVersions) {
  sandbox::RunResult r;
  r.stdout_data = "python 3.11.2\nnumpy 1.24.2\njinja2 3.1.2\n";
  r.duration = std::chrono::milliseconds(400);
  Check c = RootfsRun("/r", r);
  EXPECT_EQ(c.status, Status::kOk);
  EXPECT_EQ(c.detail,
            "/r: python 3.11.2, numpy 1.24.2, jinja2 3.1.2 (imported in a sandbox in "
            "400 ms)");
}

TEST(DoctorRootfs, FailedImportShowsTheStderrTail) {
  sandbox::RunResult r;
  r.exit_code = 1;
  r.stderr_data =
      "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\n"
      "import pandas: ModuleNotFoundError: No module named 'pandas'\n";
  Check c = RootfsRun("/r", r);
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_THAT(c.detail, HasSubstr("exit code 1"));
  EXPECT_THAT(c.detail, HasSubstr("No module named 'pandas'"));
  EXPECT_THAT(c.detail, Not(HasSubstr("line 2")));
  EXPECT_THAT(c.fixes[0], HasSubstr("tools/build-rootfs"));
}

TEST(DoctorRootfs, OomAndTimeoutNameTheirLimits) {
  sandbox::RunResult r;
  r.exit_code = 137;
  r.oom_killed = true;
  EXPECT_THAT(RootfsRun("/r", r).fixes[0], HasSubstr("MCP_EXEC_MEMORY_MAX"));
  r = sandbox::RunResult{};
  r.exit_code = -1;
  r.outcome = sandbox::Outcome::kTimedOut;
  EXPECT_THAT(RootfsRun("/r", r).fixes[0], HasSubstr("MCP_EXEC_DEFAULT_TIMEOUT_S"));
}

TEST(DoctorRootfs, SetupErrorKeepsItsOwnFixes) {
  Check c = RootfsRun("/r", MakeError(ErrorCode::kUnavailable, "could not mount: EPERM")
                                .WithFixes({"sysctl -w a=1", "or this"}));
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_EQ(c.detail, "the test run in a sandbox failed: could not mount: EPERM");
  EXPECT_THAT(c.fixes, ElementsAre("sysctl -w a=1", "or this"));
}

TEST(DoctorRootfs, SetupErrorWithoutFixesGetsTheRootfsOnes) {
  Check c = RootfsRun("/r", MakeError(ErrorCode::kNotFound, "could not execute: ENOENT"));
  EXPECT_THAT(c.fixes, ElementsAre(HasSubstr("tools/build-rootfs"), HasSubstr("MCP_EXEC_ROOTFS")));
}

TEST(DoctorRootfs, MissingRootfsListsTheErrorsOwnFixes) {
  Check c = RootfsMissing("/r", MakeError(ErrorCode::kNotFound, "no python").WithFixes({"do x"}));
  EXPECT_THAT(c.fixes, ElementsAre("do x"));
}

// --------------------------------------------------------------------------------- figures

TEST(DoctorFigures, CapturedIsOkWithTheCap) {
  Check c = FiguresCheck("/r", true, 1568);
  EXPECT_EQ(c.status, Status::kOk);
  EXPECT_THAT(c.detail, AllOf(StartsWith("captured: "), HasSubstr("/tmp/outputs/figure-N.png"),
                              HasSubstr("1568 px"), HasSubstr("module://mcp_exec_figures")));
  EXPECT_TRUE(c.fixes.empty());
}

TEST(DoctorFigures, RootfsWithoutTheBackendWarnsWhyAndHowToAddIt) {
  Check c = FiguresCheck("/srv/own-rootfs", false, 1568);
  EXPECT_EQ(c.status, Status::kWarn);
  EXPECT_THAT(c.detail, AllOf(StartsWith("not captured automatically: /srv/own-rootfs has no "
                                         "/usr/lib/python3/dist-packages/mcp_exec_figures.py"),
                              HasSubstr("MPLBACKEND=Agg")));
  EXPECT_THAT(c.fixes,
              ElementsAre(HasSubstr("tools/build-rootfs"),
                          AllOf(HasSubstr("rootfs/mcp_exec_figures.py"), HasSubstr("py_compile"))));
}

TEST(DoctorFigures, NoUsableRootfsIsAWarningNotAFailure) {
  Check c = FiguresCheck("/nope", std::nullopt, 1568);
  EXPECT_EQ(c.status, Status::kWarn);
  EXPECT_THAT(c.detail, HasSubstr("see the rootfs check"));
}

TEST(DoctorEngine, ColdSaysWhatTheWarmEnginesWouldGive) {
  Check c = EngineCheck("cold", {"numpy", "pandas"},
                        {{"zygote", std::chrono::milliseconds(900)},
                         {"pool", std::chrono::milliseconds(850)}});
  EXPECT_EQ(c.status, Status::kOk);
  EXPECT_THAT(c.detail, AllOf(StartsWith("cold: every run starts its own interpreter"),
                              HasSubstr("(MCP_EXEC_ENGINE=cold)"),
                              HasSubstr("a pool sandbox was ready in 850 ms"),
                              HasSubstr("a zygote and its first sandbox were ready in 900 ms"),
                              HasSubstr("MCP_EXEC_ENGINE=auto makes runs start warm")));
}

TEST(DoctorEngine, AnEngineThatCannotStartFailsOnlyWhenItIsTheEngine) {
  const Result<std::chrono::milliseconds> failed =
      MakeError(ErrorCode::kInvalidArgument, "import numpyx: ModuleNotFoundError");
  const std::vector<EngineTrial> trials = {{"zygote", failed}, {"pool", failed}};
  for (const char* engine : {"pool", "zygote"}) {
    SCOPED_TRACE(engine);
    Check c = EngineCheck(engine, {"numpyx"}, trials);
    EXPECT_EQ(c.status, Status::kFail);
    EXPECT_THAT(c.detail, AllOf(StartsWith(std::string(engine) + " (sandboxes kept ready"),
                                HasSubstr("numpyx imported"), HasSubstr("ModuleNotFoundError")));
    EXPECT_THAT(c.fixes, ElementsAre(HasSubstr("MCP_EXEC_PRELOAD")));
  }
  Check cold = EngineCheck("cold", {"numpyx"}, trials);
  EXPECT_EQ(cold.status, Status::kOk);
  EXPECT_THAT(cold.detail, HasSubstr("did not start here"));
  Check pool = EngineCheck("pool", {"numpy"}, {{"zygote", failed},
                                               {"pool", std::chrono::milliseconds(900)}});
  EXPECT_EQ(pool.status, Status::kOk) << "only the configured engine's failure fails the check";
  EXPECT_THAT(pool.detail, AllOf(HasSubstr("a pool sandbox was ready in 900 ms"),
                                 HasSubstr("a zygote and its first sandbox did not start")));
}

TEST(DoctorEngine, AutoSaysWhichEngineItChoosesAndWhy) {
  const std::vector<EngineTrial> both = {{"zygote", std::chrono::milliseconds(1200)},
                                         {"pool", std::chrono::milliseconds(900)}};
  Check fastest = EngineCheck("auto", {"numpy"}, both);
  EXPECT_EQ(fastest.status, Status::kOk);
  EXPECT_THAT(fastest.detail,
              AllOf(StartsWith("auto (MCP_EXEC_ENGINE) chooses zygote (sandboxes kept ready, "
                               "forked from an interpreter with numpy imported), the fastest "
                               "engine"),
                    HasSubstr("a zygote and its first sandbox were ready in 1200 ms")));
  EXPECT_TRUE(fastest.fixes.empty());

  // A zygote that cannot start on this host (not for want of its preloads): the pool, with why.
  const Result<std::chrono::milliseconds> host =
      MakeError(ErrorCode::kUnavailable, "a run forked from the zygote ended during set-up");
  Check pool = EngineCheck("auto", {"numpy"}, {{"zygote", host}, both[1]});
  EXPECT_EQ(pool.status, Status::kWarn);
  EXPECT_THAT(pool.detail, AllOf(StartsWith("auto (MCP_EXEC_ENGINE) chooses pool (sandboxes "
                                            "kept ready with numpy imported), as a faster "
                                            "engine does not start here"),
                                 HasSubstr("a zygote and its first sandbox did not start here: "
                                           "a run forked from the zygote ended during set-up")));
  EXPECT_THAT(pool.fixes, ElementsAre(HasSubstr("MCP_EXEC_ENGINE=pool")));

  Check cold = EngineCheck("auto", {"numpy"}, {{"zygote", host}, {"pool", host}});
  EXPECT_EQ(cold.status, Status::kWarn);
  EXPECT_THAT(cold.detail, StartsWith("auto (MCP_EXEC_ENGINE) chooses cold: every run starts"));

  // A preload the rootfs lacks is the configuration's fault: auto does not hide it behind cold.
  const Result<std::chrono::milliseconds> preload =
      MakeError(ErrorCode::kInvalidArgument, "import numpyx: ModuleNotFoundError");
  Check bad = EngineCheck("auto", {"numpyx"}, {{"zygote", preload}, {"pool", preload}});
  EXPECT_EQ(bad.status, Status::kFail);
  EXPECT_THAT(bad.detail, AllOf(StartsWith("auto (MCP_EXEC_ENGINE) chooses no engine"),
                                HasSubstr("ModuleNotFoundError")));
  EXPECT_THAT(bad.fixes, ElementsAre(HasSubstr("MCP_EXEC_PRELOAD")));
}

TEST(DoctorEngine, UntriedWarmEnginesWarnOnlyWhenOneMayBeTheEngine) {
  EXPECT_EQ(EngineCheck("pool", {}, {}).status, Status::kWarn);
  EXPECT_EQ(EngineCheck("zygote", {}, {}).status, Status::kWarn);
  Check autod = EngineCheck("auto", {}, {});
  EXPECT_EQ(autod.status, Status::kWarn);
  EXPECT_THAT(autod.detail, HasSubstr("not tried"));
  Check cold = EngineCheck("cold", {}, {});
  EXPECT_EQ(cold.status, Status::kOk);
  EXPECT_THAT(cold.detail, HasSubstr("not tried"));
}

TEST(DoctorFormatBytes, BinaryUnits) {
  EXPECT_EQ(FormatBytes(256ull << 20), "256 MiB");
  EXPECT_EQ(FormatBytes(1ull << 30), "1 GiB");
  EXPECT_EQ(FormatBytes(1536ull << 10), "1536 KiB");
  EXPECT_EQ(FormatBytes(100), "100 bytes");
}

// ------------------------------------------------------------------------- the host's facts

// Runs everywhere: the kernel's answer is whatever it is, but it must be read.
TEST(DoctorFacts, SeccompKernelIsRead) {
  SeccompKernel k = ReadSeccompKernel();
  if (k.mode < 0) {
    EXPECT_NE(k.mode_errno, 0);
  } else {
    EXPECT_TRUE(k.mode == 0 || k.mode == 2) << k.mode;
  }
}

TEST(DoctorEnvironments, OfferedOnesWithTheirPackagesLeftOutOnesWarnARefusalFails) {
  exec::Offer offer;
  exec::Environment def;
  def.name = "default";
  def.has_metadata = true;
  def.packages = {{"numpy", "1"}, {"pandas", "2"}};
  exec::Environment old;
  old.name = "old";
  offer.environments = {def, old};
  const Check ok = EnvironmentsCheck(offer, {});
  EXPECT_EQ(ok.status, Status::kOk);
  EXPECT_EQ(ok.detail,
            "offered: default (the default, 2 packages), old (no package list: its image was "
            "built before environments)");
  EXPECT_TRUE(ok.fixes.empty());

  const Check warn = EnvironmentsCheck(offer, {"the environment \"y\" is not offered: corrupt"});
  EXPECT_EQ(warn.status, Status::kWarn);
  EXPECT_THAT(warn.detail, HasSubstr("\nnot offered: the environment \"y\""));
  EXPECT_THAT(warn.fixes, ElementsAre(HasSubstr("mcp-exec env build NAME")));

  const Check fail = EnvironmentsCheck(
      Result<exec::Offer>(MakeError(ErrorCode::kFailedPrecondition, "no default")), {});
  EXPECT_EQ(fail.status, Status::kFail);
  EXPECT_EQ(fail.detail, "the server would not start: no default");
  EXPECT_EQ(ExitStatus({ok, warn}), 0);
  EXPECT_EQ(ExitStatus({ok, fail}), 1);
}

}  // namespace
}  // namespace mcpexec::cli::doctor

TEST(DoctorSessions, SaysWhetherSessionsWorkAndTheirSettings) {
  using mcpexec::cli::doctor::SessionTrial;
  using mcpexec::cli::doctor::SessionsCheck;
  using mcpexec::cli::doctor::Status;
  const auto off = SessionsCheck(0, 600, 3600, std::nullopt);
  EXPECT_EQ(off.status, Status::kOk);
  EXPECT_THAT(off.detail, ::testing::HasSubstr("off (MCP_EXEC_MAX_SESSIONS=0)"));

  const auto untried = SessionsCheck(8, 600, 3600, std::nullopt);
  EXPECT_EQ(untried.status, Status::kWarn);
  EXPECT_THAT(untried.detail, ::testing::HasSubstr("not tried"));

  const auto works = SessionsCheck(
      8, 600, 3600, SessionTrial{std::chrono::milliseconds(7), std::string("42"), 1u << 20});
  EXPECT_EQ(works.status, Status::kOk);
  EXPECT_THAT(works.detail, ::testing::HasSubstr("up to 8 open (MCP_EXEC_MAX_SESSIONS)"));
  EXPECT_THAT(works.detail, ::testing::HasSubstr("in 7 ms"));
  EXPECT_THAT(works.detail, ::testing::HasSubstr("1 MiB"));

  const auto broken = SessionsCheck(
      8, 600, 3600,
      SessionTrial{mcpexec::MakeError(mcpexec::ErrorCode::kUnavailable, "no warm sandbox"),
                   std::string(), std::nullopt});
  EXPECT_EQ(broken.status, Status::kFail);
  EXPECT_THAT(broken.detail, ::testing::HasSubstr("no warm sandbox"));

  const auto forgot = SessionsCheck(
      8, 600, 3600, SessionTrial{std::chrono::milliseconds(7), std::string("None"), std::nullopt});
  EXPECT_EQ(forgot.status, Status::kFail);
  EXPECT_THAT(forgot.detail, ::testing::HasSubstr("did not see its first"));
}
