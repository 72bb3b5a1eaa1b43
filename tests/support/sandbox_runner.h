// SandboxRunner: black-box runs of the mcp-exec binary for the integration tests, as the
// invoking user (Caller) or as an unprivileged user (Unprivileged: the system user
// `mcpexec-test` when the tests run as root, the caller otherwise).
//
// HostSetup prepares what both modes need once per test program (the test user, a copy of the
// binary that the test user can execute, the resolved rootfs) and records why a mode cannot
// run instead of skipping it: tests assert that Problem() is empty, so a host that cannot run
// them fails with the reason.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <ostream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace mcpexec::testing {

enum class RunMode { kCaller, kUnprivileged };

// "Caller" / "Unprivileged": used in the parameterized test names.
std::string ModeName(RunMode mode);
inline void PrintTo(RunMode mode, std::ostream* os) { *os << ModeName(mode); }

inline constexpr const char* kTestUserName = "mcpexec-test";

// How the process under test is started.
struct LaunchOptions {
  // Its standard input; /dev/null when empty.
  std::string input;
  // "NAME=value" entries added to its environment (which otherwise holds only PATH).
  std::vector<std::string> env;
  // Start it as the leader of a new session whose controlling terminal is a fresh pty.
  bool controlling_tty = false;
  // Give `input` through a pipe that stays open until the process ends (a client that keeps
  // its connection), instead of a file that ends.
  bool hold_stdin_open = false;
  // Leave an extra descriptor (fd 9, /dev/null, not close-on-exec) open across its execve.
  bool leak_fd = false;
  // Sample its peak resident memory (VmHWM) every millisecond until it ends, into
  // Outcome::peak_rss_kib. wait4's ru_maxrss cannot tell it: a forked child keeps its parent's
  // high-water mark through execve, so it reports this test program's own size whenever that is
  // larger, as it is under ASan late in a suite.
  bool sample_peak_memory = false;
  // Its RLIMIT_NOFILE, soft and hard, set just before its execve (lowering needs no privilege);
  // 0: this process's. `open_files_soft`, when not 0, is the soft limit instead (below the hard).
  rlim_t open_files = 0;
  rlim_t open_files_soft = 0;
};

inline LaunchOptions SamplingPeakMemory() {
  LaunchOptions options;
  options.sample_peak_memory = true;
  return options;
}

inline LaunchOptions WithInput(std::string input) {
  LaunchOptions options;
  options.input = std::move(input);
  return options;
}

inline LaunchOptions WithEnv(std::vector<std::string> env) {
  LaunchOptions options;
  options.env = std::move(env);
  return options;
}

// What a finished process left behind.
struct Outcome {
  int exit_status = -1;  // WEXITSTATUS; -1 when it died of a signal
  int term_signal = 0;   // the signal that killed it, or 0
  std::string out;       // its raw stdout
  std::string err;       // its raw stderr
  // The process's own peak resident memory, sampled every millisecond while it ran (it misses
  // at most its last millisecond; its children are not counted); -1 unless it was asked for
  // with LaunchOptions::sample_peak_memory.
  long peak_rss_kib = -1;
  std::chrono::milliseconds elapsed{0};
  // `out` parsed as JSON; a discarded value when it is not JSON.
  nlohmann::json json;

  // The "stdout" member of the result, parsed as JSON: for programs that print one JSON
  // document. A discarded value when that fails.
  nlohmann::json ProgramJson() const;
  // Everything above in a few lines, for assertion messages.
  std::string Describe() const;
};

// Success when `outcome.out` is exactly one line holding one JSON object with the contract's
// members and types: stdout, stderr (strings), exit_code, duration_ms (integers), truncated,
// timed_out (booleans), and "signal" (a string) only when present.
::testing::AssertionResult IsRunResult(const Outcome& outcome);

// A process started in the background. Destruction SIGKILLs and reaps it if it still runs.
class BackgroundRun {
 public:
  BackgroundRun(BackgroundRun&& other) noexcept;
  BackgroundRun& operator=(BackgroundRun&&) = delete;
  BackgroundRun(const BackgroundRun&) = delete;
  ~BackgroundRun();

