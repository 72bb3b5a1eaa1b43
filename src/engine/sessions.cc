#include "engine/sessions.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "base/random.h"
#include "base/unique_fd.h"
#include "log/log.h"

namespace mcpexec::engine {
namespace {

// How long an ended session's handle still says why it ended, and how many such are kept.
constexpr size_t kEndedKept = 256;
constexpr auto kEndedKeptFor = std::chrono::hours(1);

// The same answer for a handle that never existed and one that is another caller's.
Error Unknown() {
  return MakeError(ErrorCode::kNotFound,
                   "unknown session: no session of yours has this handle (it never existed, or "
                   "it is not yours); open one with session: \"new\"");
}

std::chrono::system_clock::time_point WallClock(std::chrono::steady_clock::time_point t) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             t - std::chrono::steady_clock::now());
}

// The server process's part of every handle: a handle from an earlier process, or another
// replica, is told apart from one that never existed.
std::string InstanceId() {
  auto id = RandomHex(4);
  return id.ok() ? *id : "00000000";
}

// Why a session whose interpreter is gone ended: what the sandbox saw, or, when it saw nothing
// (killed between calls), what the limits backend tells.
std::string DeadReason(const sandbox::Session& session) {
  if (std::string reason = session.EndReason(); !reason.empty()) return reason;
  return session.Usage().oom_killed ? "out of memory" : "killed";
}

}  // namespace

struct SessionStore::Entry {
  std::string caller;
  std::string environment;
  std::optional<sandbox::Session> session;  // while open and not running a call
  // Engine::KeepAlive of the engine it came from, while open: its sandbox may die with that
  // engine, which its owner must not release meanwhile.
  std::shared_ptr<const void> engine;
  UniqueFd init;  // a pidfd of its init: a busy session is killed by it
  Clock::time_point created, last_used;
  uint64_t calls = 0;
  bool busy = false;
  std::optional<std::string> ended;  // why; set once
  std::optional<uint64_t> memory_bytes;  // as the last call left it
};

bool SessionStore::WellFormed(const std::string& handle) {
  if (handle.size() != 1 + 8 + 1 + 32 || handle[0] != 's' || handle[9] != '_') return false;
  for (size_t i = 1; i < handle.size(); ++i) {
    if (i == 9) continue;
    const char c = handle[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

SessionStore::SessionStore(SessionOptions options)
    : options_(options),
      instance_(InstanceId()) {
  sweeper_ = std::thread([this] { Sweep(); });
}

SessionStore::~SessionStore() {
  std::vector<sandbox::Session> ending;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto& [handle, entry] : entries_) {
      if (auto session = EndLocked(*entry, "the server stopped")) {
        ending.push_back(std::move(*session));
      }
    }
  }
  stop_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
}

Result<SessionInfo> SessionStore::Open(const std::string& caller, Engine& engine,
                                       const std::string& environment) {
  {
    std::lock_guard lock(mutex_);
    if (open_ >= options_.max_sessions) {
      return MakeError(ErrorCode::kResourceExhausted,
                       "too many sessions: " + std::to_string(open_) + " are open, the most this "
                       "server allows (MCP_EXEC_MAX_SESSIONS=" +
                           std::to_string(options_.max_sessions) +
                           "); close one with session_close, or let one expire");
    }
    ++open_;  // held while the sandbox is made, so that racing opens cannot pass the limit
  }
  auto release = [this] {
    std::lock_guard lock(mutex_);
    --open_;
  };
  auto handle = RandomHex(16);
  if (!handle.ok()) {
    release();
    return handle.error();
  }
  std::shared_ptr<const void> keep = engine.KeepAlive();
  Result<sandbox::Sandbox> warm = engine.TakeWarm();
  Result<sandbox::Session> session = warm.ok() ? sandbox::Session::Start(std::move(*warm))
                                                : Result<sandbox::Session>(warm.error());
  if (!session.ok()) {
    release();
    return std::move(session).error().WithContext("open a session");
  }
  // Without a pidfd of its own for the init, a busy session could not be killed when it is
  // closed or expires: refused, its sandbox destroyed here.
  Result<UniqueFd> init = session->DupInitPidfd();
  if (!init.ok()) {
    release();
    return std::move(init).error().WithContext("open a session");
  }
  auto entry = std::make_shared<Entry>();
  entry->caller = caller;
  entry->environment = environment;
  entry->engine = std::move(keep);
  entry->init = std::move(*init);
  entry->created = entry->last_used = Clock::now();
  entry->session.emplace(std::move(*session));
  const std::string name = "s" + instance_ + "_" + *handle;
  std::lock_guard lock(mutex_);
  entries_[name] = entry;
  return InfoOf(name, *entry);
}

Result<std::shared_ptr<SessionStore::Entry>> SessionStore::Find(const std::string& caller,
                                                                 const std::string& handle) const {
  if (WellFormed(handle) && handle.compare(1, 8, instance_) != 0) {
    return MakeError(ErrorCode::kNotFound,
                     "unknown session: the handle is from another mcp-exec server process. A "
                     "session lives in the process that opened it: it does not survive a "
                     "restart, and behind a load balancer its calls must reach the same server; "
                     "open one with session: \"new\"");
  }
  const auto it = entries_.find(handle);
  if (it == entries_.end() || it->second->caller != caller) return Unknown();
  return it->second;
}

Result<std::string> SessionStore::EnvironmentOf(const std::string& caller,
                                                const std::string& handle) const {
  std::lock_guard lock(mutex_);
  MCPEXEC_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, Find(caller, handle));
  return entry->environment;
}

