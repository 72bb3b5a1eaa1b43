#include "sandbox_runner.h"

#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

namespace mcpexec::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kChildPath =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
// The uid the sandbox user maps to when mcp-exec runs as root (MCP_EXEC_HOST_UID's default).
constexpr uid_t kDefaultRootHostUid = 65532;
constexpr int kLeakedFd = 9;
// Exit status of the forked child when it could not become the process under test.
constexpr int kHarnessFailure = 126;

std::string ErrnoText(int err) {
  const char* name = strerrorname_np(err);
  return std::string(name ? name : "errno " + std::to_string(err)) + " (" + strerror(err) + ")";
}

int MakeMemfd(const char* name) {
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) std::abort();
  return fd;
}

std::string ReadAllFrom(int fd) {
  std::string data;
  char buf[65536];
  off_t offset = 0;
  for (;;) {
    const ssize_t n = pread(fd, buf, sizeof buf, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
    offset += n;
  }
  return data;
}

// Async-signal-safe message from the forked child.
void ChildMessage(const char* what, int err) {
  const char* text = strerror(err);
  (void)!write(STDERR_FILENO, "harness: ", 9);
  (void)!write(STDERR_FILENO, what, strlen(what));
  (void)!write(STDERR_FILENO, ": ", 2);
  (void)!write(STDERR_FILENO, text, strlen(text));
  (void)!write(STDERR_FILENO, "\n", 1);
}

struct Identity {
  bool change = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

// Switches to `id` if asked; true on success. Between fork and execve: syscalls only.
bool BecomeIdentity(const Identity& id) {
  if (!id.change) return true;
  const char* failed = nullptr;
  if (setgroups(0, nullptr) != 0) {
    failed = "setgroups";
  } else if (setgid(id.gid) != 0) {
    failed = "setgid";
  } else if (setuid(id.uid) != 0) {
    failed = "setuid";
  }
  if (failed != nullptr) ChildMessage(failed, errno);
  return failed == nullptr;
}

// The limits backend the process under test uses unless a test chooses one. As the caller it
// is whatever the test run was given (MCP_EXEC_LIMITS, MCP_EXEC_CGROUP: tools/vm/delegate sets
// them for the delegated cgroup v2 run). A process switched from root to the test user owns no
// cgroup, so it can only have the rlimit backend, and asks for it as an operator would.
std::vector<std::string> LimitsEnv(const Identity& id) {
  if (id.change) return {"MCP_EXEC_LIMITS=rlimit"};
  std::vector<std::string> env;
  for (const char* name : {"MCP_EXEC_LIMITS", "MCP_EXEC_CGROUP"}) {
    if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
  }
  return env;
}

// fork + exec with the fds prepared by the caller. Returns the child's pid.
pid_t Spawn(const std::vector<std::string>& argv, const LaunchOptions& options,
            const Identity& id, int in_fd, int out_fd, int err_fd, const std::string& pty_slave) {
  std::vector<const char*> args;
  for (const auto& a : argv) args.push_back(a.c_str());
  args.push_back(nullptr);
  std::vector<std::string> env_strings = {kChildPath};
  env_strings.insert(env_strings.end(), options.env.begin(), options.env.end());
  std::vector<std::string> defaults = LimitsEnv(id);
  // A `serve` under test gets the suite's engine too (`run` takes it as --engine, RunArgv), and
  // both get the suite's preloads (tests/meson.build).
  if (!TestEngine().empty()) defaults.push_back("MCP_EXEC_ENGINE=" + TestEngine());
  if (const char* preload = std::getenv("MCP_EXEC_PRELOAD")) {
    defaults.push_back(std::string("MCP_EXEC_PRELOAD=") + preload);
  }
  for (const std::string& var : defaults) {
    const std::string name = var.substr(0, var.find('=') + 1);
    bool set = false;
    for (const std::string& e : options.env) set = set || e.starts_with(name);
    if (!set) env_strings.push_back(var);
  }
  std::vector<const char*> env;
  for (const auto& e : env_strings) env.push_back(e.c_str());
  env.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) std::abort();
  if (pid != 0) return pid;

  // Child. The standard fds first, so that messages reach the captured stderr.
  if (dup2(in_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
      dup2(err_fd, STDERR_FILENO) < 0) {
    _exit(kHarnessFailure);
  }
  if (close_range(3, ~0U, 0) != 0) {
    ChildMessage("close_range", errno);
    _exit(kHarnessFailure);
  }
  if (options.controlling_tty) {
    if (setsid() < 0) {
      ChildMessage("setsid", errno);
      _exit(kHarnessFailure);
    }
    const int tty = open(pty_slave.c_str(), O_RDWR | O_CLOEXEC);
    if (tty < 0 || ioctl(tty, TIOCSCTTY, 0) != 0) {
      ChildMessage("acquire the pty as controlling terminal", errno);
      _exit(kHarnessFailure);
    }
    close(tty);
  }
  if (options.leak_fd) {
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, kLeakedFd) < 0) {
      ChildMessage("open the leaked fd", errno);
      _exit(kHarnessFailure);
    }
    if (null_fd != kLeakedFd) close(null_fd);
  }
  if (options.open_files != 0) {
    const rlimit open_files{
        options.open_files_soft != 0 ? options.open_files_soft : options.open_files,
        options.open_files};
    if (setrlimit(RLIMIT_NOFILE, &open_files) != 0) {
      ChildMessage("setrlimit(RLIMIT_NOFILE)", errno);
      _exit(kHarnessFailure);
    }
  }
  if (!BecomeIdentity(id)) _exit(kHarnessFailure);
  execve(args[0], const_cast<char* const*>(args.data()), const_cast<char* const*>(env.data()));
  ChildMessage(args[0], errno);
  _exit(kHarnessFailure);
}

