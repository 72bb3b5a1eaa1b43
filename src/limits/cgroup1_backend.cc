// The cgroup v1 backend (root only): a group per run in each of the memory, pids, cpu and
// cpuacct hierarchies, under "mcp-exec" in this process's own group there. v1 has no
// CLONE_INTO_CGROUP: the child moves itself in through the `tasks` files (JoinFds) first thing,
// before it waits for the go byte, so it runs nothing of the run's outside the groups.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include "limits/backends.h"
#include "limits/cgroup_fs.h"

namespace mcpexec::limits {
namespace {

constexpr const char* kControllers[] = {"memory", "pids", "cpu", "cpuacct"};

// The run's directory in each hierarchy; hierarchies that share a mount ("cpu,cpuacct") share
// a directory.
struct RunDirs {
  std::string memory, pids, cpu, cpuacct;
  std::vector<std::string> distinct;  // each directory once, in creation order
};

class Cgroup1Run final : public RunCgroup {
 public:
  Cgroup1Run(RunDirs dirs, const ResourceLimits& limits, bool memsw)
      : dirs_(std::move(dirs)),
        limits_(limits),
        memsw_(memsw),
        oom_control_(dirs_.memory, "memory.oom_control"),
        peak_(dirs_.memory, "memory.max_usage_in_bytes"),
        current_(dirs_.memory, "memory.usage_in_bytes"),
        cpu_(dirs_.cpuacct, "cpuacct.usage") {}
  ~Cgroup1Run() override {
    if (!finished_) (void)RemoveAll();
  }

  int CloneIntoFd() const override { return -1; }

  Result<void> Move(pid_t pid) override {
    for (const std::string& dir : dirs_.distinct) {
      MCPEXEC_RETURN_IF_ERROR(WriteCgroupFile(dir, "cgroup.procs", std::to_string(pid)));
    }
    return {};
  }

  Result<std::vector<UniqueFd>> JoinFds() override {
    std::vector<UniqueFd> fds;
    for (const std::string& dir : dirs_.distinct) {
      const std::string path = dir + "/tasks";
      UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
      if (!fd.Valid()) return Errno(ErrorCode::kPermissionDenied, "open(" + path + ")");
      fds.push_back(std::move(fd));
    }
    return fds;
  }

  Result<void> ExcludeCurrentUsage() override {
    MCPEXEC_ASSIGN_OR_RETURN(const uint64_t memory,
                             ReadCgroupNumber(dirs_.memory, "memory.usage_in_bytes"));
    MCPEXEC_ASSIGN_OR_RETURN(const uint64_t pids, ReadCgroupNumber(dirs_.pids, "pids.current"));
    const std::string raised = std::to_string(limits_.memory_max + memory);
    // memory.memsw.limit_in_bytes may never be below memory.limit_in_bytes: it goes up first.
    if (memsw_) {
      MCPEXEC_RETURN_IF_ERROR(
          WriteCgroupFile(dirs_.memory, "memory.memsw.limit_in_bytes", raised));
    }
    MCPEXEC_RETURN_IF_ERROR(WriteCgroupFile(dirs_.memory, "memory.limit_in_bytes", raised));
    MCPEXEC_RETURN_IF_ERROR(WriteCgroupFile(
        dirs_.pids, "pids.max", std::to_string(limits_.pids_max + ExtraTasks(pids))));
    baseline_.memory_bytes = memory;
    // The peak from here on: the program's, on top of the preloads.
    MCPEXEC_RETURN_IF_ERROR(WriteCgroupFile(dirs_.memory, "memory.max_usage_in_bytes", "0"));
    if (auto ns = ReadCgroupNumber(dirs_.cpuacct, "cpuacct.usage"); ns.ok()) {
      baseline_.cpu_ms = *ns / 1'000'000;
    }
    return {};
  }

  Usage Read() const override {
    Usage usage;
    if (auto control = oom_control_.Read(); control.ok()) {
      usage.oom_killed = FlatKeyValue(*control, "oom_kill").value_or(0) > 0;
    }
    if (auto peak = peak_.Read(); peak.ok()) {
      usage.memory_peak_bytes = std::strtoull(peak->c_str(), nullptr, 10);
    }
    if (auto now = current_.Read(); now.ok()) {
      usage.memory_current_bytes = std::strtoull(now->c_str(), nullptr, 10);
    }
    if (auto ns = cpu_.Read(); ns.ok()) {
      usage.cpu_time_ms = std::strtoull(ns->c_str(), nullptr, 10) / 1'000'000;
    }
    return baseline_.Without(usage);
  }

  Result<uint64_t> Tasks() const override {
    return ReadCgroupNumber(dirs_.pids, "pids.current");
  }

  void CloseFiles() override {
    for (CgroupFile* file : {&oom_control_, &peak_, &current_, &cpu_}) file->Close();
  }

  Result<void> Remove() override {
    finished_ = true;
    return RemoveAll();
  }

 private:
  Result<void> RemoveAll() {
    CloseFiles();
    Result<void> result;
    for (auto it = dirs_.distinct.rbegin(); it != dirs_.distinct.rend(); ++it) {
      if (auto removed = RemoveCgroupDir(*it, false); !removed.ok() && result.ok()) {
        result = std::move(removed);
      }
    }
    return result;
  }

