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

}  // namespace mcpexec::limits
