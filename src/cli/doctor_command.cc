#include "cli/doctor_command.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <iostream>
#include <sstream>

#include "base/sys.h"
#include "exec/environments.h"
#include "exec/exec.h"
#include "sandbox/plan.h"
#include "sandbox/seccomp_filter.h"
#include "sandbox/setup_error.h"
#include "sandbox/spec.h"

namespace mcpexec::cli {
namespace {

using doctor::Check;
using doctor::Status;

struct ProbeReport {
  int32_t step;
  int32_t err;
};

// Mount points below /proc. binfmt_misc is left out: it sits on a permanently empty
// directory, which the kernel does not count as hiding anything.
std::vector<std::string> ProcOvermounts() {
  std::vector<std::string> points;
  auto mountinfo = ReadFile("/proc/self/mountinfo");
  if (!mountinfo.ok()) return points;
  std::istringstream in(*mountinfo);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    fields >> id >> parent >> devno >> root >> point;
    if (point.starts_with("/proc/") && point != "/proc/sys/fs/binfmt_misc") {
      points.push_back(point);
    }
  }
  return points;
}

// The probe's child: the steps a sandbox's start takes that a host can refuse. Reports the
// first failure, or success, on `report_fd` and exits; only async-signal-safe calls.
[[noreturn]] void ProbeChild(int report_fd) {
  using Step = doctor::UsernsProbe::Step;
  auto finish = [report_fd](Step step, int err) {
    const ProbeReport report{static_cast<int32_t>(step), err};
    (void)!write(report_fd, &report, sizeof report);
    _exit(0);
  };
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET) != 0) {
    finish(Step::kUnshare, errno);
  }
  // What the sandbox does first in its mount namespace; AppArmor's restriction of
  // unprivileged user namespaces lets unshare succeed and refuses this.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    finish(Step::kMount, errno);
  }
  // A procfs belongs to the pid namespace of the process that mounts it: only a child is in
  // the new one.
  const pid_t child = fork();
  if (child < 0) finish(Step::kFork, errno);
  if (child == 0) {
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      finish(Step::kProcMount, errno);
    }
    finish(Step::kNone, 0);
  }
  while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
  _exit(0);
}

Check SeccompCheckFor(const config::Config& config) {
  if (config.seccomp_profile == sandbox::kSeccompUnconfined) {
    return doctor::SeccompCheck(ReadSeccompKernel(), config.seccomp_profile,
                                doctor::SeccompSummary{});
  }
  Result<doctor::SeccompSummary> summary = [&]() -> Result<doctor::SeccompSummary> {
    MCPEXEC_ASSIGN_OR_RETURN(sandbox::SeccompFilter filter,
                             sandbox::FilterForProfile(config.seccomp_profile));
    return doctor::SeccompSummary{filter.Instructions().size(), filter.Skipped().size()};
  }();
  return doctor::SeccompCheck(ReadSeccompKernel(), config.seccomp_profile, summary);
}

// Check 4. The rootfs and interpreter are validated by compiling a plan that needs neither a
// limits backend nor a seccomp filter, so that a missing rootfs is reported even when the
// sandbox cannot start; the imports then run in a real sandbox under `backend`.
Check RootfsCheckFor(const config::Config& config,
                     const Result<std::shared_ptr<limits::LimitsBackend>>& backend,
                     bool earlier_failed) {
  sandbox::SandboxSpec spec = exec::SpecFromConfig(config);
  spec.seccomp_profile = sandbox::kSeccompUnconfined;
  auto layout = sandbox::Compile(spec, limits::MakeRlimitBackend(limits::ResourceLimits{}));
  if (!layout.ok()) return doctor::RootfsMissing(config.rootfs, layout.error());
  const std::string& rootfs = (*layout)->Spec().rootfs;
  if (earlier_failed || !backend.ok()) {
    return doctor::RootfsSkipped(rootfs, (*layout)->ExecPath());
  }
  auto plan = exec::PrepareSandboxes(config, *backend);
  if (!plan.ok()) return doctor::RootfsRun(rootfs, plan.error());
  auto request = exec::ValidateRequest(config, {doctor::kImportProgram, "", std::nullopt});
  if (!request.ok()) return doctor::RootfsRun(rootfs, request.error());
  return doctor::RootfsRun(rootfs, exec::Execute(*engine::MakeColdEngine(*plan), config, *request));
}

