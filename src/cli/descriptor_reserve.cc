#include "cli/descriptor_reserve.h"

#include <algorithm>

#include "sandbox/teardown.h"

namespace mcpexec::cli {
namespace {

// Each count is the server process's own descriptors (/proc/PID/fd) for one unit, measured
// with tools/measure-descriptors on a 2-core cgroup v1 host, as root and with the rlimit
// backend (whose sandboxes have no cgroup: the difference is the cgroup files below), with a
// margin over the measured figure.

// Standard input, output and error (the log), the listener, the event loop's epoll and its
// eventfds (stop, wake-up), the teardown's eventfd, and what a /metrics or /readyz request or
// the package index's client opens for a moment. 8 measured in an idle HTTP server.
constexpr size_t kBaseDescriptors = 32;

// A run from its set-up to its end, without its cgroup: both ends of its stdin, stdout and
// stderr pipes and of its report and start socket pairs while it starts (and a cold start's go
// pipe), init's pidfd, the workspace; a run with packages adds its layer's lock and, while the
// layer is installed, the index channel (a listener, its stop pipe, a directory, a connection
// and the file it sends). 10-14 measured at the peak of four short runs at once on each
// engine, 6 while a run runs. A session's call is counted here too: calls of both kinds take
// the worker pool's MCP_EXEC_MAX_CONCURRENCY slots.
constexpr size_t kRunDescriptors = 24;

// The walk of a run's /tmp/outputs once it ends (sandbox::CollectOutputs), while the run's own
// descriptors are still open: one for each directory level down to the default depth limit
// (32), the outputs directory and the file being read, and a margin.
constexpr size_t kOutputWalkDescriptors = 35;

// A tools/call from its request to its end, queued or running (up to MCP_EXEC_MAX_CONCURRENCY
// + MCP_EXEC_MAX_QUEUE): its cancel eventfd (mcp::InFlight). On the legacy SSE transport a
// call outlives its POST, which is answered 202 at once, so it is not in the connection budget.
constexpr size_t kCallDescriptors = 1;

// An open session between calls, without its cgroup: init's and the interpreter's pidfds, the
// report and start (control) sockets, the workspace, and the next call's descriptors made
// ahead (the code's memfd and both ends of three pipes, docs/sessions.md), plus its layer's
// lock with packages. 13 measured idle, 14 during a call. A zygote's session also keeps its
// zygote alive (sandbox::Sandbox holds it), which may be one replaced since: counted apart.
constexpr size_t kSessionDescriptors = 16;

// A sandbox a warm engine keeps ready, without its cgroup: init's pidfd, the report and start
// sockets, the supervisor's ends of stdin, stdout and stderr, the workspace. 7 measured.
constexpr size_t kReadySandboxDescriptors = 10;

// A zygote, without its cgroup: the same kinds as a ready sandbox's, for the zygote's init and
// its control channel. 7 measured.
constexpr size_t kZygoteDescriptors = 10;

// A sandbox's cgroup, from its creation until its run's accounting is read (CloseFiles): on
// cgroup v1 the four interface files it reads (memory.oom_control, memory.max_usage_in_bytes,
// memory.usage_in_bytes, cpuacct.usage), 4 measured; on cgroup v2 its directory, memory.peak,
// memory.events, memory.current and cpu.stat. None with the rlimit backend.
constexpr size_t kCgroupFiles = 5;

// While a sandbox starts on cgroup v1, the `tasks` file of each hierarchy it joins through
// (RunCgroup::JoinFds). With the files above, 9 more descriptors per run measured at the peak
// on cgroup v1 than with the rlimit backend.
constexpr size_t kCgroupJoinFiles = 4;

// A finished run's remains waiting in the teardown (sandbox/teardown.h): init's pidfd. Its
// cgroup's files are closed once the run's accounting is read (RunCgroup::CloseFiles).
constexpr size_t kRemainsDescriptors = 1;

// Zygotes of one engine at once besides those its sessions keep: the one forking, and the one
// it replaced (after MCP_EXEC_ZYGOTE_MAX_FORKS or MCP_EXEC_ZYGOTE_MAX_AGE_S), which lives until
// the last sandbox forked from it is gone.
constexpr size_t kZygotesPerEngine = 2;

}  // namespace

size_t DescriptorReserve(const config::Config& config, size_t environments,
                         limits::Backend backend) {
  const bool cgroups = backend != limits::Backend::kRlimit;
  const size_t held_cgroup = cgroups ? kCgroupFiles : 0;
  const size_t starting_cgroup =
      held_cgroup + (backend == limits::Backend::kCgroup1 ? kCgroupJoinFiles : 0);
  const size_t run = kRunDescriptors + kOutputWalkDescriptors + starting_cgroup;
  const size_t ready = kReadySandboxDescriptors + held_cgroup;
  const size_t zygote_held = kZygoteDescriptors + held_cgroup;
  // auto counts as zygote, the engine it prefers and the one that holds the most.
  const bool zygote =
      config.engine != config::EngineKind::kCold && config.engine != config::EngineKind::kPool;

  size_t engine = 0;
  if (config.engine != config::EngineKind::kCold) {
    const bool packages = !config.wheelhouse.empty() || !config.package_index.empty();
    size_t kept = static_cast<size_t>(config::PoolMax(config));
    // A zygote also keeps one sandbox ready for each of the last MCP_EXEC_POOL_SIZE package
    // layers used.
    if (zygote && packages) kept += static_cast<size_t>(config.pool_size);
    engine = kept * ready + run;  // run: the one its refill is making
    if (zygote) engine += kZygotesPerEngine * zygote_held;
  }
  const size_t session = kSessionDescriptors + held_cgroup + (zygote ? zygote_held : 0);
  const size_t runs = static_cast<size_t>(std::max(config.max_concurrency, 1));
  const size_t calls = runs + static_cast<size_t>(std::max(config.max_queue, 0));

  return kBaseDescriptors + runs * run + calls * kCallDescriptors +
         static_cast<size_t>(std::max(config.max_sessions, 0)) * session +
         std::max<size_t>(environments, 1) * engine +
         sandbox::Teardown::kMaxPending * kRemainsDescriptors;
}

}  // namespace mcpexec::cli