// Runs `argv` to its end as `id`, output discarded; its exit status or -1.
int RunQuietly(const std::vector<std::string>& argv, const Identity& id) {
  const int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int out = MakeMemfd("quiet");
  const pid_t pid = Spawn(argv, {}, id, in, out, out, "");
  close(in);
  close(out);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Truncated(const std::string& text, size_t limit = 3000) {
  if (text.size() <= limit) return text;
  return text.substr(0, limit) + "... (" + std::to_string(text.size()) + " bytes in all)";
}

}  // namespace

std::string ModeName(RunMode mode) {
  return mode == RunMode::kCaller ? "Caller" : "Unprivileged";
}

// ---------------------------------------------------------------------------------- Outcome

nlohmann::json Outcome::ProgramJson() const {
  if (!json.is_object() || !json.contains("stdout") || !json["stdout"].is_string()) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  return nlohmann::json::parse(json["stdout"].get<std::string>(), nullptr, false);
}

std::string Outcome::Describe() const {
  std::ostringstream o;
  o << "\n  exit status " << exit_status;
  if (term_signal != 0) o << ", killed by signal " << term_signal;
  o << ", elapsed " << elapsed.count() << " ms";
  if (peak_rss_kib >= 0) o << ", peak memory " << peak_rss_kib << " KiB";
  if (json.is_object()) {
    for (const char* key : {"exit_code", "duration_ms", "truncated", "timed_out", "signal"}) {
      if (json.contains(key)) o << "\n  " << key << ": " << json[key].dump();
    }
    for (const char* key : {"stdout", "stderr"}) {
      if (json.contains(key) && json[key].is_string()) {
        o << "\n  program " << key << ": " << Truncated(json[key].get<std::string>());
      }
    }
  } else {
    o << "\n  mcp-exec stdout: " << Truncated(out);
  }
  o << "\n  mcp-exec stderr: " << Truncated(err);
  return o.str();
}