// Check 5, from a plan compiled as the rootfs check's first step is.
Check FiguresCheckFor(const config::Config& config) {
  sandbox::SandboxSpec spec = exec::SpecFromConfig(config);
  spec.seccomp_profile = sandbox::kSeccompUnconfined;
  auto layout = sandbox::Compile(spec, limits::MakeRlimitBackend(limits::ResourceLimits{}));
  if (!layout.ok()) return doctor::FiguresCheck(config.rootfs, std::nullopt, config.figure_max_px);
  return doctor::FiguresCheck((*layout)->Spec().rootfs, (*layout)->CapturesFigures(),
                              config.figure_max_px);
}

// Check 6: prepares the first sandbox of each warm engine, as `serve` would.
Check EngineCheckFor(const config::Config& config,
                     const Result<std::shared_ptr<limits::LimitsBackend>>& backend,
                     bool earlier_failed) {
  if (earlier_failed || !backend.ok()) {
    return doctor::EngineCheck(config::EngineName(config.engine), config.preload, {});
  }
  auto first_ready = [&](const char* engine) -> Result<std::chrono::milliseconds> {
    MCPEXEC_ASSIGN_OR_RETURN(auto plan, exec::PrepareSandboxes(config, *backend));
    config::Config warm = config;
    warm.engine = config::EngineFromName(engine).value_or(config::EngineKind::kCold);
    const auto start = std::chrono::steady_clock::now();
    MCPEXEC_ASSIGN_OR_RETURN(auto started,
                             exec::StartEngine(warm, std::move(plan), exec::EngineUse::kOneShot));
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
  };
  std::vector<doctor::EngineTrial> trials;
  for (const char* engine : exec::kAutoOrder) trials.push_back({engine, first_ready(engine)});
  return doctor::EngineCheck(config::EngineName(config.engine), config.preload, trials);
}

// Check 7: a session in the engine `serve` would choose, as exec with session "new" opens it.
Check SessionsCheckFor(const config::Config& config,
                       const Result<std::shared_ptr<limits::LimitsBackend>>& backend,
                       bool earlier_failed) {
  std::optional<doctor::SessionTrial> trial;
  if (config.max_sessions > 0 && !earlier_failed && backend.ok()) {
    trial = doctor::SessionTrial{std::chrono::milliseconds(0), std::string(), std::nullopt};
    auto call = [&](sandbox::Session& session, const char* code) -> Result<std::string> {
      exec::ExecRequest request;
      request.code = code;
      MCPEXEC_ASSIGN_OR_RETURN(sandbox::CallResult result,
                               session.Call(sandbox::Program{request.code, "", {}}, exec::LimitsFor(config, request),
                                            {}, exec::SessionOptionsFor(config).grace));
      if (result.run.exit_code != 0) {
        return MakeError(ErrorCode::kInternal, "exit code " + std::to_string(result.run.exit_code) +
                                                   ": " + result.run.stderr_data);
      }
      return result.value.value_or("None");
    };
    std::chrono::steady_clock::time_point start;
    std::shared_ptr<engine::Engine> engine;  // outlives the session: its zygote, if any
    auto opened = [&]() -> Result<sandbox::Session> {
      MCPEXEC_ASSIGN_OR_RETURN(auto plan, exec::PrepareSandboxes(config, *backend));
      MCPEXEC_ASSIGN_OR_RETURN(engine,
                               exec::StartEngine(config, std::move(plan), exec::EngineUse::kOneShot));
      start = std::chrono::steady_clock::now();  // the engine's start is the engine check's
      MCPEXEC_ASSIGN_OR_RETURN(sandbox::Sandbox box, engine->TakeWarm());
      return sandbox::Session::Start(std::move(box));
    }();
    if (!opened.ok()) {
      trial->opened = opened.error();
    } else if (auto first = call(*opened, "x = 41"); !first.ok()) {
      trial->opened = first.error();
    } else {
      trial->opened = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      trial->value = call(*opened, "x + 1");
      trial->memory_bytes = opened->Usage().memory_current_bytes;
    }
  }
  return doctor::SessionsCheck(config.max_sessions, config.session_idle_s,
                               config.session_max_age_s, trial);
}

}  // namespace

