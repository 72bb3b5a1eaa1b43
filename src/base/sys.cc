#include "base/sys.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace mcpexec {

Result<Pipe> MakePipe(int extra_flags) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | extra_flags) != 0) {
    return Errno(ErrorCode::kResourceExhausted, "pipe2");
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Result<Pipe> MakeSeqpacketPair() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return Errno(ErrorCode::kResourceExhausted, "socketpair");
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

int OpenBeneath(int dirfd, const char* path, int flags, mode_t mode, uint64_t extra_resolve) {
  open_how how{};
  // openat2 refuses O_PATH with any flag outside O_PATH_FLAGS, O_NOCTTY included.
  const int added = (flags & O_PATH) != 0 ? O_CLOEXEC | O_NOFOLLOW : O_CLOEXEC | O_NOFOLLOW | O_NOCTTY;
  how.flags = static_cast<uint64_t>(flags | added);
  how.mode = mode;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | extra_resolve;
  int fd;
  do {
    fd = static_cast<int>(syscall(SYS_openat2, dirfd, path, &how, sizeof how));
  } while (fd < 0 && errno == EINTR);
  return fd;
}

Result<void> WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(ErrorCode::kInternal, "write");
    }
    if (n == 0) return MakeError(ErrorCode::kInternal, "write wrote nothing");  // never loop
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Ok();
}

Result<std::vector<std::string>> ReadProcStat(const std::string& pid) {
  const std::string path = "/proc/" + pid + "/stat";
  MCPEXEC_ASSIGN_OR_RETURN(std::string stat, ReadFile(path));
  const size_t lparen = stat.find('(');
  const size_t rparen = stat.rfind(')');
  if (lparen == std::string::npos || rparen == std::string::npos || rparen < lparen) {
    return MakeError(ErrorCode::kInternal, "unexpected format of " + path);
  }
  std::vector<std::string> fields = {stat.substr(0, lparen - 1),
                                     stat.substr(lparen + 1, rparen - lparen - 1)};
  std::istringstream rest(stat.substr(rparen + 1));
  for (std::string field; rest >> field;) fields.push_back(std::move(field));
  return fields;
}

std::optional<uint64_t> ProcStatusBytes(std::string_view status, std::string_view key) {
  // The kernel escapes a newline in the Name line's text, so every line break is the kernel's.
  for (size_t start = 0; start < status.size();) {
    size_t end = status.find('\n', start);
    if (end == std::string_view::npos) end = status.size();
    const std::string_view line = status.substr(start, end - start);
    start = end + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key ||
        line[key.size()] != ':') {
      continue;
    }
    const std::string value(line.substr(key.size() + 1));
    char* rest = nullptr;
    const unsigned long long kib = std::strtoull(value.c_str(), &rest, 10);
    if (rest == value.c_str()) return std::nullopt;
    return static_cast<uint64_t>(kib) * 1024;
  }
  return std::nullopt;
}

Result<std::string> ReadFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.Valid()) return Errno(ErrorCode::kNotFound, "open(" + path + ")");
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd.Get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(ErrorCode::kInternal, "read(" + path + ")");
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Result<void> WriteProcFile(const std::string& path, std::string_view data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.Valid()) return Errno(ErrorCode::kPermissionDenied, "open(" + path + ")");
  const ssize_t n = ::write(fd.Get(), data.data(), data.size());
  if (n < 0) return Errno(ErrorCode::kPermissionDenied, "write(" + path + ")");
  if (static_cast<size_t>(n) != data.size()) {
    return MakeError(ErrorCode::kInternal, "short write to " + path);
  }
  return Ok();
}

Result<void> SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Errno(ErrorCode::kInternal, "fcntl(O_NONBLOCK)");
  }
  return Ok();
}

rlim_t RaiseSoftOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur;
}

}  // namespace mcpexec
