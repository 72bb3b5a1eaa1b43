#include "cli/doctor_checks.h"

#include <sys/resource.h>

#include <cstdio>
#include <sstream>
#include <string_view>

#include "base/result.h"
#include "exec/engine_choice.h"
#include "sandbox/plan.h"
#include "sandbox/spec.h"
#include "sandbox/workspace_files.h"

namespace mcpexec::cli::doctor {
namespace {

constexpr const char* kNameIndent = "     ";      // under the check name
constexpr const char* kFixIndent = "          ";  // under the text of a "fix:" line
constexpr size_t kStderrTailLines = 6;
constexpr size_t kMaxTailLineBytes = 300;

const char* Label(Status status) {
  switch (status) {
    case Status::kOk:
      return "OK   ";
    case Status::kWarn:
      return "WARN ";
    case Status::kFail:
      return "FAIL ";
  }
  return "?    ";
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string Join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

bool HasWord(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  for (std::string w; in >> w;) {
    if (w == word) return true;
  }
  return false;
}

std::string SysctlSummary(const sandbox::UsernsFacts& f) {
  std::vector<std::string> parts;
  if (f.max_user_namespaces) {
    parts.push_back("user.max_user_namespaces=" + std::to_string(*f.max_user_namespaces));
  }
  if (f.unprivileged_userns_clone) {
    parts.push_back("kernel.unprivileged_userns_clone=" +
                    std::to_string(*f.unprivileged_userns_clone));
  }
  if (f.apparmor_restrict) {
    parts.push_back("kernel.apparmor_restrict_unprivileged_userns=" +
                    std::to_string(*f.apparmor_restrict));
  }
  if (parts.empty()) return "no user-namespace sysctl is readable";
  return Join(parts, ", ");
}

std::string FormatCpus(double cpus) {
  char text[32];
  snprintf(text, sizeof text, "%g", cpus);
  return text;
}

std::string RlimitsText(const std::vector<limits::RlimitSetting>& settings) {
  std::vector<std::string> parts;
  for (const limits::RlimitSetting& r : settings) {
    switch (r.resource) {
      case RLIMIT_CPU:
        parts.push_back("cpu time " + std::to_string(r.soft) + " s");
        break;
      case RLIMIT_AS:
        parts.push_back("address space " + FormatBytes(r.soft));
        break;
      case RLIMIT_NPROC:
        parts.push_back("processes " + std::to_string(r.soft));
        break;
      default:
        parts.push_back("rlimit " + std::to_string(r.resource) + " " + std::to_string(r.soft));
    }
  }
  return Join(parts, ", ");
}

std::vector<std::string> RootfsFixes() {
  return {"build the rootfs with tools/build-rootfs (python3 and the scientific stack)",
          "or point --rootfs / MCP_EXEC_ROOTFS at a complete rootfs"};
}

// The last lines of a program's stderr, each cut to a readable length.
std::vector<std::string> Tail(const std::string& text) {
  std::vector<std::string> lines;
  for (std::string& line : SplitLines(text)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (line.size() > kMaxTailLineBytes) line = line.substr(0, kMaxTailLineBytes) + "...";
    lines.push_back(std::move(line));
  }
  if (lines.size() > kStderrTailLines) {
    lines.erase(lines.begin(), lines.end() - static_cast<long>(kStderrTailLines));
  }
  return lines;
}

Check NewCheck(const char* name, Status status = Status::kOk) {
  Check c;
  c.name = name;
  c.status = status;
  return c;
}

}  // namespace

std::string Render(const Check& check) {
  std::string out = Label(check.status) + check.name + ": ";
  const std::vector<std::string> detail = SplitLines(check.detail);
  for (size_t i = 0; i < detail.size(); ++i) {
    out += (i == 0 ? "" : kNameIndent) + detail[i] + "\n";
  }
  if (detail.empty()) out += "\n";
  for (const std::string& fix : check.fixes) {
    const std::vector<std::string> lines = SplitLines(fix);
    for (size_t i = 0; i < lines.size(); ++i) {
      out += (i == 0 ? std::string(kNameIndent) + "fix: " : kFixIndent) + lines[i] + "\n";
    }
  }
  return out;
}

int ExitStatus(const std::vector<Check>& checks) {
  for (const Check& c : checks) {
    if (c.status == Status::kFail) return 1;
  }
  return 0;
}

Check UsernsCheck(const sandbox::UsernsFacts& facts, const UsernsProbe& probe) {
  Check c = NewCheck(kUsernsCheck);
  if (probe.failed == UsernsProbe::Step::kNone) {
    c.detail =
        "new user, mount, pid and net namespaces work, and so do a mount and a fresh "
        "/proc in them (" +
        SysctlSummary(facts) + ")";
    if (!facts.root && facts.apparmor_restrict && *facts.apparmor_restrict == 1) {
      c.detail += "; AppArmor restricts unprivileged user namespaces, but not for this process";
    }
    return c;
  }
  c.status = Status::kFail;
  switch (probe.failed) {
    case UsernsProbe::Step::kFork:
      c.detail = "the probe could not run: fork or its report failed with " + ErrnoText(probe.err);
      c.fixes = {"the host is out of processes or memory; try again when it has room"};
      return c;
    case UsernsProbe::Step::kUnshare:
      c.detail = "unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWNET) failed with " +
                 ErrnoText(probe.err);
      break;
    case UsernsProbe::Step::kMount:
      c.detail = "a new user namespace was created, but a mount inside it failed with " +
                 ErrnoText(probe.err);
      break;
    case UsernsProbe::Step::kProcMount:
      c.detail =
          "a fresh /proc cannot be mounted in new user and pid namespaces: mount(proc) "
          "failed with " +
          ErrnoText(probe.err);
      if (probe.err == EPERM && !probe.proc_overmounts.empty()) {
        // mount_too_revealing() in fs/namespace.c: a new procfs in a user namespace needs
        // the current one fully visible.
        c.detail +=
            ": the kernel allows that only while no part of /proc is hidden, and "
            "mounts cover " +
            Join(probe.proc_overmounts, ", ");
        c.fixes = sandbox::HiddenProcFixes();
        return c;
      }
      break;
    case UsernsProbe::Step::kNone:
      break;
  }
  sandbox::UsernsHint hint = sandbox::ExplainUserns(facts);
  c.detail += ": " + hint.why;
  c.fixes = std::move(hint.fixes);
  c.detail += "\n(sysctls: " + SysctlSummary(facts) + ")";
  return c;
}

Check LimitsCheck(const Result<std::shared_ptr<limits::LimitsBackend>>& backend) {
  Check c = NewCheck(kLimitsCheck);
  if (!backend.ok()) {
    c.status = Status::kFail;
    c.detail = backend.error().message;
    c.fixes = backend.error().fixes;
    return c;
  }
  const limits::LimitsBackend& b = **backend;
  if (b.Kind() == limits::Backend::kRlimit) {
    c.status = Status::kWarn;
    c.detail =
        "degraded: no memory limit (rlimit backend, MCP_EXEC_LIMITS=rlimit); rlimits "
        "only: " +
        RlimitsText(b.ProgramRlimits());
    c.fixes = {
        "for memory, pids and cpu limits, run mcp-exec in a delegated cgroup v2 "
        "(systemd-run --user --scope -p Delegate=yes mcp-exec serve, or "
        "packaging/systemd/mcp-exec.service), or as root on a cgroup v1 host"};
    return c;
  }
  const limits::ResourceLimits& l = b.Limits();
  std::string location = b.Location();
  if (b.Kind() == limits::Backend::kCgroup1) {
    // One directory per hierarchy, space-separated.
    for (size_t at = location.find(' '); at != std::string::npos; at = location.find(' ', at + 2)) {
      location.replace(at, 1, ", ");
    }
  }
  c.detail = std::string(limits::BackendName(b.Kind())) + " at " + location + ": memory " +
             FormatBytes(l.memory_max) + " (no swap), pids " + std::to_string(l.pids_max) +
             ", cpus " + FormatCpus(l.cpus) + " per run";
  return c;
}

Check SeccompCheck(const SeccompKernel& kernel, const std::string& profile,
                   const Result<SeccompSummary>& compiled) {
  Check c = NewCheck(kSeccompCheck);
  const std::string unconfined_fix =
      "or run without a filter, by choice: MCP_EXEC_SECCOMP_PROFILE=unconfined";
  if (profile == sandbox::kSeccompUnconfined) {
    c.status = Status::kWarn;
    c.detail =
        "seccomp is off by choice (MCP_EXEC_SECCOMP_PROFILE=unconfined): programs can "
        "use every system call the namespaces allow";
    c.fixes = {
        "unset MCP_EXEC_SECCOMP_PROFILE (and --seccomp-profile) for the built-in "
        "default profile"};
    return c;
  }
  c.status = Status::kFail;
  if (kernel.mode < 0) {
    c.detail = "the kernel has no seccomp: prctl(PR_GET_SECCOMP) failed with " +
               ErrnoText(kernel.mode_errno);
    c.fixes = {
        "boot a kernel built with CONFIG_SECCOMP and CONFIG_SECCOMP_FILTER (distribution "
        "kernels are)",
        unconfined_fix};
    return c;
  }
  if (!kernel.actions_avail) {
    c.detail =
        "the kernel does not list its seccomp filter actions "
        "(/proc/sys/kernel/seccomp/actions_avail is missing: Linux older than 4.14)";
    c.fixes = {"upgrade the kernel: mcp-exec needs Linux 5.9 or newer", unconfined_fix};
    return c;
  }
  std::vector<std::string> missing;
  for (const char* action : {"errno", "kill_process"}) {
    if (!HasWord(*kernel.actions_avail, action)) missing.push_back(action);
  }
  if (!missing.empty()) {
    c.detail = "the kernel's seccomp filters lack the action(s) " + Join(missing, ", ") +
               " (actions_avail: " + *kernel.actions_avail + ")";
    c.fixes = {"upgrade the kernel: mcp-exec needs Linux 5.9 or newer", unconfined_fix};
    return c;
  }
  const std::string what = profile == sandbox::kSeccompDefault
                               ? std::string("the built-in default profile")
                               : "the profile " + profile;
  if (!compiled.ok()) {
    c.detail = what + " does not load: " + compiled.error().message;
    c.fixes = {"correct the profile where the message points",
               "or use the built-in profile: unset MCP_EXEC_SECCOMP_PROFILE"};
    return c;
  }
  c.status = Status::kOk;
  c.detail = "the kernel has filters with errno and kill_process; " + what + " is " +
             std::to_string(compiled->instructions) + " BPF instructions";
  if (compiled->skipped > 0) {
    c.detail += " (" + std::to_string(compiled->skipped) +
                " syscall names skipped: unknown to this kernel or libseccomp)";
  }
  if (kernel.mode == 2) {
    c.detail +=
        "; mcp-exec itself runs under a seccomp filter already (a container's?), "
        "which the sandbox's stacks on";
  }
  return c;
}

const char* const kImportProgram = R"py(import importlib, os, sys
print("python", sys.version.split()[0])
failed = []
for name in ("numpy", "pandas", "matplotlib", "PIL", "yaml", "jinja2"):
    try:
        print(name, getattr(importlib.import_module(name), "__version__", "?"))
    except Exception as e:
        failed.append(f"import {name}: {type(e).__name__}: {e}")
if not failed:
    # pyplot loads the backend MPLBACKEND names with the first figure.
    try:
        import matplotlib.pyplot as plt
        plt.close(plt.figure())
    except Exception as e:
        failed.append(f"matplotlib backend {os.environ.get('MPLBACKEND')}: {type(e).__name__}: {e}")
if failed:
    print("\n".join(failed), file=sys.stderr)
    sys.exit(1)
)py";

Check RootfsMissing(const std::string& rootfs, const Error& error) {
  Check c = NewCheck(kRootfsCheck, Status::kFail);
  c.detail = error.message;
  if (error.message.find(rootfs) == std::string::npos) c.detail += " (rootfs " + rootfs + ")";
  c.fixes = error.fixes.empty() ? RootfsFixes() : error.fixes;
  return c;
}

Check RootfsSkipped(const std::string& rootfs, const std::string& interpreter) {
  Check c = NewCheck(kRootfsCheck, Status::kFail);
  c.detail = "skipped: needs the checks above (" + rootfs + " has " + interpreter +
             ", but importing the scientific stack needs a sandbox)";
  c.fixes = {"fix what the checks above report, then run mcp-exec doctor again"};
  return c;
}

Check RootfsRun(const std::string& rootfs, const Result<sandbox::RunResult>& run) {
  Check c = NewCheck(kRootfsCheck, Status::kFail);
  if (!run.ok()) {
    c.detail = "the test run in a sandbox failed: " + run.error().message;
    c.fixes = run.error().fixes.empty() ? RootfsFixes() : run.error().fixes;
    return c;
  }
  const sandbox::RunResult& r = *run;
  const bool timed_out = r.outcome == sandbox::Outcome::kTimedOut;
  if (timed_out || r.exit_code != 0) {
    if (timed_out) {
      c.detail =
          "the test imports ran out of time after " + std::to_string(r.duration.count()) + " ms";
      c.fixes = {"give runs more time or cpu: MCP_EXEC_DEFAULT_TIMEOUT_S, MCP_EXEC_CPUS"};
    } else if (r.oom_killed) {
      c.detail = "the test imports were killed for memory";
      c.fixes = {"give runs more memory: MCP_EXEC_MEMORY_MAX (the default, 256m, is enough)"};
    } else {
      c.detail = "the test imports failed with exit code " + std::to_string(r.exit_code);
      c.fixes = RootfsFixes();
    }
    for (const std::string& line : Tail(r.stderr_data)) c.detail += "\n  " + line;
    return c;
  }
  std::vector<std::string> versions;
  for (const std::string& line : SplitLines(r.stdout_data)) versions.push_back(line);
  c.status = Status::kOk;
  c.detail = rootfs + ": " + Join(versions, ", ") + " (imported in a sandbox in " +
             std::to_string(r.duration.count()) + " ms)";
  return c;
}

Check FiguresCheck(const std::string& rootfs, std::optional<bool> captures, int max_px) {
  Check c = NewCheck(kFiguresCheck);
  if (!captures) {
    c.status = Status::kWarn;
    c.detail = "not checked: no usable rootfs (see the rootfs check)";
    return c;
  }
  const std::string dir = std::string(sandbox::kWorkspaceDir) + "/" + sandbox::kOutputsDir;
  if (*captures) {
    c.detail = "captured: plt.show() and the figures open at exit are saved as " + dir +
               "/figure-N.png, at most " + std::to_string(max_px) +
               " px on the long edge (MPLBACKEND=module://mcp_exec_figures)";
    return c;
  }
  c.status = Status::kWarn;
  c.detail = "not captured automatically: " + rootfs + " has no " + sandbox::kFigureBackendPath +
             " (a regular file others can read), so programs run with MPLBACKEND=Agg: "
             "plt.show() shows nothing, and only the figures a program saves into " +
             dir + " itself come back";
  c.fixes = {"rebuild the rootfs with tools/build-rootfs, whose recipe ships the backend",
             std::string("or copy rootfs/mcp_exec_figures.py of the mcp-exec source to ") +
                 sandbox::kFigureBackendPath +
                 " in the rootfs (mode 644) and byte-compile it:\n"
                 "chroot ROOTFS python3 -m py_compile " +
                 sandbox::kFigureBackendPath};
  return c;
}

namespace {

// What an engine gives, for the engine check.
std::string EngineWords(const std::string& engine, const std::string& modules) {
  if (engine == "cold") return "cold: every run starts its own interpreter and imports";
  if (engine == "zygote") {
    return "zygote (sandboxes kept ready, forked from an interpreter with " + modules +
           " imported)";
  }
  return "pool (sandboxes kept ready with " + modules + " imported)";
}

}  // namespace

Check EngineCheck(const std::string& engine, const std::vector<std::string>& preload,
                  const std::vector<EngineTrial>& trials) {
  Check c = NewCheck(kEngineCheck);
  std::string modules;
  for (const std::string& m : preload) modules += (modules.empty() ? "" : ",") + m;
  if (modules.empty()) modules = "nothing";
  const std::string preload_fix =
      "set MCP_EXEC_PRELOAD to modules the rootfs has (`mcp-exec run --code 'import M'` shows "
      "what fails), or MCP_EXEC_ENGINE=cold";
  if (engine != "auto") {
    c.detail = EngineWords(engine, modules) + " (MCP_EXEC_ENGINE=" + engine + ")";
  } else if (trials.empty()) {
    c.detail = "auto (MCP_EXEC_ENGINE): not chosen";
  } else {
    // The choice `serve` makes (exec::StartEngine), over the trials below.
    std::vector<exec::PassedOver> passed_over;
    const auto chosen = exec::ChooseAuto<std::string>(
        [&](const char* name) -> Result<std::string> {
          if (std::string(name) == "cold") return std::string(name);
          for (const EngineTrial& t : trials) {
            if (t.engine != name) continue;
            if (t.ready.ok()) return t.engine;
            return t.ready.error();
          }
          return MakeError(ErrorCode::kUnavailable, "not tried");
        },
        passed_over);
    if (!chosen.ok()) {
      c.detail = "auto (MCP_EXEC_ENGINE) chooses no engine";
      c.status = Status::kFail;
      c.fixes = {preload_fix};
    } else if (passed_over.empty()) {
      c.detail = "auto (MCP_EXEC_ENGINE) chooses " + EngineWords(*chosen, modules) +
                 ", the fastest engine";
    } else {
      c.detail = "auto (MCP_EXEC_ENGINE) chooses " + EngineWords(*chosen, modules) +
                 ", as a faster engine does not start here";
      c.status = Status::kWarn;
      c.fixes = {"the trials below say what the faster engine lacks here; MCP_EXEC_ENGINE=" +
                 *chosen + " chooses this one without trying the others at start"};
    }
  }
  if (trials.empty()) {
    c.detail += "; the warm engines were not tried (see the checks above)";
    if (engine != "cold") c.status = Status::kWarn;
    return c;
  }
  for (const EngineTrial& trial : trials) {
    const std::string what =
        trial.engine == "zygote" ? "a zygote and its first sandbox" : "a pool sandbox";
    if (trial.ready.ok()) {
      c.detail += "; " + what + (trial.engine == "zygote" ? " were" : " was") + " ready in " +
                  std::to_string(trial.ready.value().count()) + " ms here";
      continue;
    }
    c.detail += "; " + what + " did not start here: " + trial.ready.error().message;
    if (trial.engine != engine) continue;
    c.status = Status::kFail;
    c.fixes = {preload_fix};
  }
  if (engine == "cold" && c.status == Status::kOk) {
    c.detail += ": MCP_EXEC_ENGINE=auto makes runs start warm";
  }
  return c;
}

std::string FormatBytes(uint64_t bytes) {
  constexpr struct {
    uint64_t size;
    const char* unit;
  } kUnits[] = {{1ull << 30, "GiB"}, {1ull << 20, "MiB"}, {1ull << 10, "KiB"}};
  for (const auto& u : kUnits) {
    if (bytes >= u.size && bytes % u.size == 0) {
      return std::to_string(bytes / u.size) + " " + u.unit;
    }
  }
  return std::to_string(bytes) + " bytes";
}

Check SessionsCheck(int max_sessions, int idle_s, int max_age_s,
                    const std::optional<SessionTrial>& trial) {
  Check c = NewCheck(kSessionsCheck);
  if (max_sessions == 0) {
    c.detail = "off (MCP_EXEC_MAX_SESSIONS=0): exec's session argument is refused";
    return c;
  }
  c.detail = "up to " + std::to_string(max_sessions) + " open (MCP_EXEC_MAX_SESSIONS), each for " +
             std::to_string(idle_s) + " s without a call (MCP_EXEC_SESSION_IDLE_S) and " +
             std::to_string(max_age_s) + " s in all (MCP_EXEC_SESSION_MAX_AGE_S)";
  if (!trial) {
    c.detail += "; not tried (see the checks above)";
    c.status = Status::kWarn;
    return c;
  }
  if (!trial->opened.ok()) {
    c.status = Status::kFail;
    c.detail += "\na session does not work here: " + trial->opened.error().message;
    c.fixes = {"the engine check above says what the warm sandbox lacks; MCP_EXEC_MAX_SESSIONS=0 "
               "turns sessions off"};
    return c;
  }
  if (!trial->value.ok() || *trial->value != "42") {
    c.status = Status::kFail;
    c.detail += "\na session's second call did not see its first: " +
                (trial->value.ok() ? "the value was " + *trial->value : trial->value.error().message);
    return c;
  }
  c.detail += "\na session opened and ran its first call in " +
              std::to_string(trial->opened->count()) + " ms, and kept its state for the second";
  if (trial->memory_bytes) {
    c.detail += "; it held " + FormatBytes(*trial->memory_bytes) + " beyond its preloads";
  }
  return c;
}

Check EnvironmentsCheck(const Result<exec::Offer>& offer, const std::vector<std::string>& warnings) {
  Check c = NewCheck(kEnvironmentsCheck);
  if (!offer.ok()) {
    c.status = Status::kFail;
    c.detail = "the server would not start: " + offer.error().message;
    c.fixes = offer.error().fixes;
    if (c.fixes.empty()) {
      c.fixes = {"build the missing image with `mcp-exec env build NAME`, or change "
                 "MCP_EXEC_ENVIRONMENTS and MCP_EXEC_DEFAULT_ENVIRONMENT"};
    }
    return c;
  }
  std::string offered;
  for (const exec::Environment& e : offer->environments) {
    if (!offered.empty()) offered += ", ";
    offered += e.name + " (";
    if (e.name == offer->default_name) offered += "the default, ";
    offered += e.has_metadata ? std::to_string(e.packages.size()) + " packages)"
                              : "no package list: its image was built before environments)";
  }
  c.detail = "offered: " + offered;
  for (const std::string& warning : warnings) {
    c.status = Status::kWarn;
    c.detail += "\nnot offered: " + warning;
  }
  if (!warnings.empty()) {
    c.fixes = {"`mcp-exec env list` shows every environment; `mcp-exec env build NAME` builds "
               "or rebuilds one"};
  }
  return c;
}

}  // namespace mcpexec::cli::doctor
