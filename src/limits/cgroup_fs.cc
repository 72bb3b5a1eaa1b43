#include "limits/cgroup_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <chrono>
#include <thread>

#include "base/sys.h"

namespace mcpexec::limits {
namespace {

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

template <typename T>
std::optional<T> ParseNumber(std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<uint64_t> StartTime(pid_t pid) {
  auto fields = ReadProcStat(std::to_string(pid));
  if (!fields.ok() || fields->size() < 22) return std::nullopt;
  return ParseNumber<uint64_t>((*fields)[21]);
}

std::optional<CgroupMount> FindMount(const std::string& mountinfo, bool v2,
                                     std::string_view controller) {
  for (std::string_view line : Split(mountinfo, '\n')) {
    // "36 25 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory"
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    const auto head = Split(line.substr(0, dash), ' ');
    const auto tail = Split(line.substr(dash + 3), ' ');
    if (head.size() < 5 || tail.size() < 3) continue;
    if (v2 ? tail[0] != "cgroup2" : tail[0] != "cgroup") continue;
    if (!v2) {
      bool has = false;
      for (std::string_view option : Split(tail[2], ',')) has = has || option == controller;
      if (!has) continue;
    }
    return CgroupMount{std::string(head[4]), std::string(head[3])};
  }
  return std::nullopt;
}

}  // namespace

Result<ProcCgroupFiles> ReadProcCgroupFiles() {
  ProcCgroupFiles files;
  MCPEXEC_ASSIGN_OR_RETURN(files.mountinfo, ReadFile("/proc/self/mountinfo"));
  MCPEXEC_ASSIGN_OR_RETURN(files.cgroup, ReadFile("/proc/self/cgroup"));
  return files;
}

std::optional<CgroupMount> FindCgroup2Mount(const ProcCgroupFiles& files) {
  return FindMount(files.mountinfo, true, {});
}
std::optional<CgroupMount> FindCgroup1Mount(const ProcCgroupFiles& files,
                                            std::string_view controller) {
  return FindMount(files.mountinfo, false, controller);
}

Result<std::string> OwnCgroup2Path(const ProcCgroupFiles& files) {
  for (std::string_view line : Split(files.cgroup, '\n')) {
    if (line.starts_with("0::")) return std::string(line.substr(3));
  }
  return MakeError(ErrorCode::kNotFound, "/proc/self/cgroup has no cgroup v2 entry");
}

Result<std::string> OwnCgroup1Path(const ProcCgroupFiles& files, std::string_view controller) {
  for (std::string_view line : Split(files.cgroup, '\n')) {
    const auto parts = Split(line, ':');
    if (parts.size() < 3) continue;
    for (std::string_view c : Split(parts[1], ',')) {
      if (c == controller) return std::string(line.substr(parts[0].size() + parts[1].size() + 2));
    }
  }
  return MakeError(ErrorCode::kNotFound,
                   "/proc/self/cgroup has no cgroup v1 entry for " + std::string(controller));
}

std::string CgroupDir(const CgroupMount& mount, const std::string& path) {
  std::string relative = path;
  if (mount.root != "/" && relative.starts_with(mount.root)) {
    relative = relative.substr(mount.root.size());
  }
  while (!relative.empty() && relative.back() == '/') relative.pop_back();
  if (!relative.empty() && relative.front() != '/') relative.insert(0, "/");
  return mount.mount_point + relative;
}

Result<std::string> ReadCgroupFile(const std::string& dir, const char* name) {
  return ReadFile(dir + "/" + name);
}

CgroupFile::CgroupFile(const std::string& dir, const char* name)
    : path_(dir + "/" + name), fd_(open(path_.c_str(), O_RDONLY | O_CLOEXEC)) {}

Result<std::string> CgroupFile::Read() const {
  if (!fd_.Valid()) return ReadFile(path_);
  std::string out;
  char buf[4096];
  for (off_t offset = 0;;) {
    const ssize_t n = pread(fd_.Get(), buf, sizeof buf, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(ErrorCode::kInternal, "read(" + path_ + ")");
    if (n == 0) return out;
    // One read, not two, per file: see the class's comment.
    if (offset == 0 && static_cast<size_t>(n) < sizeof buf) {
      return std::string(buf, static_cast<size_t>(n));
    }
    out.append(buf, static_cast<size_t>(n));
    offset += n;
  }
}

Result<uint64_t> ReadCgroupNumber(const std::string& dir, const char* name) {
  MCPEXEC_ASSIGN_OR_RETURN(const std::string text, ReadCgroupFile(dir, name));
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || (*end != '\n' && *end != '\0')) {
    return MakeError(ErrorCode::kInternal,
                     dir + "/" + name + " does not hold a number: \"" + text + "\"");
  }
  return static_cast<uint64_t>(value);
}

Result<void> WriteCgroupFile(const std::string& dir, const char* name, std::string_view value) {
  const std::string path = dir + "/" + name;
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.Valid()) return Errno(ErrorCode::kPermissionDenied, "open(" + path + ")");
  ssize_t n;
  do {
    n = write(fd.Get(), value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    return Errno(ErrorCode::kInternal, "write \"" + std::string(value) + "\" to " + path);
  }
  return {};
}

bool CgroupFileExists(const std::string& dir, const char* name) {
  return access((dir + "/" + name).c_str(), F_OK) == 0;
}

Result<void> CheckWritableDir(const std::string& dir) {
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return Errno(ErrorCode::kUnavailable, "access(" + dir + ", W_OK)");
  }
  return Ok();
}

std::optional<uint64_t> FlatKeyValue(std::string_view text, std::string_view key) {
  for (std::string_view line : Split(text, '\n')) {
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ' ') {
      return ParseNumber<uint64_t>(line.substr(key.size() + 1));
    }
  }
  return std::nullopt;
}