::testing::AssertionResult IsRunResult(const Outcome& outcome) {
  const std::string& out = outcome.out;
  if (out.empty() || out.back() != '\n' || out.find('\n') != out.size() - 1) {
    return ::testing::AssertionFailure()
           << "stdout is not exactly one line:" << outcome.Describe();
  }
  if (!outcome.json.is_object()) {
    return ::testing::AssertionFailure() << "stdout is not a JSON object:" << outcome.Describe();
  }
  const std::set<std::string> required = {
      "stdout",      "stderr",     "exit_code",         "duration_ms",
      "truncated",   "timed_out",  "oom_killed",        "memory_peak_bytes",
      "cpu_time_ms", "limits_backend", "files"};
  const std::set<std::string> optional = {"signal", "files_not_listed", "files_walk_incomplete",
                                          "packages"};
  for (const auto& [key, value] : outcome.json.items()) {
    if (required.count(key) == 0 && optional.count(key) == 0) {
      return ::testing::AssertionFailure() << "unexpected member \"" << key << "\"";
    }
  }
  for (const std::string& key : required) {
    if (!outcome.json.contains(key)) {
      return ::testing::AssertionFailure() << "missing member \"" << key << "\"";
    }
  }
  // With MCP_EXEC_TEST_PACKAGES every run has its layer, and says so.
  const bool packages = outcome.json.contains("packages");
  if (packages != !TestPackages().empty()) {
    return ::testing::AssertionFailure() << "the member \"packages\" is "
                                         << (packages ? "there" : "missing");
  }
  if (packages && (!outcome.json["packages"].is_array() || outcome.json["packages"].size() != 1 ||
                   !TestPackages().starts_with(
                       outcome.json["packages"][0].value("name", "?") + "==" +
                       outcome.json["packages"][0].value("version", "?")))) {
    return ::testing::AssertionFailure()
           << "\"packages\" is not " << TestPackages() << ": " << outcome.json["packages"].dump();
  }
  const nlohmann::json& j = outcome.json;
  if (!j["stdout"].is_string() || !j["stderr"].is_string() ||
      !j["exit_code"].is_number_integer() || !j["duration_ms"].is_number_integer() ||
      !j["truncated"].is_boolean() || !j["timed_out"].is_boolean() ||
      (j.contains("signal") && !j["signal"].is_string()) || !j["oom_killed"].is_boolean() ||
      !(j["memory_peak_bytes"].is_number_unsigned() || j["memory_peak_bytes"].is_null()) ||
      !(j["cpu_time_ms"].is_number_unsigned() || j["cpu_time_ms"].is_null()) ||
      !j["limits_backend"].is_string() || !j["files"].is_array()) {
    return ::testing::AssertionFailure() << "a member has the wrong type: " << j.dump();
  }
  return ::testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------- BackgroundRun

BackgroundRun::BackgroundRun(pid_t pid, int out_fd, int err_fd, int pty_fd, int stdin_fd,
                             std::chrono::steady_clock::time_point start,
                             bool sample_peak_memory)
    : pid_(pid),
      sample_peak_memory_(sample_peak_memory),
      out_fd_(out_fd),
      err_fd_(err_fd),
      pty_fd_(pty_fd),
      stdin_fd_(stdin_fd),
      start_(start) {}

BackgroundRun::BackgroundRun(BackgroundRun&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      sample_peak_memory_(other.sample_peak_memory_),
      out_fd_(std::exchange(other.out_fd_, -1)),
      err_fd_(std::exchange(other.err_fd_, -1)),
      pty_fd_(std::exchange(other.pty_fd_, -1)),
      stdin_fd_(std::exchange(other.stdin_fd_, -1)),
      start_(other.start_) {}

BackgroundRun::~BackgroundRun() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    (void)Wait();
  }
}

long BackgroundRun::SamplePeakUntilExit() const {
  const std::string proc = "/proc/" + std::to_string(pid_);
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  long peak = 0;
  for (;;) {
    // Until its execve the child is a fork of this test binary, whose pages it shares and
    // counts as its own: a sample counts only once its exe is another file. Reading the exe
    // first makes that safe, since a process execs once. A zombie has neither an exe nor a
    // VmHWM line, so the last sample stands.
    const auto exe = std::filesystem::read_symlink(proc + "/exe", ec);
    if (!ec && exe != self) {
      std::ifstream status(proc + "/status");
      for (std::string line; std::getline(status, line);) {
        if (line.rfind("VmHWM:", 0) == 0) peak = std::max(peak, std::atol(line.c_str() + 6));
      }
    }
    siginfo_t info{};
    if (waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) != 0 && errno != EINTR) break;
    if (info.si_pid == pid_) break;
    usleep(1000);
  }
  return peak;
}

std::string BackgroundRun::ErrSoFar() const { return err_fd_ >= 0 ? ReadAllFrom(err_fd_) : ""; }

Outcome BackgroundRun::Stop(std::chrono::milliseconds grace) {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    auto ended = [this] {
      siginfo_t info{};
      return waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
             info.si_pid == pid_;
    };
    while (!ended() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!ended()) kill(pid_, SIGKILL);
  }
  return Wait();
}