  pid_t Pid() const { return pid_; }
  // Waits for the process to end and collects its outcome. Call once.
  Outcome Wait();
  // SIGTERM, then Wait(); SIGKILL first if it has not ended within `grace` (a server's
  // graceful stop). Call once, instead of Wait().
  Outcome Stop(std::chrono::milliseconds grace = std::chrono::seconds(20));
  // What it has written to stderr so far (its log, for a server that keeps running).
  std::string ErrSoFar() const;

 private:
  friend class SandboxRunner;
  BackgroundRun(pid_t pid, int out_fd, int err_fd, int pty_fd, int stdin_fd,
                std::chrono::steady_clock::time_point start, bool sample_peak_memory);
  // Samples VmHWM from its execve until it has exited (not reaped yet); the largest value seen.
  long SamplePeakUntilExit() const;

  pid_t pid_ = -1;
  bool sample_peak_memory_ = false;
  int out_fd_ = -1, err_fd_ = -1, pty_fd_ = -1, stdin_fd_ = -1;
  std::chrono::steady_clock::time_point start_;
};

// Once per test program (see main.cc): creates the test user when root, copies the binary
// where that user can execute it, resolves the rootfs; TearDown removes the copy.
class HostSetup {
 public:
  static HostSetup& Get();
  void SetUp();
  void TearDown();

  // Why `mode` cannot run on this host; empty when it can.
  const std::string& Problem(RunMode mode) const;
  const std::string& Binary(RunMode mode) const;
  // realpath of MCP_EXEC_TEST_ROOTFS.
  const std::string& Rootfs() const { return rootfs_; }
  // The uid/gid a mode's process runs as.
  uid_t Uid(RunMode mode) const;
  gid_t Gid(RunMode mode) const;
  // Writes `content` to a file in a directory every mode can read; returns its path.
  std::string WriteSharedFile(const std::string& name, const std::string& content) const;
  // The directory WriteSharedFile writes in (0755, under /tmp); empty before SetUp.
  const std::string& ScratchDir() const { return scratch_dir_; }
  // With MCP_EXEC_TEST_PACKAGES: the package cache of `mode`'s runs, which its user owns.
  std::string PackageCache(RunMode mode) const;

 private:
  bool set_up_ = false;
  std::string caller_problem_, unprivileged_problem_;
  std::string caller_binary_, unprivileged_binary_;
  std::string rootfs_;
  std::string scratch_dir_;  // 0755, under /tmp; holds the binary copy when root
  uid_t test_uid_ = 0;
  gid_t test_gid_ = 0;
};

// MCP_EXEC_TEST_ENGINE: the engine every `run` of the suite uses (`run --engine`), so that a
// suite runs once per engine (tests/meson.build); empty: run's default, cold.
const std::string& TestEngine();

// MCP_EXEC_TEST_PACKAGES=REQ: every `run` adds the package REQ (`run --packages`) from a
// wheelhouse that SetUp builds with MCP_EXEC_TEST_MAKE_WHEELS, so that a suite runs with a
// package layer mounted (tests/meson.build): bound by a cold init, or mounted by a fork of
// the zygote under MCP_EXEC_TEST_ENGINE=zygote.
const std::string& TestPackages();

// MCP_EXEC_TEST_SESSION=1: every `run` is the first call of a session (`run --session`), so
// that a suite runs in the sessions' sandbox and call path (tests/meson.build).
bool InSession();

// A process the test talks to through pipes on its stdin and stdout, a line at a time (a stdio
// MCP server); its stderr is kept. Destruction SIGKILLs and reaps it if it still runs.
class InteractiveProcess {
 public:
  InteractiveProcess(InteractiveProcess&& other) noexcept;
  InteractiveProcess& operator=(InteractiveProcess&&) = delete;
  ~InteractiveProcess();

  pid_t Pid() const { return pid_; }
  // Writes `line` and a newline; false when the process no longer reads.
  bool WriteLine(const std::string& line);
  // The next line of its stdout without the newline; nullopt at its end or after `timeout`.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout);
  // Closes its stdin, waits for it to end, and collects its outcome (`out` is what was not read).
  Outcome Finish();