bool HasWord(std::string_view text, std::string_view word) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  for (std::string_view w : Split(text, ' ')) {
    if (w == word) return true;
  }
  return false;
}

const std::string& RunNamePrefix() {
  static const std::string prefix = [] {
    const pid_t self = getpid();
    return "run-" + std::to_string(self) + "-" + std::to_string(StartTime(self).value_or(0)) +
           "-";
  }();
  return prefix;
}

std::string NewRunName() {
  static std::atomic<uint64_t> next{0};
  return RunNamePrefix() + std::to_string(next.fetch_add(1, std::memory_order_relaxed));
}

bool IsStaleRun(std::string_view name) {
  if (!name.starts_with("run-")) return false;
  const auto parts = Split(name.substr(4), '-');
  if (parts.size() != 3) return false;
  const auto pid = ParseNumber<pid_t>(parts[0]);
  const auto start = ParseNumber<uint64_t>(parts[1]);
  if (!pid || !start) return false;
  const auto now = StartTime(*pid);
  return !now || *now != *start;
}

int KillListedMembers(const std::function<Result<std::string>()>& read_procs) {
  auto listed = read_procs();
  if (!listed.ok()) return 0;
  std::vector<std::pair<pid_t, UniqueFd>> pinned;
  for (std::string_view line : Split(*listed, '\n')) {
    const auto pid = ParseNumber<pid_t>(line);
    if (!pid || *pid <= 0) continue;
    UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, *pid, 0)));
    if (pidfd.Valid()) pinned.emplace_back(*pid, std::move(pidfd));  // ESRCH: gone already
  }
  if (pinned.empty()) return 0;
  auto still = read_procs();
  if (!still.ok()) return 0;
  std::vector<pid_t> members;
  for (std::string_view line : Split(*still, '\n')) {
    if (auto pid = ParseNumber<pid_t>(line); pid && *pid > 0) members.push_back(*pid);
  }
  int signalled = 0;
  for (const auto& [pid, pidfd] : pinned) {
    if (std::find(members.begin(), members.end(), pid) == members.end()) continue;
    if (syscall(SYS_pidfd_send_signal, pidfd.Get(), SIGKILL, nullptr, 0) == 0) ++signalled;
  }
  return signalled;
}

int KillListed(const std::string& dir) {
  return KillListedMembers([&dir] { return ReadCgroupFile(dir, "cgroup.procs"); });
}

Result<void> RemoveCgroupDir(const std::string& dir, bool has_cgroup_kill) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (int attempt = 0;; ++attempt) {
    if (rmdir(dir.c_str()) == 0 || errno == ENOENT) return {};
    if (errno != EBUSY || std::chrono::steady_clock::now() > give_up) {
      return Errno(ErrorCode::kInternal, "rmdir(" + dir + ")");
    }
    if (attempt == 0 && has_cgroup_kill) {
      (void)WriteCgroupFile(dir, "cgroup.kill", "1");
    } else if (!has_cgroup_kill) {
      KillListed(dir);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt < 10 ? 1 : 20));
  }
}

int RemoveStaleRuns(const std::string& parent, bool has_cgroup_kill) {
  DIR* dir = opendir(parent.c_str());
  if (dir == nullptr) return 0;
  std::vector<std::string> stale;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_type == DT_DIR && IsStaleRun(entry->d_name)) stale.emplace_back(entry->d_name);
  }
  closedir(dir);
  int removed = 0;
  for (const std::string& name : stale) {
    if (RemoveCgroupDir(parent + "/" + name, has_cgroup_kill).ok()) ++removed;
  }
  return removed;
}

uint64_t HostSwapBytes() {
  auto meminfo = ReadFile("/proc/meminfo");
  if (!meminfo.ok()) return 0;
  for (std::string_view line : Split(*meminfo, '\n')) {
    if (!line.starts_with("SwapTotal:")) continue;
    line.remove_prefix(10);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    const size_t space = line.find(' ');
    return ParseNumber<uint64_t>(line.substr(0, space)).value_or(0) * 1024;
  }
  return 0;
}

}  // namespace mcpexec::limits
