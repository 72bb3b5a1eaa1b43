#include "limits/limits.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "limits/backends.h"

namespace mcpexec::limits {
namespace {

// numpy, OpenBLAS and thread stacks reserve far more address space than they touch, so the
// address-space limit is a backstop against runaway allocation, not a memory limit.
constexpr uint64_t kMinAddressSpace = 1ull << 30;

class RlimitBackend final : public LimitsBackend {
 public:
  explicit RlimitBackend(const ResourceLimits& limits) : LimitsBackend(limits) {}
  Backend Kind() const override { return Backend::kRlimit; }
  Result<std::unique_ptr<RunCgroup>> CreateRun() override {
    return std::unique_ptr<RunCgroup>();
  }
  std::vector<RlimitSetting> ProgramRlimits() const override {
    const ResourceLimits& l = Limits();
    // CPU time is per process: a run's share over its longest allowed wall-clock time. The
    // hard limit one second later turns the ignorable SIGXCPU into SIGKILL.
    const auto cpu_s = static_cast<rlim_t>(std::ceil(l.cpus * l.max_timeout_s));
    const rlim_t as = std::max<uint64_t>(4 * l.memory_max, kMinAddressSpace);
    return {{RLIMIT_CPU, cpu_s, cpu_s + 1},
            {RLIMIT_AS, as, as},
            {RLIMIT_NPROC, l.pids_max, l.pids_max}};
  }
};

// What makes limits usable, for every error of OpenBackend.
std::vector<std::string> BackendFixes() {
  return {"run mcp-exec in a cgroup v2 scope delegated to it:\n"
          "  systemd-run --user --scope -p Delegate=yes mcp-exec serve ...",
          "install the unit packaging/systemd/mcp-exec.service (or the user unit), which has "
          "Delegate=yes",
          "run as root on a cgroup v1 host (MCP_EXEC_LIMITS=cgroup1)",
          "or accept degraded limits: MCP_EXEC_LIMITS=rlimit (no memory limit; cpu time, process "
          "count and an address-space backstop only)"};
}

}  // namespace

const char* BackendName(Backend backend) {
  switch (backend) {
    case Backend::kCgroup2: return "cgroup2";
    case Backend::kCgroup1: return "cgroup1";
    case Backend::kRlimit: return "rlimit";
  }
  return "unknown";
}

uint64_t CpuQuotaUs(double cpus) {
  return std::max<uint64_t>(1000, static_cast<uint64_t>(std::llround(cpus * kCpuPeriodUs)));
}

std::shared_ptr<LimitsBackend> MakeRlimitBackend(const ResourceLimits& limits) {
  return std::make_shared<RlimitBackend>(limits);
}

Result<std::shared_ptr<LimitsBackend>> OpenBackend(const BackendOptions& options) {
  if (options.mode == LimitsMode::kRlimit) return MakeRlimitBackend(options.limits);
  MCPEXEC_ASSIGN_OR_RETURN(const ProcCgroupFiles files, ReadProcCgroupFiles());
  switch (options.mode) {
    case LimitsMode::kRlimit:
      break;
    case LimitsMode::kCgroup2: {
      auto v2 = OpenCgroup2(options, files);
      if (v2.ok()) return v2;
      return MakeError(v2.error().code, "cgroup v2 limits (MCP_EXEC_LIMITS=cgroup2) are not "
                                        "usable: " + v2.error().message)
          .WithFixes(BackendFixes());
    }
    case LimitsMode::kCgroup1: {
      auto v1 = OpenCgroup1(options, files);
      if (v1.ok()) return v1;
      return MakeError(v1.error().code, "cgroup v1 limits (MCP_EXEC_LIMITS=cgroup1) are not "
                                        "usable: " + v1.error().message)
          .WithFixes(BackendFixes());
    }
    case LimitsMode::kAuto:
      break;
  }
  auto v2 = OpenCgroup2(options, files);
  if (v2.ok()) return v2;
  auto v1 = OpenCgroup1(options, files);
  if (v1.ok()) return v1;
  return MakeError(ErrorCode::kUnavailable,
                   "no cgroup backend is usable, and mcp-exec does not run code without its "
                   "memory, pids and cpu limits:\n  - cgroup v2: " + v2.error().message +
                       "\n  - cgroup v1: " + v1.error().message)
      .WithFixes(BackendFixes());
}

}  // namespace mcpexec::limits