SessionInfo SessionStore::InfoOf(const std::string& handle, const Entry& entry,
                                 bool read_memory) const {
  SessionInfo info;
  info.handle = handle;
  info.environment = entry.environment;
  info.created = WallClock(entry.created);
  info.last_used = WallClock(entry.last_used);
  info.expires_at = WallClock(std::min(entry.last_used + options_.idle,
                                       entry.created + options_.max_age));
  info.calls = entry.calls;
  info.busy = entry.busy;
  info.memory_bytes = entry.memory_bytes;
  if (entry.session && read_memory) {
    if (auto now = entry.session->Usage().memory_current_bytes) info.memory_bytes = now;
  }
  return info;
}

// Takes the session's sandbox out for a call, marking it busy.
Result<SessionCall> SessionStore::Call(const std::string& caller, const std::string& handle,
                                       const sandbox::Program& program,
                                       const sandbox::RunLimits& limits,
                                       const sandbox::RunHooks& hooks) {
  std::shared_ptr<Entry> entry;
  std::optional<sandbox::Session> session;
  {
    std::lock_guard lock(mutex_);
    MCPEXEC_ASSIGN_OR_RETURN(entry, Find(caller, handle));
    if (entry->ended) return MakeError(ErrorCode::kUnavailable, "session ended: " + *entry->ended);
    if (entry->busy) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "session busy: another call is running in it. Calls in one session run "
                       "one at a time: wait for that call to return, then call again");
    }
    entry->busy = true;
    session = std::move(entry->session);
    entry->session.reset();
  }
  Result<sandbox::CallResult> result =
      session->Alive()
          ? session->Call(program, limits, hooks, options_.grace)
          : Result<sandbox::CallResult>(MakeError(ErrorCode::kUnavailable, "ended"));

  std::optional<sandbox::Session> ending;  // destroyed after the lock is released
  std::lock_guard lock(mutex_);
  entry->busy = false;
  entry->last_used = Clock::now();
  entry->session = std::move(session);
  if (result.ok()) {
    ++entry->calls;
    entry->memory_bytes = entry->session->UsageAfterLastCall().memory_current_bytes;
  }
  if (!entry->ended) {
    // A call that failed before it started (an input file that cannot be written) leaves its
    // session alive: the error is the call's alone.
    if (!entry->session->Alive()) ending = EndLocked(*entry, DeadReason(*entry->session));
  } else {
    ending = std::move(entry->session);  // closed or expired while the call ran
    entry->session.reset();
  }
  if (!result.ok()) {
    if (entry->ended) return MakeError(ErrorCode::kUnavailable, "session ended: " + *entry->ended);
    return std::move(result).error();
  }
  return SessionCall{std::move(*result), InfoOf(handle, *entry, /*read_memory=*/false),
                     entry->ended};
}

void SessionStore::PrepareNextCall(const std::string& caller, const std::string& handle) {
  // Made outside the lock, which every session's calls take; dropped outside it when unwanted.
  auto fds = sandbox::MakeCallDescriptors();
  if (!fds.ok()) return;  // the call makes its own, and reports why it cannot
  std::lock_guard lock(mutex_);
  auto entry = Find(caller, handle);
  if (!entry.ok() || (*entry)->ended || (*entry)->busy || !(*entry)->session) return;
  (*entry)->session->AdoptNextCallDescriptors(*fds);
}

