// The checks of `mcp-exec doctor` as pure functions: each turns facts gathered from the host
// (sysctls, a probe's errno, an opened limits backend, a test run's result) into one verdict
// with the reason and the fixes. Gathering the facts is doctor_command.cc's job, so every
// verdict can be unit-tested without touching the host.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "exec/environments.h"
#include "limits/limits.h"
#include "sandbox/run_result.h"
#include "sandbox/setup_error.h"

namespace mcpexec::cli::doctor {

// The check names, as printed.
inline constexpr const char* kUsernsCheck = "user namespaces";
inline constexpr const char* kLimitsCheck = "cgroup limits";
inline constexpr const char* kSeccompCheck = "seccomp";
inline constexpr const char* kRootfsCheck = "rootfs";
inline constexpr const char* kFiguresCheck = "figures";
inline constexpr const char* kEngineCheck = "engine";
inline constexpr const char* kSessionsCheck = "sessions";
inline constexpr const char* kEnvironmentsCheck = "environments";

// kWarn: works, but weaker than it could be. Only kFail makes doctor exit non-zero.
enum class Status { kOk, kWarn, kFail };

struct Check {
  std::string name;
  Status status = Status::kOk;
  // What was found, or why it fails. May span lines; the first is the headline.
  std::string detail;
  // Ways to fix it, each printed as a "fix:" line (may span lines); an Error's fixes as they are.
  std::vector<std::string> fixes;
};

// "OK   name: detail", "WARN ...", "FAIL ..."; later lines of the detail indented under the name,
// then one "     fix: ..." line per fix. Ends with a newline.
std::string Render(const Check& check);

// 0 when no check failed, else 1.
int ExitStatus(const std::vector<Check>& checks);

// The probe of user namespaces: a child unshares them as mcp-exec's sandboxes do, makes a
// mount in them (which AppArmor's restriction of unprivileged user namespaces refuses), and
// its child in the new pid namespace mounts a fresh /proc (which the kernel refuses while parts
// of the current /proc are mounted over: systemd's ProtectKernelTunables=, container masks).
struct UsernsProbe {
  enum class Step { kNone, kFork, kUnshare, kMount, kProcMount };
  Step failed = Step::kNone;  // kNone: the probe worked
  int err = 0;
  // Mount points under /proc (from /proc/self/mountinfo, binfmt_misc left out): what hides
  // parts of /proc when kProcMount fails.
  std::vector<std::string> proc_overmounts;
};

// Check 1. The probe decides; the sysctls explain a failure and give its fixes (setup_error's
// ExplainUserns, as a failed sandbox start gives them).
Check UsernsCheck(const sandbox::UsernsFacts& facts, const UsernsProbe& probe);

// Check 2: the backend OpenBackend() chose, or why none is usable.
Check LimitsCheck(const Result<std::shared_ptr<limits::LimitsBackend>>& backend);

// What the kernel offers for seccomp filters.
struct SeccompKernel {
  int mode = 0;        // prctl(PR_GET_SECCOMP): 0 none, 2 already filtered; -1 failed
  int mode_errno = 0;  // errno when mode is -1 (EINVAL: no CONFIG_SECCOMP)
  std::optional<std::string> actions_avail;  // /proc/sys/kernel/seccomp/actions_avail
};

// The configured profile, compiled.
struct SeccompSummary {
  size_t instructions = 0;
  size_t skipped = 0;  // syscall names of the profile this kernel or libseccomp lacks
};

// Check 3. `profile` is config.seccomp_profile; `compiled` is ignored for "unconfined".
Check SeccompCheck(const SeccompKernel& kernel, const std::string& profile,
                   const Result<SeccompSummary>& compiled);

// The Python program of the end-to-end run: prints "python <version>" and "<module> <version>"
// for each of the scientific stack, one a line; exits 1 naming the modules that fail to import,
// or the matplotlib backend MPLBACKEND names when it does not load.
extern const char* const kImportProgram;

// Check 4, when the rootfs or its interpreter is missing (the error of compiling a plan).
Check RootfsMissing(const std::string& rootfs, const Error& error);
// Check 4, when an earlier check failed and no sandbox can be started to test the rootfs.
Check RootfsSkipped(const std::string& rootfs, const std::string& interpreter);
// Check 4: the outcome of running kImportProgram in a sandbox on `rootfs`.
Check RootfsRun(const std::string& rootfs, const Result<sandbox::RunResult>& run);

// Check 5: whether matplotlib figures come back without the program saving them, which
// depends on the rootfs shipping the figure backend (LaunchPlan::CapturesFigures()).
// `captures` is nullopt when no plan compiles (the rootfs check says why): then a WARN, the
// worst this check can be.
Check FiguresCheck(const std::string& rootfs, std::optional<bool> captures, int max_px);

// How long the first sandbox of a warm engine ("pool", "zygote") took to be ready here, or why
// it did not start.
struct EngineTrial {
  std::string engine;
  Result<std::chrono::milliseconds> ready;
};

// Check 6: the engine `serve` uses (MCP_EXEC_ENGINE; for auto, the one it chooses from
// `trials`, and why), and whether the warm engines start here, with `preload` imported: `trials`
// is empty when an earlier check failed and none was tried. An engine that cannot start fails
// only when it is the configured one, or auto's for want of its preloads.
Check EngineCheck(const std::string& engine, const std::vector<std::string>& preload,
                  const std::vector<EngineTrial>& trials);

// A session opened as `exec` with session "new" opens one, with two calls in it: `x = 41`, then
// `x + 1`, whose value must be "42".
struct SessionTrial {
  Result<std::chrono::milliseconds> opened;  // open and the first call, or why it failed
  Result<std::string> value;                 // the second call's value
  std::optional<uint64_t> memory_bytes;      // what the session held after it
};

// Check 7: sessions (MCP_EXEC_MAX_SESSIONS and the expiry settings), and whether one works here.
// `trial` is nullopt when sessions are off or an earlier check failed (`tried` false).
Check SessionsCheck(int max_sessions, int idle_s, int max_age_s,
                    const std::optional<SessionTrial>& trial);

// "256 MiB", "1 GiB", "1536 KiB", "100 bytes".
std::string FormatBytes(uint64_t bytes);

// The environments a server would offer (DiscoverEnvironments): each with its package count, a
// warning for each named or found one it would leave out (missing, corrupt, malformed) with its
// fix, a failure when the server would refuse to start.
Check EnvironmentsCheck(const Result<exec::Offer>& offer, const std::vector<std::string>& warnings);

}  // namespace mcpexec::cli::doctor
