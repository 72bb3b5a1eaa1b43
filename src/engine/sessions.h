// Sessions (docs/sessions.md): Python state that lives across calls. A session is a warm
// sandbox (Engine::TakeWarm) turned into a session (sandbox::Session::Start), known by a handle
// the store mints and bound to the caller that opened it. The store holds at most
// `max_sessions`, ends each after `idle` without a call or at `max_age`, and answers a handle
// that is not the caller's exactly as one that never existed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "engine/engine.h"
#include "sandbox/run_result.h"

namespace mcpexec::engine {

struct SessionOptions {
  size_t max_sessions = 8;          // MCP_EXEC_MAX_SESSIONS
  std::chrono::seconds idle{600};   // MCP_EXEC_SESSION_IDLE_S
  std::chrono::seconds max_age{3600};  // MCP_EXEC_SESSION_MAX_AGE_S
  // From a call's SIGINT (its deadline, a cancellation) to the kill that ends the session.
  std::chrono::milliseconds grace{2000};
  // How often expiry is checked: a session ends at most this long after it expired.
  std::chrono::milliseconds sweep{250};
};

// What the caller may know of one of its sessions.
struct SessionInfo {
  std::string handle;
  std::string environment;  // the environment it was opened in, kept for its life
  std::chrono::system_clock::time_point created, last_used, expires_at;
  uint64_t calls = 0;
  bool busy = false;  // a call runs in it now
  std::optional<uint64_t> memory_bytes;  // what it holds now, the preloads excluded
};

// A call's result, and the session as the call left it.
struct SessionCall {
  sandbox::CallResult result;
  SessionInfo session;
  std::optional<std::string> ended;  // the session is over: why ("timeout", "closed", ...)
};

// The errors, by code: kNotFound (unknown, another caller's, or from another server process:
// the message says which of the last two it cannot be), kFailedPrecondition (another call runs
// in it), kUnavailable ("session ended: REASON"), kResourceExhausted (max_sessions open).
class SessionStore {
 public:
  explicit SessionStore(SessionOptions options);
  // Ends every session.
  ~SessionStore();
  SessionStore(const SessionStore&) = delete;
  SessionStore& operator=(const SessionStore&) = delete;

  // Opens a session for `caller` in the environment `environment`, with a sandbox of `engine`
  // (that environment's). The sandbox is made on the calling thread when the engine has none
  // ready: call from a thread that lives as long as the server (a worker's). The session keeps
  // engine.KeepAlive() while it is open.
  Result<SessionInfo> Open(const std::string& caller, Engine& engine,
                           const std::string& environment);
  // The environment `caller`'s session `handle` was opened in; Call's errors for a handle that is
  // not the caller's, or not known.
  Result<std::string> EnvironmentOf(const std::string& caller, const std::string& handle) const;
  // Runs a call in `caller`'s session `handle`; one at a time in a session (a second is
  // refused). A call that ends the session (CallResult::ended) leaves it ended.
  Result<SessionCall> Call(const std::string& caller, const std::string& handle,
                           const sandbox::Program& program, const sandbox::RunLimits& limits,
                           const sandbox::RunHooks& hooks);
  // Makes ready what the next call in `caller`'s session `handle` needs, its descriptors
  // (Session::AdoptNextCallDescriptors): after a call's response, off its path. Quietly
  // nothing for a session that is busy, ended or not the caller's.
  void PrepareNextCall(const std::string& caller, const std::string& handle);
  // The caller's open sessions, oldest first.
  std::vector<SessionInfo> List(const std::string& caller) const;
  // Ends `caller`'s session `handle`; a call running in it ends as killed.
  Result<void> Close(const std::string& caller, const std::string& handle);
  // Ends every session of `caller` (its connection or protocol session is gone).
  void CloseAll(const std::string& caller);

 private:
  struct Entry;
  using Clock = std::chrono::steady_clock;

  Result<std::shared_ptr<Entry>> Find(const std::string& caller, const std::string& handle) const;
  // The entry as a caller sees it; memory_bytes read now unless `read_memory` is false (the
  // entry's own, as its last call left it).
  SessionInfo InfoOf(const std::string& handle, const Entry& entry, bool read_memory = true) const;
  // The handle's form: "s" + the server process's 8 hex digits + "_" + 32 hex digits of
  // getrandom (128 bits).
  static bool WellFormed(const std::string& handle);
  // Marks `entry` ended with `reason` and takes its sandbox out, to be destroyed (reaped,
  // cgroup removed) by the caller outside the lock; a busy one is killed instead, and its call
  // destroys it. Under mutex_.
  std::optional<sandbox::Session> EndLocked(Entry& entry, std::string reason);
  void Sweep();
  void Forget(Clock::time_point now);  // drops ended entries kept past their time. Under mutex_.

  const SessionOptions options_;
  const std::string instance_;  // 8 hex digits, new at each start
  mutable std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<Entry>> entries_;  // by handle, ended ones included
  size_t open_ = 0;
  std::thread sweeper_;  // last: joined before what it uses goes
};

}  // namespace mcpexec::engine