CLI::App* AddDoctorCommand(CLI::App& app, DoctorOptions& options) {
  CLI::App* doctor = app.add_subcommand(
      "doctor",
      "Check that this host can run sandboxes: user namespaces, the limits backend, "
      "seccomp, the rootfs and its Python stack, whether figures are captured, and the "
      "engine");
  AddConfigFlags(doctor, Command::kRun, options.config);
  doctor->footer(
      "Checks the configuration `mcp-exec run` would use (the same flags and MCP_EXEC_* "
      "variables). Prints OK, WARN (works, but weaker) or FAIL with the fixes, one line per "
      "check. Exit status: 0 when no check failed, 1 when one did, 2 for an invalid "
      "configuration.");
  return doctor;
}

doctor::UsernsProbe ProbeUserNamespaces() {
  using Step = doctor::UsernsProbe::Step;
  doctor::UsernsProbe probe;
  probe.proc_overmounts = ProcOvermounts();
  auto pipe = MakePipe();
  if (!pipe.ok()) {
    probe.failed = Step::kFork;
    probe.err = pipe.error().sys_errno;
    return probe;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    probe.failed = Step::kFork;
    probe.err = errno;
    return probe;
  }
  if (pid == 0) ProbeChild(pipe->write.Get());
  pipe->write.Reset();
  ProbeReport report{static_cast<int32_t>(Step::kFork), EPIPE};
  ssize_t n;
  do {
    n = read(pipe->read.Get(), &report, sizeof report);
  } while (n < 0 && errno == EINTR);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof report)) report = {static_cast<int32_t>(Step::kFork), EPIPE};
  probe.failed = static_cast<Step>(report.step);
  probe.err = report.err;
  return probe;
}

doctor::SeccompKernel ReadSeccompKernel() {
  doctor::SeccompKernel kernel;
  kernel.mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
  if (kernel.mode < 0) kernel.mode_errno = errno;
  if (auto actions = ReadFile("/proc/sys/kernel/seccomp/actions_avail"); actions.ok()) {
    kernel.actions_avail = *actions;
    while (!kernel.actions_avail->empty() && kernel.actions_avail->back() == '\n') {
      kernel.actions_avail->pop_back();
    }
  }
  return kernel;
}

int DoctorCommand(const std::string& default_rootfs, const DoctorOptions& options) {
  auto config = ResolveConfig(default_rootfs, config::ProcessEnv(), options.config);
  if (!config.ok()) {
    std::cerr << "mcp-exec: " << config.error().message << "\n";
    return 2;
  }
  std::vector<Check> checks;
  // Printed as they complete: the last one starts Python in a sandbox and takes a moment.
  auto report = [&checks](Check check) {
    std::cout << doctor::Render(check) << std::flush;
    checks.push_back(std::move(check));
  };
  // First, while this process has one thread: the probe forks.
  report(doctor::UsernsCheck(sandbox::ReadUsernsFacts(), ProbeUserNamespaces()));
  auto backend = limits::OpenBackend(exec::BackendOptionsFor(*config));
  report(doctor::LimitsCheck(backend));
  report(SeccompCheckFor(*config));
  const bool earlier_failed = doctor::ExitStatus(checks) != 0;
  report(RootfsCheckFor(*config, backend, earlier_failed));
  report(FiguresCheckFor(*config));
  report(EngineCheckFor(*config, backend, doctor::ExitStatus(checks) != 0));
  report(SessionsCheckFor(*config, backend, doctor::ExitStatus(checks) != 0));
  std::vector<std::string> warnings;
  const auto offer = exec::DiscoverEnvironments(*config, warnings);
  report(doctor::EnvironmentsCheck(offer, warnings));
  return doctor::ExitStatus(checks);
}

}  // namespace mcpexec::cli
