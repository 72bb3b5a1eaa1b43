// File-level helpers shared by the cgroup backends: where the hierarchies are mounted, which
// cgroup this process is in, reading and writing interface files, naming run cgroups after
// their owner, and removing the run cgroups of owners that died.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace mcpexec::limits {

// The mount point of the cgroup2 filesystem, or of the v1 hierarchy that has `controller`.
// The second member is the mount's root within the hierarchy ("/" unless bind-mounted).
struct CgroupMount {
  std::string mount_point;
  std::string root;
};
// /proc/self/mountinfo and /proc/self/cgroup, read once when a backend is chosen.
struct ProcCgroupFiles {
  std::string mountinfo;
  std::string cgroup;
};
Result<ProcCgroupFiles> ReadProcCgroupFiles();

std::optional<CgroupMount> FindCgroup2Mount(const ProcCgroupFiles& files);
std::optional<CgroupMount> FindCgroup1Mount(const ProcCgroupFiles& files,
                                            std::string_view controller);

// This process's cgroup: the "0::" line of /proc/self/cgroup for v2, or the line whose
// controller list has `controller` for v1.
Result<std::string> OwnCgroup2Path(const ProcCgroupFiles& files);
Result<std::string> OwnCgroup1Path(const ProcCgroupFiles& files, std::string_view controller);

// The directory of cgroup `path` under `mount`.
std::string CgroupDir(const CgroupMount& mount, const std::string& path);

// Interface files. Errors name the file and errno.
Result<std::string> ReadCgroupFile(const std::string& dir, const char* name);
Result<void> WriteCgroupFile(const std::string& dir, const char* name, std::string_view value);
// A file that holds one decimal number ("memory.current").
Result<uint64_t> ReadCgroupNumber(const std::string& dir, const char* name);
bool CgroupFileExists(const std::string& dir, const char* name);

// An interface file opened once and read from its start each time: a session reads its cgroup's
// usage around every call, and a pread of an open file costs a third of an open, read and close
// (kernfs looks the path up each time). Reads by path when it could not be opened. For files
// whose text the kernel makes whole at the first read (one seq_file record: memory.current,
// cpu.stat, memory.oom_control...), not lists such as cgroup.procs: a first read that leaves
// room in its 4 KiB buffer is taken as all of it.
class CgroupFile {
 public:
  CgroupFile() = default;
  CgroupFile(const std::string& dir, const char* name);
  Result<std::string> Read() const;
  // Before the cgroup is removed: nothing of it stays open.
  void Close() { fd_.Reset(); }

 private:
  std::string path_;
  UniqueFd fd_;
};
// The directory exists and this process may create cgroups in it; kUnavailable naming it.
Result<void> CheckWritableDir(const std::string& dir);

// The value of `key` in a flat-keyed file ("oom_kill 3\nmax 1\n").
std::optional<uint64_t> FlatKeyValue(std::string_view text, std::string_view key);
// Space-separated words ("cpu memory pids").
bool HasWord(std::string_view text, std::string_view word);

// "run-<pid>-<start time>-": a prefix unique to this process (pids are reused, start times
// make them unique), so that concurrent servers sharing a parent never touch each other's runs.
const std::string& RunNamePrefix();
// The prefix and a number no other run of this process has had: one counter for every backend,
// since a run's cgroup may outlive its answer (sandbox/teardown.h) and a backend opened later
// must not reuse its name. Thread-safe.
std::string NewRunName();

// True when the run cgroup `name` belongs to a process that is no longer alive.
bool IsStaleRun(std::string_view name);

// SIGKILLs every process listed in dir/cgroup.procs (v1 has no cgroup.kill), through
// KillListedMembers. Returns how many it signalled.
int KillListed(const std::string& dir);

// The cleanup of KillListed with the reading of cgroup.procs given as `read_procs` (a seam for
// tests). A pid read from cgroup.procs may be gone and reused by an unrelated process before
// it is signalled, and the signal would then come from root. So each listed pid is first
// pinned with pidfd_open, `read_procs` is called a second time, and only the pinned processes
// whose pid the second list still has get SIGKILL, through their pidfd: a pid listed after
// its pidfd was opened is that very process (a pid is unique among live processes), and if it
// has died since, pidfd_send_signal reaches nothing. Returns how many it signalled.
int KillListedMembers(const std::function<Result<std::string>()>& read_procs);

// rmdir(dir), killing what is still listed and retrying for up to ~2 s while the kernel
// finishes tearing the processes down.
Result<void> RemoveCgroupDir(const std::string& dir, bool has_cgroup_kill);

// Removes every stale run cgroup in `parent`; returns how many it removed.
int RemoveStaleRuns(const std::string& parent, bool has_cgroup_kill);

// Bytes of swap the host has (SwapTotal): when it has any, a run's memory limit must also
// cover swap.
uint64_t HostSwapBytes();

}  // namespace mcpexec::limits