Outcome BackgroundRun::Wait() {
  Outcome outcome;
  if (pid_ <= 0) {
    outcome.err = "harness: Wait() called twice";
    return outcome;
  }
  if (sample_peak_memory_) outcome.peak_rss_kib = SamplePeakUntilExit();
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  outcome.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start_);
  if (WIFEXITED(status)) outcome.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.term_signal = WTERMSIG(status);
  outcome.out = ReadAllFrom(out_fd_);
  outcome.err = ReadAllFrom(err_fd_);
  for (int* fd : {&out_fd_, &err_fd_, &pty_fd_, &stdin_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  outcome.json = nlohmann::json::parse(outcome.out, nullptr, false);
  return outcome;
}

// -------------------------------------------------------------------------------- HostSetup

HostSetup& HostSetup::Get() {
  static HostSetup setup;
  return setup;
}

void HostSetup::SetUp() {
  if (set_up_) return;
  set_up_ = true;

  char scratch[] = "/tmp/mcp-exec-it-XXXXXX";
  if (mkdtemp(scratch) == nullptr || chmod(scratch, 0755) != 0) {
    caller_problem_ = "cannot create a scratch directory under /tmp: " + ErrnoText(errno);
  } else {
    scratch_dir_ = scratch;
  }

  const char* bin = std::getenv("MCP_EXEC_BIN");
  const char* rootfs = std::getenv("MCP_EXEC_TEST_ROOTFS");
  char real[PATH_MAX];
  if (!caller_problem_.empty()) {
  } else if (bin == nullptr || *bin == '\0') {
    caller_problem_ =
        "MCP_EXEC_BIN is not set: run these tests with `meson test --suite integration`, which "
        "sets it to the built mcp-exec";
  } else if (access(bin, X_OK) != 0) {
    caller_problem_ = std::string("MCP_EXEC_BIN=") + bin + " is not executable (" +
                      ErrnoText(errno) + "): build it with `ninja -C build`";
  } else if (rootfs == nullptr || *rootfs == '\0') {
    caller_problem_ =
        "MCP_EXEC_TEST_ROOTFS is not set: run these tests with `meson test --suite "
        "integration`, which sets it to the configured rootfs_dir";
  } else if (realpath(rootfs, real) == nullptr) {
    caller_problem_ = std::string("the rootfs MCP_EXEC_TEST_ROOTFS=") + rootfs +
                      " does not exist (" + ErrnoText(errno) +
                      "): build it with tools/build-rootfs";
  } else if (access((std::string(real) + "/usr/bin/python3").c_str(), X_OK) != 0) {
    caller_problem_ = std::string("the rootfs ") + real +
                      " has no executable /usr/bin/python3: rebuild it with tools/build-rootfs";
  } else {
    caller_binary_ = bin;
    rootfs_ = real;
  }
  if (!caller_problem_.empty()) {
    unprivileged_problem_ = caller_problem_;
    return;
  }
  if (!TestPackages().empty()) {
    const char* tool = std::getenv("MCP_EXEC_TEST_MAKE_WHEELS");
    if (tool == nullptr ||
        RunQuietly({"/usr/bin/python3", tool, scratch_dir_ + "/wheels", "--good-only"},
                   Identity{}) != 0 ||
        mkdir(PackageCache(RunMode::kCaller).c_str(), 0755) != 0) {
      caller_problem_ = "cannot build the wheelhouse of MCP_EXEC_TEST_PACKAGES with "
                        "MCP_EXEC_TEST_MAKE_WHEELS (tests/packages/make_wheels.py)";
      unprivileged_problem_ = caller_problem_;
      return;
    }
  }
  // The unprivileged runs' package cache, theirs to write.
  auto make_user_cache = [this] {
    const std::string cache = PackageCache(RunMode::kUnprivileged);
    if (TestPackages().empty() || cache == PackageCache(RunMode::kCaller)) return;
    if (mkdir(cache.c_str(), 0755) != 0 || chown(cache.c_str(), test_uid_, test_gid_) != 0) {
      unprivileged_problem_ = "cannot make the package cache " + cache + ": " + ErrnoText(errno);
    }
  };

  if (geteuid() != 0) {
    // Not root: the caller is already unprivileged.
    unprivileged_binary_ = caller_binary_;
    test_uid_ = getuid();
    test_gid_ = getgid();
    make_user_cache();
    return;
  }

  if (getpwnam(kTestUserName) == nullptr) {
    const int status = RunQuietly({"/usr/sbin/useradd", "--system", "--no-create-home",
                                   "--shell", "/usr/sbin/nologin", kTestUserName},
                                  Identity{});
    // 9: the name was taken meanwhile, which is as good.
    if (status != 0 && status != 9) {
      unprivileged_problem_ = std::string("cannot create the test user ") + kTestUserName +
                              ": useradd exited with " + std::to_string(status);
      return;
    }
  }
  const passwd* user = getpwnam(kTestUserName);
  if (user == nullptr) {
    unprivileged_problem_ = std::string("the test user ") + kTestUserName + " does not exist";
    return;
  }
  test_uid_ = user->pw_uid;
  test_gid_ = user->pw_gid;
  make_user_cache();

  // The build tree may sit in a directory the test user cannot traverse.
  unprivileged_binary_ = scratch_dir_ + "/mcp-exec";
  std::error_code ec;
  fs::copy_file(caller_binary_, unprivileged_binary_, fs::copy_options::overwrite_existing, ec);
  if (ec || chmod(unprivileged_binary_.c_str(), 0755) != 0) {
    unprivileged_problem_ = "cannot copy " + caller_binary_ + " to " + unprivileged_binary_ +
                            ": " + (ec ? ec.message() : ErrnoText(errno));
    return;
  }

  const Identity as_user{true, test_uid_, test_gid_};
  const int readable =
      RunQuietly({"/usr/bin/test", "-r", rootfs_, "-a", "-x", rootfs_, "-a", "-x",
                  rootfs_ + "/usr/bin/python3", "-a", "-r", rootfs_ + "/usr/lib"},
                 as_user);
  if (readable != 0) {
    unprivileged_problem_ =
        "the rootfs " + rootfs_ + " is not readable by the unprivileged test user " +
        kTestUserName + " (uid " + std::to_string(test_uid_) +
        "): make it and every directory above it world-readable and searchable (chmod o+rx), "
        "or build it where they are (tools/build-rootfs puts it under /var/cache/mcp-exec)";
    return;
  }
  if (RunQuietly({"/usr/bin/test", "-x", unprivileged_binary_}, as_user) != 0) {
    unprivileged_problem_ = "the test user " + std::string(kTestUserName) +
                            " cannot execute " + unprivileged_binary_;
  }
}

void HostSetup::TearDown() {
  if (!scratch_dir_.empty()) {
    std::error_code ec;
    fs::remove_all(scratch_dir_, ec);
    scratch_dir_.clear();
  }
}

const std::string& HostSetup::Problem(RunMode mode) const {
  static const std::string kNotSetUp =
      "HostSetup::SetUp() has not run: register it as a global test environment (main.cc)";
  if (!set_up_) return kNotSetUp;
  return mode == RunMode::kCaller ? caller_problem_ : unprivileged_problem_;
}

const std::string& HostSetup::Binary(RunMode mode) const {
  return mode == RunMode::kCaller ? caller_binary_ : unprivileged_binary_;
}

uid_t HostSetup::Uid(RunMode mode) const {
  return mode == RunMode::kCaller ? geteuid() : test_uid_;
}

gid_t HostSetup::Gid(RunMode mode) const {
  return mode == RunMode::kCaller ? getegid() : test_gid_;
}

std::string HostSetup::WriteSharedFile(const std::string& name, const std::string& content) const {
  const std::string path = scratch_dir_ + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  chmod(path.c_str(), 0644);
  return path;
}

// ---------------------------------------------------------------------------- SandboxRunner

uid_t SandboxRunner::ExpectedHostUid() const {
  const uid_t runs_as = HostSetup::Get().Uid(mode_);
  return runs_as == 0 ? kDefaultRootHostUid : runs_as;
}

const std::string& TestEngine() {
  static const std::string engine = [] {
    const char* e = std::getenv("MCP_EXEC_TEST_ENGINE");
    return std::string(e != nullptr ? e : "");
  }();
  return engine;
}

const std::string& TestPackages() {
  static const std::string packages = [] {
    const char* p = std::getenv("MCP_EXEC_TEST_PACKAGES");
    return std::string(p != nullptr ? p : "");
  }();
  return packages;
}

std::string HostSetup::PackageCache(RunMode mode) const {
  return scratch_dir_ + "/package-cache-" + std::to_string(Uid(mode));
}

bool InSession() {
  static const bool session = [] {
    const char* s = std::getenv("MCP_EXEC_TEST_SESSION");
    return s != nullptr && std::string(s) == "1";
  }();
  return session;
}

std::vector<std::string> SandboxRunner::RunArgv(const std::vector<std::string>& run_args) const {
  std::vector<std::string> argv = {Binary(), "run"};
  bool has_rootfs = false;
  for (const auto& a : run_args) has_rootfs |= a == "--rootfs" || a.rfind("--rootfs=", 0) == 0;
  if (!has_rootfs) {
    argv.push_back("--rootfs");
    argv.push_back(Rootfs());
  }
  bool has_engine = false;
  for (const auto& a : run_args) has_engine |= a == "--engine" || a.rfind("--engine=", 0) == 0;
  if (InSession()) argv.push_back("--session");
  if (!TestPackages().empty()) {
    const HostSetup& host = HostSetup::Get();
    argv.insert(argv.end(), {"--wheelhouse", host.ScratchDir() + "/wheels/good",
                             "--package-cache", host.PackageCache(mode_), "--packages",
                             TestPackages()});
  }
  if (!has_engine && !TestEngine().empty()) {
    argv.push_back("--engine");
    argv.push_back(TestEngine());
  }
  argv.insert(argv.end(), run_args.begin(), run_args.end());
  return argv;
}

BackgroundRun SandboxRunner::StartCommand(const std::vector<std::string>& argv,
                                          const LaunchOptions& options) const {
  int in_fd;
  int stdin_writer = -1;
  if (options.hold_stdin_open) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0 ||
        write(fds[1], options.input.data(), options.input.size()) !=
            static_cast<ssize_t>(options.input.size())) {
      std::abort();  // the input must fit in the pipe (64 KiB)
    }
    in_fd = fds[0];
    stdin_writer = fds[1];
  } else if (options.input.empty()) {
    in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  } else {
    in_fd = MakeMemfd("stdin");
    if (pwrite(in_fd, options.input.data(), options.input.size(), 0) !=
        static_cast<ssize_t>(options.input.size())) {
      std::abort();
    }
  }
  const int out_fd = MakeMemfd("stdout");
  const int err_fd = MakeMemfd("stderr");
  int pty_fd = -1;
  std::string pty_slave;
  if (options.controlling_tty) {
    pty_fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    char name[PATH_MAX];
    if (pty_fd < 0 || grantpt(pty_fd) != 0 || unlockpt(pty_fd) != 0 ||
        ptsname_r(pty_fd, name, sizeof name) != 0) {
      std::abort();
    }
    pty_slave = name;
  }
  const bool switch_user = mode_ == RunMode::kUnprivileged && geteuid() == 0;
  const Identity id{switch_user, HostSetup::Get().Uid(mode_), HostSetup::Get().Gid(mode_)};
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = Spawn(argv, options, id, in_fd, out_fd, err_fd, pty_slave);
  close(in_fd);
  // The pty master stays open until the run ends: closing it would hang up the session.
  return BackgroundRun(pid, out_fd, err_fd, pty_fd, stdin_writer, start,
                       options.sample_peak_memory);
}

