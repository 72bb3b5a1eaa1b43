// Small syscall wrappers for parent-side code (never for the post-clone child).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace mcpexec {

// pipe2(O_CLOEXEC | extra_flags).
Result<Pipe> MakePipe(int extra_flags = 0);

// A connected AF_UNIX SOCK_SEQPACKET pair, CLOEXEC: a pipe whose messages keep their bounds and
// may carry descriptors. Either end may be used as `read` or `write`.
Result<Pipe> MakeSeqpacketPair();

// openat2(2) that stays beneath `dirfd` and follows no link of any kind (RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, plus `extra_resolve`), with O_CLOEXEC |
// O_NOFOLLOW | O_NOCTTY added to `flags`. Returns the fd, or -1 with errno set.
int OpenBeneath(int dirfd, const char* path, int flags, mode_t mode = 0,
                uint64_t extra_resolve = 0);

// Writes all of `data` to a blocking fd, retrying on EINTR and short writes.
Result<void> WriteAll(int fd, std::string_view data);

// Reads a whole (small) file, such as a file under /proc.
Result<std::string> ReadFile(const std::string& path);

// The fields of /proc/<pid>/stat ("self" for this process): element i is field i + 1 of
// proc(5), so [0] is the pid, [1] the command name without its parentheses, [21] the start
// time. The command name may hold spaces and parentheses; fields are split after its last ')'.
Result<std::vector<std::string>> ReadProcStat(const std::string& pid);

// The value of `key` ("VmHWM", say) in the text of /proc/<pid>/status, in bytes: the kB figure
// of the line that starts with "key:". Lines are read as fields: the Name line, whose text the
// process sets itself (prctl(PR_SET_NAME)), is never taken for another. Nullopt when absent.
std::optional<uint64_t> ProcStatusBytes(std::string_view status, std::string_view key);

// Opens `path` for writing (no create, no truncate) and writes `data` in one write(2),
// as /proc/PID/uid_map requires.
Result<void> WriteProcFile(const std::string& path, std::string_view data);

// Sets O_NONBLOCK on fd.
Result<void> SetNonBlocking(int fd);

// Raises the soft open-file limit (RLIMIT_NOFILE) to the hard one, where it is lower; the soft
// limit then, RLIM_INFINITY when unlimited, 0 when it cannot be read.
rlim_t RaiseSoftOpenFileLimit();

}  // namespace mcpexec
