#include "host_processes.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>
#include <thread>

namespace mcpexec::testing {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(10);

bool HasArgument(const std::string& cmdline, const std::string& marker) {
  std::string::size_type start = 0;
  while (start < cmdline.size()) {
    std::string::size_type end = cmdline.find('\0', start);
    if (end == std::string::npos) end = cmdline.size();
    if (cmdline.compare(start, end - start, marker) == 0) return true;
    start = end + 1;
  }
  return false;
}

// A /proc file's content; empty when the process exited before or while it was read (an
// ifstream throws for ESRCH in the middle of a read).
std::string ReadProc(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string content;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) content.append(buf, static_cast<size_t>(n));
  close(fd);
  return n < 0 ? std::string() : content;
}

// The first number of a /proc/PID/status field ("Uid:", "PPid:"); -1 when the process is gone.
long StatusField(const std::string& pid, const std::string& field) {
  std::istringstream status(ReadProc("/proc/" + pid + "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(field.size()));
  }
  return -1;
}

// The numeric entries of /proc.
std::vector<std::string> AllPids() {
  std::vector<std::string> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename();
    if (!pid.empty() && std::isdigit(static_cast<unsigned char>(pid[0]))) pids.push_back(pid);
  }
  return pids;
}

}  // namespace

std::string NewMarker(const std::string& topic) {
  std::random_device random;
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%08x%08x", random(), random());
  return "mcpexec-it-" + topic + "-" + std::to_string(getpid()) + "-" + suffix;
}

std::vector<HostProcess> FindProcesses(const std::string& marker) {
  std::vector<HostProcess> found;
  for (const std::string& pid : AllPids()) {
    const std::string cmdline = ReadProc("/proc/" + pid + "/cmdline");
    if (!HasArgument(cmdline, marker)) continue;
    const long uid = StatusField(pid, "Uid:");
    if (uid < 0) continue;  // exited between the two reads
    found.push_back(HostProcess{static_cast<pid_t>(std::stol(pid)), static_cast<uid_t>(uid)});
  }
  return found;
}

std::vector<HostProcess> WaitForProcesses(const std::string& marker, size_t count,
                                          std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::vector<HostProcess> found = FindProcesses(marker);
    if (found.size() >= count || std::chrono::steady_clock::now() >= deadline) return found;
    std::this_thread::sleep_for(kPollInterval);
  }
}

std::vector<HostProcess> WaitForNoProcesses(const std::string& marker,
                                            std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::vector<HostProcess> found = FindProcesses(marker);
    if (found.empty() || std::chrono::steady_clock::now() >= deadline) return found;
    std::this_thread::sleep_for(kPollInterval);
  }
}

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  for (const std::string& pid : AllPids()) {
    if (StatusField(pid, "PPid:") == parent) children.push_back(static_cast<pid_t>(std::stol(pid)));
  }
  return children;
}

bool WaitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const std::string stat = ReadProc("/proc/" + std::to_string(pid) + "/stat");
    const auto paren = stat.rfind(')');
    const bool exited = stat.empty() || paren == std::string::npos ||
                        stat.compare(paren + 1, 3, " Z ") == 0 ||
                        stat.compare(paren + 1, 3, " X ") == 0;
    if (exited) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPollInterval);
  }
}

void KillAll(const std::vector<HostProcess>& processes) {
  for (const HostProcess& p : processes) kill(p.pid, SIGKILL);
}

std::string DescribeProcesses(const std::vector<HostProcess>& processes) {
  if (processes.empty()) return "none";
  std::ostringstream out;
  for (size_t i = 0; i < processes.size(); ++i) {
    out << (i ? ", " : "") << "pid " << processes[i].pid << " uid " << processes[i].uid;
  }
  return out.str();
}

}  // namespace mcpexec::testing