  RunDirs dirs_;
  ResourceLimits limits_;
  bool memsw_;
  Baseline baseline_;
  CgroupFile oom_control_, peak_, current_, cpu_;  // what Read() reads, until CloseFiles()
  bool finished_ = false;
};

class Cgroup1Backend final : public LimitsBackend {
 public:
  Cgroup1Backend(const ResourceLimits& limits, std::map<std::string, std::string> bases,
                 bool memsw)
      : LimitsBackend(limits), bases_(std::move(bases)), memsw_(memsw) {}

  Backend Kind() const override { return Backend::kCgroup1; }
  std::string Location() const override {
    std::string out;
    for (const auto& [controller, base] : bases_) {
      if (out.find(base + " ") == std::string::npos) out += base + " ";
    }
    if (!out.empty()) out.pop_back();
    return out;
  }

  Result<void> CheckUsable() const override {
    for (const auto& [controller, base] : bases_) MCPEXEC_RETURN_IF_ERROR(CheckWritableDir(base));
    return Ok();
  }

  Result<std::unique_ptr<RunCgroup>> CreateRun() override {
    const std::string name = NewRunName();
    RunDirs dirs;
    auto run_dir = [&](const char* controller) -> std::string {
      return bases_.at(controller) + "/" + name;
    };
    dirs.memory = run_dir("memory");
    dirs.pids = run_dir("pids");
    dirs.cpu = run_dir("cpu");
    dirs.cpuacct = run_dir("cpuacct");
    for (const std::string* d : {&dirs.memory, &dirs.pids, &dirs.cpu, &dirs.cpuacct}) {
      bool seen = false;
      for (const std::string& e : dirs.distinct) seen = seen || e == *d;
      if (!seen) dirs.distinct.push_back(*d);
    }
    std::vector<std::string> made;
    for (const std::string& d : dirs.distinct) {
      if (mkdir(d.c_str(), 0755) != 0) {
        const int saved = errno;
        for (const std::string& m : made) rmdir(m.c_str());
        errno = saved;
        return Errno(ErrorCode::kUnavailable, "create the run's cgroup: mkdir(" + d + ")");
      }
      made.push_back(d);
    }
    auto run = std::make_unique<Cgroup1Run>(dirs, Limits(), memsw_);
    const ResourceLimits& l = Limits();
    const std::string memory = std::to_string(l.memory_max);
    MCPEXEC_RETURN_IF_ERROR(WriteCgroupFile(dirs.memory, "memory.limit_in_bytes", memory));
    if (memsw_) {
      MCPEXEC_RETURN_IF_ERROR(WriteCgroupFile(dirs.memory, "memory.memsw.limit_in_bytes", memory));
    }
    MCPEXEC_RETURN_IF_ERROR(WriteCgroupFile(dirs.pids, "pids.max", std::to_string(l.pids_max)));
    MCPEXEC_RETURN_IF_ERROR(
        WriteCgroupFile(dirs.cpu, "cpu.cfs_period_us", std::to_string(kCpuPeriodUs)));
    MCPEXEC_RETURN_IF_ERROR(
        WriteCgroupFile(dirs.cpu, "cpu.cfs_quota_us", std::to_string(CpuQuotaUs(l.cpus))));
    return std::unique_ptr<RunCgroup>(std::move(run));
  }

 private:
  std::map<std::string, std::string> bases_;  // controller -> "<its hierarchy>/.../mcp-exec"
  bool memsw_;
};

}  // namespace

Result<std::shared_ptr<LimitsBackend>> OpenCgroup1(const BackendOptions& options,
                                                   const ProcCgroupFiles& files) {
  if (geteuid() != 0) {
    return MakeError(ErrorCode::kPermissionDenied,
                     "cgroup v1 hierarchies cannot be delegated safely, so mcp-exec uses them "
                     "only as root");
  }
  std::map<std::string, std::string> bases;
  for (const char* controller : kControllers) {
    const auto mount = FindCgroup1Mount(files, controller);
    if (!mount) {
      return MakeError(ErrorCode::kUnavailable,
                       std::string("no cgroup v1 hierarchy has the ") + controller +
                           " controller");
    }
    MCPEXEC_ASSIGN_OR_RETURN(std::string own, OwnCgroup1Path(files, controller));
    const std::string base = CgroupDir(*mount, own) + "/mcp-exec";
    if (mkdir(base.c_str(), 0755) != 0 && errno != EEXIST) {
      return Errno(ErrorCode::kPermissionDenied, "mkdir(" + base + ")");
    }
    bases[controller] = base;
  }
  const bool memsw = CgroupFileExists(bases["memory"], "memory.memsw.limit_in_bytes");
  if (!memsw && HostSwapBytes() > 0) {
    return MakeError(ErrorCode::kUnavailable,
                     "the host has swap but no swap accounting (memory.memsw.*), so a run "
                     "could exceed its memory limit in swap; boot with swapaccount=1 or "
                     "disable swap");
  }
  for (const auto& [controller, base] : bases) RemoveStaleRuns(base, false);
  return std::shared_ptr<LimitsBackend>(new Cgroup1Backend(options.limits, bases, memsw));
}

}  // namespace mcpexec::limits
