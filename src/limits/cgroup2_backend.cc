// The cgroup v2 backend: one leaf cgroup per run under a subtree mcp-exec owns, entered
// atomically with clone3's CLONE_INTO_CGROUP.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "base/sys.h"
#include "base/unique_fd.h"
#include "limits/backends.h"
#include "limits/cgroup_fs.h"

namespace mcpexec::limits {
namespace {

constexpr const char* kControllers[] = {"memory", "pids", "cpu"};
constexpr const char* kEnableControllers = "+memory +pids +cpu";

class Cgroup2Run final : public RunCgroup {
 public:
  Cgroup2Run(std::string dir, UniqueFd fd, const ResourceLimits& limits)
      : dir_(std::move(dir)),
        fd_(std::move(fd)),
        limits_(limits),
        events_(dir_, "memory.events"),
        current_(dir_, "memory.current"),
        cpu_stat_(dir_, "cpu.stat") {}
  ~Cgroup2Run() override {
    if (finished_) return;
    CloseFiles();
    (void)RemoveCgroupDir(dir_, true);
  }

  int CloneIntoFd() const override { return fd_.Get(); }
  Result<void> Move(pid_t pid) override {
    return WriteCgroupFile(dir_, "cgroup.procs", std::to_string(pid));
  }

  Result<void> ExcludeCurrentUsage() override {
    MCPEXEC_ASSIGN_OR_RETURN(const uint64_t memory, ReadCgroupNumber(dir_, "memory.current"));
    MCPEXEC_ASSIGN_OR_RETURN(const uint64_t pids, ReadCgroupNumber(dir_, "pids.current"));
    MCPEXEC_RETURN_IF_ERROR(
        WriteCgroupFile(dir_, "memory.max", std::to_string(limits_.memory_max + memory)));
    MCPEXEC_RETURN_IF_ERROR(WriteCgroupFile(dir_, "pids.max",
                                            std::to_string(limits_.pids_max + ExtraTasks(pids))));
    baseline_.memory_bytes = memory;
    // The peak from here on (Linux 6.12: a write to memory.peak resets it for that descriptor).
    // Older kernels keep the cgroup's whole peak, the preloads' import included.
    peak_.Reset(openat(fd_.Get(), "memory.peak", O_RDWR | O_CLOEXEC));
    if (peak_.Valid() && write(peak_.Get(), "reset\n", 6) != 6) peak_.Reset();
    if (auto stat = ReadCgroupFile(dir_, "cpu.stat"); stat.ok()) {
      baseline_.cpu_ms = FlatKeyValue(*stat, "usage_usec").value_or(0) / 1000;
    }
    return {};
  }

  Usage Read() const override {
    Usage usage;
    if (auto events = events_.Read(); events.ok()) {
      usage.oom_killed = FlatKeyValue(*events, "oom_kill").value_or(0) > 0;
    }
    char text[32] = {};
    if (peak_.Valid() && pread(peak_.Get(), text, sizeof text - 1, 0) > 0) {
      usage.memory_peak_bytes = std::strtoull(text, nullptr, 10);
    } else if (auto peak = ReadCgroupFile(dir_, "memory.peak"); peak.ok()) {
      usage.memory_peak_bytes = std::strtoull(peak->c_str(), nullptr, 10);
    }
    if (auto now = current_.Read(); now.ok()) {
      usage.memory_current_bytes = std::strtoull(now->c_str(), nullptr, 10);
    }
    if (auto stat = cpu_stat_.Read(); stat.ok()) {
      if (auto usec = FlatKeyValue(*stat, "usage_usec")) usage.cpu_time_ms = *usec / 1000;
    }
    return baseline_.Without(usage);
  }

  Result<uint64_t> Tasks() const override { return ReadCgroupNumber(dir_, "pids.current"); }

  // memory.peak too: its value, reset for the program, is the run's and was read before this.
  void CloseFiles() override {
    for (CgroupFile* file : {&events_, &current_, &cpu_stat_}) file->Close();
    peak_.Reset();
    fd_.Reset();
  }

  Result<void> Remove() override {
    finished_ = true;
    CloseFiles();
    return RemoveCgroupDir(dir_, true);
  }