 private:
  friend class SandboxRunner;
  InteractiveProcess(pid_t pid, int in_fd, int out_fd, int err_fd);

  pid_t pid_ = -1;
  int in_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
  std::string buffered_;  // read from stdout past the last line returned
};

class SandboxRunner {
 public:
  explicit SandboxRunner(RunMode mode) : mode_(mode) {}

  RunMode Mode() const { return mode_; }
  // Why this mode cannot run here; empty when it can.
  const std::string& Problem() const { return HostSetup::Get().Problem(mode_); }
  const std::string& Binary() const { return HostSetup::Get().Binary(mode_); }
  const std::string& Rootfs() const { return HostSetup::Get().Rootfs(); }
  // The host uid the sandbox's uid 65532 maps to in this mode: 65532 (the default
  // MCP_EXEC_HOST_UID) when mcp-exec runs as root, else the uid it runs as.
  uid_t ExpectedHostUid() const;

  // `mcp-exec run --rootfs ROOTFS [--engine TestEngine()] ARGS...` (no --rootfs or --engine
  // added when ARGS has one).
  Outcome Run(const std::vector<std::string>& run_args, const LaunchOptions& options = {}) const;
  // Run() with `--code CODE EXTRA...`.
  Outcome RunCode(const std::string& code, const std::vector<std::string>& extra_args = {},
                  const LaunchOptions& options = {}) const;
  BackgroundRun Start(const std::vector<std::string>& run_args,
                      const LaunchOptions& options = {}) const;
  BackgroundRun StartCode(const std::string& code, const std::vector<std::string>& extra_args = {},
                          const LaunchOptions& options = {}) const;
  // Any command line (argv[0] an absolute path), as this mode's user.
  BackgroundRun StartCommand(const std::vector<std::string>& argv,
                             const LaunchOptions& options = {}) const;
  Outcome RunCommand(const std::vector<std::string>& argv,
                     const LaunchOptions& options = {}) const;
  // Any command line, as this mode's user, with pipes for stdin and stdout.
  InteractiveProcess StartInteractive(const std::vector<std::string>& argv,
                                      const LaunchOptions& options = {}) const;

 private:
  std::vector<std::string> RunArgv(const std::vector<std::string>& run_args) const;

  RunMode mode_;
};

// A new empty directory that `mode`'s user owns (0755, in HostSetup's scratch directory, which
// every mode can reach): where a run may write, e.g. with --output-dir. The destructor removes
// it with everything in it.
class ModeOwnedDir {
 public:
  explicit ModeOwnedDir(RunMode mode);
  ~ModeOwnedDir();
  ModeOwnedDir(const ModeOwnedDir&) = delete;
  ModeOwnedDir& operator=(const ModeOwnedDir&) = delete;

  // Empty when it could not be made (Problem() says why).
  const std::string& Path() const { return path_; }
  const std::string& Problem() const { return problem_; }

 private:
  std::string path_;
  std::string problem_;
};

// What a fresh workspace holds, as sorted paths relative to /tmp ("main.py", ".cache",
// ".cache/matplotlib", ...): the program, the empty outputs/ directory, the rootfs's HOME skeleton
// (/usr/share/mcp-exec/home, copied into every workspace), plus `extra`.
std::vector<std::string> FreshWorkspaceTree(const std::vector<std::string>& extra = {});

// Python that prints nothing and defines workspace_tree(): the same listing, taken inside.
inline constexpr const char* kPythonWorkspaceTree = R"py(
import os as _os
def workspace_tree(root="/tmp"):
    paths = []
    for top, dirs, files in _os.walk(root):
        for name in dirs + files:
            paths.append(_os.path.relpath(_os.path.join(top, name), root))
    return sorted(paths)
)py";

// Every occurrence of `from` in `text` replaced by `to`: fills "@MARKER@"-style placeholders
// in the Python programs.
std::string ReplaceAll(std::string text, const std::string& from, const std::string& to);

}  // namespace mcpexec::testing