std::vector<SessionInfo> SessionStore::List(const std::string& caller) const {
  std::vector<std::pair<Clock::time_point, SessionInfo>> mine;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [handle, entry] : entries_) {
      if (entry->caller == caller && !entry->ended) {
        mine.emplace_back(entry->created, InfoOf(handle, *entry));
      }
    }
  }
  std::sort(mine.begin(), mine.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SessionInfo> out;
  for (auto& [created, info] : mine) out.push_back(std::move(info));
  return out;
}

Result<void> SessionStore::Close(const std::string& caller, const std::string& handle) {
  std::optional<sandbox::Session> ending;
  {
    std::lock_guard lock(mutex_);
    MCPEXEC_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, Find(caller, handle));
    if (entry->ended) return MakeError(ErrorCode::kUnavailable, "session ended: " + *entry->ended);
    ending = EndLocked(*entry, "closed");
  }
  return Ok();
}

void SessionStore::CloseAll(const std::string& caller) {
  std::vector<sandbox::Session> ending;
  std::lock_guard lock(mutex_);
  for (auto& [handle, entry] : entries_) {
    if (entry->caller != caller || entry->ended) continue;
    if (auto session = EndLocked(*entry, "its client went away")) {
      ending.push_back(std::move(*session));
    }
  }
}

std::optional<sandbox::Session> SessionStore::EndLocked(Entry& entry, std::string reason) {
  if (entry.ended) return std::nullopt;
  entry.ended = std::move(reason);
  entry.last_used = Clock::now();  // kept from now for kEndedKeptFor, to say why it ended
  --open_;
  // Its sandbox is killed or handed back to be destroyed: it no longer needs its engine.
  entry.engine.reset();
  log::Info("session ended", {{"reason", *entry.ended},
                              {"calls", static_cast<int64_t>(entry.calls)}});
  // A busy one is killed here; its call returns, and destroys it. The pidfd is not needed
  // after: an ended session's entry holds no descriptor.
  if (entry.busy) {
    if (entry.init.Valid()) syscall(SYS_pidfd_send_signal, entry.init.Get(), SIGKILL, nullptr, 0);
    entry.init.Reset();
    return std::nullopt;
  }
  entry.init.Reset();
  std::optional<sandbox::Session> session = std::move(entry.session);
  entry.session.reset();
  return session;
}

void SessionStore::Forget(Clock::time_point now) {
  std::vector<std::pair<Clock::time_point, std::string>> ended;
  for (auto it = entries_.begin(); it != entries_.end();) {
    const Entry& e = *it->second;
    if (e.ended && !e.busy && now - e.last_used >= kEndedKeptFor) {
      it = entries_.erase(it);
      continue;
    }
    if (e.ended && !e.busy) ended.emplace_back(e.last_used, it->first);
    ++it;
  }
  if (ended.size() <= kEndedKept) return;
  std::sort(ended.begin(), ended.end());
  for (size_t i = 0; i < ended.size() - kEndedKept; ++i) entries_.erase(ended[i].second);
}

// Ends what expired: idle past `idle` (never during a call), or older than `max_age` (a call
// that runs then is killed). A closed or expired session is gone within one sweep.
void SessionStore::Sweep() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    stop_.wait_for(lock, options_.sweep, [this] { return stopping_; });
    if (stopping_) return;
    const Clock::time_point now = Clock::now();
    std::vector<sandbox::Session> ending;
    for (auto& [handle, entry] : entries_) {
      if (entry->ended) continue;
      std::optional<std::string> why;
      if (now - entry->created >= options_.max_age) {
        why = "reached its maximum age of " + std::to_string(options_.max_age.count()) +
              " s (MCP_EXEC_SESSION_MAX_AGE_S)";
      } else if (!entry->busy && now - entry->last_used >= options_.idle) {
        why = "idle for " + std::to_string(options_.idle.count()) +
              " s (MCP_EXEC_SESSION_IDLE_S)";
      } else if (!entry->busy && entry->session && !entry->session->Alive()) {
        why = DeadReason(*entry->session);
      }
      if (why) {
        if (auto session = EndLocked(*entry, *why)) ending.push_back(std::move(*session));
      }
    }
    Forget(now);
    lock.unlock();
    ending.clear();  // reaped and their cgroups removed, outside the lock
    lock.lock();
  }
}

}  // namespace mcpexec::engine