InteractiveProcess SandboxRunner::StartInteractive(const std::vector<std::string>& argv,
                                                   const LaunchOptions& options) const {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) std::abort();
  const int err_fd = MakeMemfd("stderr");
  const bool switch_user = mode_ == RunMode::kUnprivileged && geteuid() == 0;
  const Identity id{switch_user, HostSetup::Get().Uid(mode_), HostSetup::Get().Gid(mode_)};
  const pid_t pid = Spawn(argv, options, id, in[0], out[1], err_fd, "");
  close(in[0]);
  close(out[1]);
  return InteractiveProcess(pid, in[1], out[0], err_fd);
}

InteractiveProcess::InteractiveProcess(pid_t pid, int in_fd, int out_fd, int err_fd)
    : pid_(pid), in_fd_(in_fd), out_fd_(out_fd), err_fd_(err_fd) {}

InteractiveProcess::InteractiveProcess(InteractiveProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      in_fd_(std::exchange(other.in_fd_, -1)),
      out_fd_(std::exchange(other.out_fd_, -1)),
      err_fd_(std::exchange(other.err_fd_, -1)),
      buffered_(std::move(other.buffered_)) {}

InteractiveProcess::~InteractiveProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  for (int fd : {in_fd_, out_fd_, err_fd_}) {
    if (fd >= 0) close(fd);
  }
}

