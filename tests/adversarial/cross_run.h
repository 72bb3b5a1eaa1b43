// The host side of the cross-run cases (XRUN-nn, cross_run_test.cc and fork_ahead_test.cc):
// one `mcp-exec serve` on Streamable HTTP that the runs of a case go through, and what the host
// sees of it: the sandboxes the engine keeps ready (matched to the runs they served by PID
// namespace and interpreter start time), the zygote, and what is left of a run once its result
// has come. Nothing here is thread-safe but Server::Exec.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../support/sandbox_runner.h"
#include "host_fixtures.h"

namespace mcpexec::testing {

// The sandboxes a Server keeps ready unless a case sets MCP_EXEC_POOL_SIZE.
constexpr size_t kPoolSize = 2;

// The engines that keep sandboxes ready: the pool's, or those the zygote forked.
bool InPool();
bool InZygote();

// starttime (field 22 of /proc/PID/stat): clock ticks since boot; 0 when the process is gone.
unsigned long long StartTicks(pid_t pid);
// Clock ticks since boot now, on the clock of StartTicks.
unsigned long long NowTicks();

// Every descendant of `root`, sorted.
std::vector<pid_t> Descendants(pid_t root);
// The pids with their parents and command lines, for a failure message.
std::string DescribePids(const std::vector<pid_t>& pids);

// A sandbox the pool keeps ready, as the host sees it: the sandbox's init, whose one child, the
// interpreter, waits for its program on the start socket. A pool's init is the server's child;
// a zygote's is a child of the zygote's own init, to which it was orphaned.
struct WaitingSandbox {
  pid_t init = -1;
  pid_t interpreter = -1;
  unsigned long long start_ticks = 0;  // the interpreter's
  std::string pid_ns;

  // Whether a run's report (the probes' identity()) says it ran in this sandbox.
  bool Served(const nlohmann::json& observed) const {
    return observed.value("pid namespace", "") == pid_ns &&
           observed.value("start ticks", 0ull) == start_ticks;
  }
};

// Blocked in read(2) on the start socket: the agent has said ready and waits for "G".
bool WaitsOnStartSocket(pid_t pid);

// The zygote, as the host sees it: the server's child (its sandbox's init) whose one child, the
// zygote's interpreter, waits for forks in recvmsg(2) on its start socket. Empty in the other
// engines.
std::vector<pid_t> ZygotePids(pid_t server);
// The zygote's pids once it waits for the next fork again: a refill may be forking from it when
// a test looks (the zygote then runs Python, not recvmsg), longer on a loaded machine.
std::vector<pid_t> WaitForZygote(pid_t server);

// The sandboxes of `server` waiting for a run now.
std::vector<WaitingSandbox> WaitingSandboxes(pid_t server);
// Polls until the pool has `count` sandboxes waiting (in cold: none are expected, returns at
// once); returns the last look.
std::vector<WaitingSandbox> WaitForPool(pid_t server, size_t count);
// The sandbox of `waiting` that served the run that reported `observed`; nullptr when none.
const WaitingSandbox* ServedBy(const std::vector<WaitingSandbox>& waiting,
                               const nlohmann::json& observed);

// One `mcp-exec serve --transport http` of the test's mode, in the suite's engine (the runner
// adds MCP_EXEC_ENGINE), with a pool of kPoolSize and two runs at a time, and an MCP session on
// it; `env` adds settings or replaces those (NAME=VALUE). SIGTERM and reaped by the destructor.
class Server {
 public:
  explicit Server(const SandboxRunner& runner, const std::vector<std::string>& env = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Empty when the server is up and the session open; else what went wrong.
  std::string Problem();
  pid_t Pid() const { return process_.Pid(); }

  // tools/call exec of probe `name` with `params` on stdin; the JSON-RPC reply. Thread-safe.
  nlohmann::json Exec(const std::string& name, const nlohmann::json& params);
  // The text of GET /metrics (no token is set); empty when it did not answer 200.
  std::string Metrics();

 private:
  int port_;
  BackgroundRun process_;
  bool up_ = false;
  McpSession session_;
  std::atomic<int> id_{1};
};

// The value of the sample `name` (a metric without labels) in a /metrics text; -1 when absent.
double MetricSample(const std::string& metrics, const std::string& name);

// The structured result of an exec reply (an empty object when there is none).
nlohmann::json Structured(const nlohmann::json& reply);

// Checks that the reply is a normal result of a run that exited 0 with a report whose "escaped"
// list is empty; returns the report's "observed" object (empty when there is none).
nlohmann::json ContainedOverMcp(const nlohmann::json& reply);

// XRUN-01's probe, xrun01_leftovers, in its "leave" phase with `token`: checks that the run
// left each thing (the positive control of ExpectNoLeftovers). Returns the report's "observed".
nlohmann::json ExpectLeftovers(const nlohmann::json& reply, const std::string& token);
// The same probe in its "look" phase, after runs that left things with `token`: checks that it
// found none of them. Returns the report's "observed".
nlohmann::json ExpectNoLeftovers(const nlohmann::json& reply, const std::string& token);

// After a run: nothing of it is left under the server beyond the `ready` sandboxes the pool
// keeps ready (in cold, nothing at all), once the pool is full again. Returns the waiting
// sandboxes.
std::vector<WaitingSandbox> ExpectOnlyThePoolLeft(pid_t server, size_t ready = kPoolSize);

// A run whose result has come: nothing of it is left in its PID namespace `ns` but its init
// (PID 1), which is ending (the result comes before init's exit, sandbox/teardown.h), and within
// 5 s not even that. `ticks`: NowTicks() when the result came.
void ExpectTheRunGoneFrom(const std::string& ns, unsigned long long ticks);

}  // namespace mcpexec::testing
