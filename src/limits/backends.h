// The backends behind OpenBackend() (limits.h). Each Open* prepares its subtree and removes
// stale runs, or says why it cannot be used on this host.
#pragma once

#include <memory>

#include "base/result.h"
#include "limits/cgroup_fs.h"
#include "limits/limits.h"

namespace mcpexec::limits {

Result<std::shared_ptr<LimitsBackend>> OpenCgroup2(const BackendOptions& options,
                                                   const ProcCgroupFiles& files);
Result<std::shared_ptr<LimitsBackend>> OpenCgroup1(const BackendOptions& options,
                                                   const ProcCgroupFiles& files);

// cpu.max / cpu.cfs_quota_us for `cpus` over the 100 ms period both use.
inline constexpr uint64_t kCpuPeriodUs = 100'000;
uint64_t CpuQuotaUs(double cpus);

// The tasks of a warm run beyond the two every run has (its init and the interpreter): the
// threads its preloads started, which ExcludeCurrentUsage() adds to the pids limit.
inline uint64_t ExtraTasks(uint64_t tasks) { return tasks > 2 ? tasks - 2 : 0; }

// What a warm run held when its program started (ExcludeCurrentUsage): its accounting reports
// what the program used on top.
struct Baseline {
  uint64_t memory_bytes = 0;
  uint64_t cpu_ms = 0;

  Usage Without(Usage usage) const {
    auto less = [](std::optional<uint64_t>& value, uint64_t base) {
      if (value) *value = *value > base ? *value - base : 0;
    };
    less(usage.memory_peak_bytes, memory_bytes);
    less(usage.memory_current_bytes, memory_bytes);
    less(usage.cpu_time_ms, cpu_ms);
    return usage;
  }
};

}  // namespace mcpexec::limits