// A server that has already exited (one that refuses its settings) closes its stdin: the write
// must fail with EPIPE, not kill the test binary with SIGPIPE. The signal is blocked around the
// write and a pending one taken, so that this thread's mask and the process's dispositions (which
// every spawned program inherits) are left as they were.
bool InteractiveProcess::WriteLine(const std::string& line) {
  const std::string text = line + "\n";
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  bool ok = true;
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(in_fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (!ok && errno == EPIPE && !sigismember(&old, SIGPIPE)) {
    const timespec now{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &now) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

std::optional<std::string> InteractiveProcess::ReadLine(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const size_t newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd pfd{out_fd_, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char chunk[65536];
    const ssize_t n = read(out_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    buffered_.append(chunk, static_cast<size_t>(n));
  }
}

Outcome InteractiveProcess::Finish() {
  Outcome outcome;
  if (in_fd_ >= 0) close(in_fd_);
  in_fd_ = -1;
  std::string rest = std::move(buffered_);
  for (;;) {
    char chunk[65536];
    const ssize_t n = read(out_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    rest.append(chunk, static_cast<size_t>(n));
  }
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (WIFEXITED(status)) outcome.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.term_signal = WTERMSIG(status);
  outcome.out = std::move(rest);
  outcome.err = ReadAllFrom(err_fd_);
  return outcome;
}

Outcome SandboxRunner::RunCommand(const std::vector<std::string>& argv,
                                  const LaunchOptions& options) const {
  return StartCommand(argv, options).Wait();
}

BackgroundRun SandboxRunner::Start(const std::vector<std::string>& run_args,
                                   const LaunchOptions& options) const {
  return StartCommand(RunArgv(run_args), options);
}

Outcome SandboxRunner::Run(const std::vector<std::string>& run_args,
                           const LaunchOptions& options) const {
  return Start(run_args, options).Wait();
}

BackgroundRun SandboxRunner::StartCode(const std::string& code,
                                       const std::vector<std::string>& extra_args,
                                       const LaunchOptions& options) const {
  std::vector<std::string> args = {"--code", code};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  return Start(args, options);
}

Outcome SandboxRunner::RunCode(const std::string& code, const std::vector<std::string>& extra_args,
                               const LaunchOptions& options) const {
  return StartCode(code, extra_args, options).Wait();
}

// ---------------------------------------------------------------------------- ModeOwnedDir

ModeOwnedDir::ModeOwnedDir(RunMode mode) {
  std::string tmpl = HostSetup::Get().ScratchDir() + "/dir-" + ModeName(mode) + "-XXXXXX";
  if (HostSetup::Get().ScratchDir().empty()) {
    problem_ = "HostSetup has no scratch directory";
  } else if (mkdtemp(tmpl.data()) == nullptr) {
    problem_ = "mkdtemp " + tmpl + ": " + ErrnoText(errno);
  } else if (chmod(tmpl.c_str(), 0755) != 0 ||
             chown(tmpl.c_str(), HostSetup::Get().Uid(mode), HostSetup::Get().Gid(mode)) != 0) {
    problem_ = "chmod/chown " + tmpl + ": " + ErrnoText(errno);
    rmdir(tmpl.c_str());
  } else {
    path_ = tmpl;
  }
}

ModeOwnedDir::~ModeOwnedDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::vector<std::string> FreshWorkspaceTree(const std::vector<std::string>& extra) {
  std::vector<std::string> paths = extra;
  paths.push_back("main.py");
  paths.push_back("outputs");
  const fs::path skeleton = HostSetup::Get().Rootfs() + "/usr/share/mcp-exec/home";
  std::error_code ec;
  if (fs::is_directory(skeleton, ec)) {
    for (auto it = fs::recursive_directory_iterator(skeleton, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      paths.push_back(it->path().lexically_relative(skeleton).string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace mcpexec::testing