 private:
  std::string dir_;
  UniqueFd fd_;
  ResourceLimits limits_;
  Baseline baseline_;
  UniqueFd peak_;  // memory.peak, reset when the program started
  CgroupFile events_, current_, cpu_stat_;  // what Read() reads
  bool finished_ = false;
};

class Cgroup2Backend final : public LimitsBackend {
 public:
  Cgroup2Backend(const ResourceLimits& limits, std::string base, bool swap_max)
      : LimitsBackend(limits), base_(std::move(base)), swap_max_(swap_max) {}

  Backend Kind() const override { return Backend::kCgroup2; }
  std::string Location() const override { return base_; }
  Result<void> CheckUsable() const override { return CheckWritableDir(base_); }

  Result<std::unique_ptr<RunCgroup>> CreateRun() override {
    const std::string dir = base_ + "/" + NewRunName();
    if (mkdir(dir.c_str(), 0755) != 0) {
      return Errno(ErrorCode::kUnavailable, "create the run's cgroup: mkdir(" + dir + ")");
    }
    UniqueFd fd(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd.Valid()) {
      const int saved = errno;
      rmdir(dir.c_str());
      errno = saved;
      return Errno(ErrorCode::kInternal, "open(" + dir + ")");
    }
    // From here the run owns the directory and removes it if a limit cannot be written.
    auto run = std::make_unique<Cgroup2Run>(dir, std::move(fd), Limits());
    const ResourceLimits& l = Limits();
    MCPEXEC_RETURN_IF_ERROR(WriteCgroupFile(dir, "memory.max", std::to_string(l.memory_max)));
    if (swap_max_) MCPEXEC_RETURN_IF_ERROR(WriteCgroupFile(dir, "memory.swap.max", "0"));
    MCPEXEC_RETURN_IF_ERROR(WriteCgroupFile(dir, "pids.max", std::to_string(l.pids_max)));
    MCPEXEC_RETURN_IF_ERROR(WriteCgroupFile(
        dir, "cpu.max",
        std::to_string(CpuQuotaUs(l.cpus)) + " " + std::to_string(kCpuPeriodUs)));
    return std::unique_ptr<RunCgroup>(std::move(run));
  }

