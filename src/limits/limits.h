// Resource limits per run: what they are, which backend enforces them, and what a run used.
//
// A backend is chosen once at start (OpenBackend) and shared by every run. Cgroup backends give
// each run a cgroup of its own (RunCgroup) that the sandbox's init is cloned into, and read the
// run's accounting from it at the end; the rlimit backend only adds rlimits to the program.
// Limits are never silently weaker than configured: a backend that cannot enforce them is an
// error at start, with the fix.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/limits_mode.h"
#include "base/result.h"
#include "base/unique_fd.h"

namespace mcpexec::limits {

inline constexpr uint64_t kDefaultMemoryMax = 256ull << 20;
inline constexpr uint64_t kDefaultPidsMax = 128;
inline constexpr double kDefaultCpus = 1.0;

struct ResourceLimits {
  uint64_t memory_max = kDefaultMemoryMax;  // bytes, no swap
  uint64_t pids_max = kDefaultPidsMax;      // processes and threads, the sandbox's init included
  double cpus = kDefaultCpus;               // CPU bandwidth, in CPUs
  // Only the rlimit backend uses this: the longest a run may last, which bounds RLIMIT_CPU.
  int max_timeout_s = 300;
};

enum class Backend { kCgroup2, kCgroup1, kRlimit };
// "cgroup2", "cgroup1", "rlimit": the names results and logs use.
const char* BackendName(Backend backend);

// What one run used, read from its cgroup (or from the init's rusage for the rlimit backend).
struct Usage {
  bool oom_killed = false;
  std::optional<uint64_t> memory_peak_bytes;
  std::optional<uint64_t> cpu_time_ms;
  std::optional<uint64_t> memory_current_bytes;  // what it holds now (Read; a session's)
};

struct RlimitSetting {
  int resource;
  rlim_t soft, hard;
};

// The cgroup of one run. Destruction kills what is left in it and removes it.
class RunCgroup {
 public:
  virtual ~RunCgroup() = default;
  // A directory fd for clone3's CLONE_INTO_CGROUP, or -1 when the child joins itself
  // (JoinFds).
  virtual int CloneIntoFd() const = 0;
  // Moves in a running process that has no code of the run in it yet: a zygote's fork, which
  // makes the run's processes once it is in (zygote.h).
  virtual Result<void> Move(pid_t pid) = 0;
  // Descriptors through which a single-threaded process moves itself in by writing "0" to each
  // (cgroup v1's `tasks` files, one a hierarchy): a cold sandbox's first process, and a
  // zygote's fork in place of Move. A thread that moves itself skips the kernel's lock on every
  // process's membership (Linux 6.4), whose writer waits for an RCU grace period (9 ms median,
  // 23 at p90, on this 2-core machine). Empty on cgroup v2: a cold sandbox is cloned into its
  // cgroup (CloneIntoFd), a zygote's fork is moved (Move).
  virtual Result<std::vector<UniqueFd>> JoinFds() { return std::vector<UniqueFd>{}; }
  // A warm start: raises the memory limit by what the run holds now, and the pids limit by its
  // tasks past init and the interpreter, so that the preloads the interpreter imported do not
  // count against the program, and takes what it holds out of the accounting Read() reads.
  // Call before the program starts.
  virtual Result<void> ExcludeCurrentUsage() = 0;
  // The run's accounting so far, while it runs (a session between calls). Thread-safe.
  virtual Usage Read() const = 0;
  // How many tasks (processes and threads) are in the cgroup now, zombies included until they
  // are reaped: pids.current.
  virtual Result<uint64_t> Tasks() const = 0;
  // Once the run's accounting has been read for the last time: closes what the cgroup keeps
  // open (its interface files, and on cgroup v2 its directory), so that a finished run waiting
  // in the teardown's backlog holds no descriptor of it. Nothing may read its accounting after:
  // Read() would open each file again, and on cgroup v2 memory.peak's would be the cgroup's
  // whole peak, not the program's.
  virtual void CloseFiles() = 0;
  // Kills what is left and removes the cgroup. Call after the sandbox's init has been reaped.
  virtual Result<void> Remove() = 0;
};

class LimitsBackend {
 public:
  virtual ~LimitsBackend() = default;
  virtual Backend Kind() const = 0;
  const ResourceLimits& Limits() const { return limits_; }
  // The cgroup for a new run; nullptr for the rlimit backend. Thread-safe.
  virtual Result<std::unique_ptr<RunCgroup>> CreateRun() = 0;
  // Rlimits the program gets on top of the ones every run has.
  virtual std::vector<RlimitSetting> ProgramRlimits() const { return {}; }
  // Where the backend keeps its cgroups, for logs and `doctor`; empty for rlimit.
  virtual std::string Location() const { return {}; }
  // Whether new runs can still get their cgroups: the directories the backend creates them in
  // still exist and are writable (someone may have removed them, or a cgroup v2 delegation
  // ended). Thread-safe; kUnavailable naming the directory.
  virtual Result<void> CheckUsable() const { return Ok(); }

 protected:
  explicit LimitsBackend(const ResourceLimits& limits) : limits_(limits) {}

 private:
  ResourceLimits limits_;
};

struct BackendOptions {
  LimitsMode mode = LimitsMode::kAuto;  // MCP_EXEC_LIMITS (base/limits_mode.h)
  ResourceLimits limits;
  // MCP_EXEC_CGROUP: a cgroup v2 directory mcp-exec may manage alone (delegated to its user).
  // Empty: its own cgroup (moved into a "supervisor" leaf), or a "mcp-exec" child of the root
  // cgroup when it runs there.
  std::string cgroup;
};

// Chooses and prepares the backend: auto = cgroup v2, else cgroup v1 when root. Removes the
// cgroups of earlier servers that died. When none is usable, the error says why for each and
// gives the fix (a delegated scope, the unit file, or MCP_EXEC_LIMITS=rlimit).
Result<std::shared_ptr<LimitsBackend>> OpenBackend(const BackendOptions& options);

// The rlimit backend: no cgroups, rlimits for cpu time, processes and an address-space
// backstop. Never chosen by auto.
std::shared_ptr<LimitsBackend> MakeRlimitBackend(const ResourceLimits& limits);

}  // namespace mcpexec::limits