 private:
  std::string base_;
  bool swap_max_;
};

Result<void> RequireControllers(const std::string& dir, const std::string& fix) {
  MCPEXEC_ASSIGN_OR_RETURN(std::string available, ReadCgroupFile(dir, "cgroup.controllers"));
  std::string missing;
  for (const char* c : kControllers) {
    if (!HasWord(available, c)) missing += std::string(missing.empty() ? "" : ", ") + c;
  }
  if (missing.empty()) return {};
  return MakeError(ErrorCode::kUnavailable,
                   "the " + missing + " controller(s) are not available in " + dir + " (" + fix +
                       ")");
}

// Enables the controllers for the children of `dir`. The kernel refuses (EBUSY) while `dir`
// holds processes ("no internal processes"); others starting next to us may still be moving
// out, so a short retry.
Result<void> EnableControllers(const std::string& dir) {
  MCPEXEC_ASSIGN_OR_RETURN(std::string enabled, ReadCgroupFile(dir, "cgroup.subtree_control"));
  bool all = true;
  for (const char* c : kControllers) all = all && HasWord(enabled, c);
  if (all) return {};
  for (int attempt = 0;; ++attempt) {
    auto written = WriteCgroupFile(dir, "cgroup.subtree_control", kEnableControllers);
    if (written.ok()) return {};
    if (written.error().sys_errno != EBUSY || attempt == 50) {
      if (written.error().sys_errno == EBUSY) {
        auto procs = ReadCgroupFile(dir, "cgroup.procs");
        std::string list = procs.ok() ? *procs : "";
        for (char& ch : list) ch = ch == '\n' ? ' ' : ch;
        return MakeError(ErrorCode::kUnavailable,
                         dir + " holds other processes (" + list +
                             "), so controllers cannot be enabled for its children; start "
                             "mcp-exec in a cgroup of its own (systemd-run --user --scope -p "
                             "Delegate=yes mcp-exec ...), or set MCP_EXEC_CGROUP to an empty "
                             "delegated cgroup");
      }
      return std::move(written).error();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Moves this whole process into `leaf` (created if needed) so that its current cgroup may
// have children with controllers.
Result<void> MoveSelfInto(const std::string& leaf) {
  if (mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
    return Errno(ErrorCode::kPermissionDenied, "mkdir(" + leaf + ")");
  }
  return WriteCgroupFile(leaf, "cgroup.procs", std::to_string(getpid()));
}

constexpr const char* kDelegateFix =
    "run mcp-exec in a delegated cgroup: systemd-run --user --scope -p Delegate=yes mcp-exec "
    "..., or the unit packaging/systemd/mcp-exec.service with Delegate=yes";

}  // namespace

Result<std::shared_ptr<LimitsBackend>> OpenCgroup2(const BackendOptions& options,
                                                   const ProcCgroupFiles& files) {
  const auto mount = FindCgroup2Mount(files);
  if (!mount) return MakeError(ErrorCode::kUnavailable, "no cgroup2 filesystem is mounted");
  std::string base;
  if (!options.cgroup.empty()) {
    base = options.cgroup;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    if (access(base.c_str(), F_OK) != 0) {
      // Created in a delegated parent, which then must hold no processes of its own.
      const std::string parent = base.substr(0, base.rfind('/'));
      MCPEXEC_RETURN_IF_ERROR(RequireControllers(parent, kDelegateFix));
      MCPEXEC_RETURN_IF_ERROR(EnableControllers(parent));
      if (mkdir(base.c_str(), 0755) != 0 && errno != EEXIST) {
        return Errno(ErrorCode::kPermissionDenied, "mkdir(" + base + ") for MCP_EXEC_CGROUP");
      }
    }
    MCPEXEC_RETURN_IF_ERROR(RequireControllers(base, kDelegateFix));
  } else {
    MCPEXEC_ASSIGN_OR_RETURN(std::string own, OwnCgroup2Path(files));
    const std::string own_dir = CgroupDir(*mount, own);
    if (own == "/") {
      // The root cgroup may hold processes and children at once; a child of its own keeps
      // mcp-exec's runs together.
      MCPEXEC_RETURN_IF_ERROR(RequireControllers(own_dir, "they are held by cgroup v1 hierarchies or disabled"));
      MCPEXEC_RETURN_IF_ERROR(EnableControllers(own_dir));
      base = own_dir + "/mcp-exec";
      if (mkdir(base.c_str(), 0755) != 0 && errno != EEXIST) {
        return Errno(ErrorCode::kPermissionDenied, "mkdir(" + base + ")")
            .WithContext(std::string("the root cgroup is not writable (") + kDelegateFix + ")");
      }
    } else {
      MCPEXEC_RETURN_IF_ERROR(RequireControllers(own_dir, kDelegateFix));
      if (access((own_dir + "/cgroup.subtree_control").c_str(), W_OK) != 0 ||
          access(own_dir.c_str(), W_OK) != 0) {
        return MakeError(ErrorCode::kPermissionDenied,
                         "this process's cgroup " + own_dir + " is not delegated to it (" +
                             kDelegateFix + ")");
      }
      base = own_dir;
      MCPEXEC_RETURN_IF_ERROR(MoveSelfInto(base + "/supervisor"));
    }
  }
  if (access(base.c_str(), W_OK) != 0) {
    return Errno(ErrorCode::kPermissionDenied, "access(" + base + ", W_OK)")
        .WithContext(std::string("cannot create run cgroups in ") + base + " (" + kDelegateFix +
                     ")");
  }
  MCPEXEC_RETURN_IF_ERROR(EnableControllers(base));
  // memory.swap.max is missing when swap accounting is off; that is only acceptable when the
  // host has no swap to escape to.
  const bool swap_max = CgroupFileExists(base, "memory.swap.max");
  if (!swap_max && HostSwapBytes() > 0) {
    return MakeError(ErrorCode::kUnavailable,
                     "the host has swap but no swap accounting (memory.swap.max), so a run "
                     "could exceed its memory limit in swap; boot with swapaccount=1 or "
                     "disable swap");
  }
  RemoveStaleRuns(base, true);
  return std::shared_ptr<LimitsBackend>(
      new Cgroup2Backend(options.limits, base, swap_max));
}

}  // namespace mcpexec::limits
