// Tasks: tools/call runs that answer at once with a handle and are polled for their result
// (2025-11-25: the client asks with params.task; the 2026 era: the tasks extension, where the
// server decides). The store is shared by every session of a server: a task belongs to the
// caller that made it (ToolCallContext::caller: one stdio connection, one HTTP protocol
// session, or the stateless HTTP credential), and another caller is told it does not exist.
// Thread-safe. Nothing here knows either era's wire shape (server_tasks.cc has them).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "base/unique_fd.h"
#include "mcp/message_sink.h"

namespace mcpexec::mcp {

// kInputRequired: the run waits for the client's answers (tasks/update; the stateless era).
enum class TaskStatus { kWorking, kInputRequired, kCompleted, kFailed, kCancelled };

const char* TaskStatusName(TaskStatus status);
// Completed, failed or cancelled: the status never changes again.
bool IsTerminal(TaskStatus status);

struct TaskLimits {
  // Tasks kept at once, running or finished (MCP_EXEC_MAX_TASKS). Finished ones are dropped,
  // oldest first, to make room; 0 turns tasks off.
  size_t max_tasks = 1000;
  // Running tasks of one caller (MCP_EXEC_MAX_TASKS_PER_CALLER).
  size_t max_running_per_caller = 16;
  // Bytes of finished results kept in all (MCP_EXEC_TASK_RESULTS_BYTES); the oldest go first.
  size_t max_result_bytes = 256u << 20;
  // The longest and the default time a task is kept after its creation (MCP_EXEC_TASK_TTL_S).
  int64_t max_ttl_ms = 3600 * 1000;
  // A requested TTL below this is raised to it, and an ended task is kept at least this long
  // after its end: long enough to be polled once.
  int64_t min_ttl_ms = 10 * 1000;
  int64_t poll_interval_ms = 1000;
};

// What a client sees of a task at one moment.
struct TaskView {
  std::string id;
  TaskStatus status = TaskStatus::kWorking;
  std::string status_message;
  std::chrono::system_clock::time_point created;
  std::chrono::system_clock::time_point updated;
  int64_t ttl_ms = 0;
  int64_t poll_interval_ms = 0;
  // kCompleted and kCancelled: the CallToolResult (null when a cancelled run left none).
  // kFailed: a JSON-RPC error object {code, message}.
  nlohmann::json payload;
  size_t payload_bytes = 0;  // of `payload` serialized, once the task has ended
  // kInputRequired: the requests not answered yet, by key ({key: {method, params}}).
  nlohmann::json input_requests;
  // Counts the status changes: of two views of one task, the higher is the newer.
  uint64_t version = 0;
};

class TaskStore;

// One task. The run holds it while it runs; the store while it is kept.
class Task {
 public:
  const std::string& Id() const { return id_; }
  const std::string& Owner() const { return owner_; }
  // Readable once the task is cancelled: the run's ToolCallContext::cancel_fd. Closed when the
  // task ends (-1 from then on): only its run, which has returned by then, reads it.
  int CancelFd() const { return cancel_.Get(); }
  bool CancelRequested() const;
  TaskView View() const;
  // The same without the payload when it is larger than `max_payload_bytes` (it is then null,
  // and payload_bytes says how large it is).
  TaskView View(size_t max_payload_bytes) const;

  // Where the run's notifications (progress, log messages, its end) go: the sink of a request
  // that waits for the task (tasks/result) while one does, else its home: the connection of the
  // request that made it (stdio, legacy SSE), or Streamable HTTP's standalone stream. Null when
  // there is nowhere to send them, and once the task has ended (nothing keeps a request's reply
  // queue alive past it).
  std::shared_ptr<MessageSink> NotificationSink() const;
  void SetNotificationSink(std::shared_ptr<MessageSink> sink);
  void SetHomeSink(std::shared_ptr<MessageSink> sink);
  // The waiting request whose sink that is went away (tasks/result given up): its reply queue
  // is not kept alive, and the notifications go home again.
  void DropNotificationSink(const MessageSink* sink);

  // Called by the run: shows `requests` ({key: {method, params}}) to the client as
  // input_required and waits until every key has an answer (Answer). Returns the answers by key,
  // or nullopt when the task is cancelled meanwhile, or its TTL passes first (it then ends
  // cancelled, saying so).
  std::optional<nlohmann::json> AwaitInput(const nlohmann::json& requests);
  // The client's answers (tasks/update): each key still awaited is taken, others are ignored.
  // The run resumes once none is left.
  void Answer(const nlohmann::json& responses);

 private:
  friend class TaskStore;
  // Tells the store's ChangeNotice of the view as it is now, without the lock.
  void Changed(std::unique_lock<std::mutex>& lock);

  std::string id_;
  std::string owner_;
  UniqueFd cancel_;   // eventfd, until the task ends; under mu_ once the run has started
  uint64_t seq_ = 0;  // creation order: the list cursor
  std::chrono::steady_clock::time_point created_steady_;
  std::chrono::steady_clock::time_point ended_steady_;  // under mu_, once terminal

  mutable std::mutex mu_;
  std::condition_variable input_cv_;  // AwaitInput's: answered or cancelled
  TaskView view_;
  nlohmann::json answers_;  // for the keys of view_.input_requests answered so far
  bool cancel_requested_ = false;
  std::shared_ptr<MessageSink> notify_;  // a waiting request's
  std::shared_ptr<MessageSink> home_;
  std::function<void(const std::string& owner, const TaskView& view)> on_change_;  // the store's
  // Requests waiting for the task's end (TaskStore::WhenDone): each called once, with the
  // terminal view, when it ends, unless dropped first (StopWaiting).
  struct Waiter {
    uint64_t number;
    int kind;  // TaskStore::WaitKind
    std::function<void(const TaskView&)> done;
  };
  std::vector<Waiter> on_done_;
  uint64_t waits_made_ = 0;
};

class TaskStore {
 public:
  // Tells the client that a task has ended, on the sink its notifications went to (2025-11-25's
  // notifications/tasks/status: the wire is the server's), before the requests waiting for it
  // are answered.
  using EndNotice = void (*)(const TaskView& view, MessageSink& to);
  // Tells whoever listens to `owner`'s tasks that one changed status: it needs input, it works
  // again, or it ended (after the EndNotice, before the waiting requests are answered). Called
  // without the store's and the task's locks.
  using ChangeNotice = std::function<void(const std::string& owner, const TaskView& view)>;
  explicit TaskStore(TaskLimits limits, EndNotice on_end = nullptr,
                     ChangeNotice on_change = nullptr);

  bool Enabled() const { return limits_.max_tasks > 0; }
  const TaskLimits& Limits() const { return limits_; }

  // A new running task of `owner`, kept for `requested_ttl_ms` (default and cap:
  // max_ttl_ms, floor: min_ttl_ms). Fails, with a message for the client, when a limit is
  // reached.
  Result<std::shared_ptr<Task>> Create(const std::string& owner,
                                       std::optional<int64_t> requested_ttl_ms);
  // Forgets a task whose run never started (the worker pool refused it).
  void Discard(const std::shared_ptr<Task>& task);

  // The task `id` when it is kept and `owner`'s; nullptr otherwise (the two are not told apart).
  std::shared_ptr<Task> Find(const std::string& owner, const std::string& id);

  // Ends a running task: kCompleted with a CallToolResult, kFailed with an error object. A task
  // whose cancellation was asked ends kCancelled whatever the run returned. No effect on a task
  // that has ended. Runs the task's WhenDone callbacks.
  void Finish(const std::shared_ptr<Task>& task, TaskStatus status, nlohmann::json payload);

  // What a request waits for: the task's outcome (tasks/result), or its run's end once asked to
  // stop (tasks/cancel). Each kind has kMaxWaiters places a task, so that requests waiting for
  // the outcome never keep the owner from cancelling it.
  enum WaitKind { kWaitForResult, kWaitForCancel };
  static constexpr size_t kMaxWaiters = 8;
  // Calls `done` with the task's terminal view: at once when it has ended, else when it ends
  // (on the thread that ends it). Never blocks. Returns the wait's number for StopWaiting (0
  // when `done` was called at once), or nullopt, and `done` dropped, when kMaxWaiters requests
  // of `kind` wait for the task already.
  std::optional<uint64_t> WhenDone(const std::shared_ptr<Task>& task, WaitKind kind,
                                   std::function<void(const TaskView&)> done);
  // Drops a wait whose request went away (cancelled, or its stream closed) before the task
  // ended: `done` is not called, and its place is free again.
  void StopWaiting(const std::shared_ptr<Task>& task, uint64_t wait);

  // Asks a running task's run to stop (its cancel fd becomes readable); the task ends
  // kCancelled when the run returns. False when the task had ended already.
  bool RequestCancel(const std::shared_ptr<Task>& task);
  // The run was stopped by something else (ToolCallContext::mark_cancelled): the task ends
  // kCancelled, with `why` as its status message, when the run returns.
  static void MarkCancelled(const std::shared_ptr<Task>& task, const std::string& why);

  // One page of `owner`'s tasks, oldest first, from `cursor` (empty: the start). Sets
  // `next_cursor` (empty when there is no more). False when `cursor` is not one this store gave.
  bool List(const std::string& owner, const std::string& cursor, size_t page_size,
            std::vector<TaskView>& page, std::string& next_cursor);

  // Cancels and forgets every task of `owner` (its connection or protocol session is gone).
  void DropOwner(const std::string& owner);
  // Asks every running task to stop: the server is stopping.
  void CancelAll();

  struct Stats {
    size_t kept = 0;
    size_t running = 0;
    size_t result_bytes = 0;
    uint64_t created = 0;
    uint64_t refused = 0;  // Create calls over a limit
    uint64_t dropped = 0;  // finished tasks dropped before their TTL to stay within the limits
  };
  Stats GetStats() const;

 private:
  // What ending a task leaves to do once the locks are released.
  struct Ended {
    std::vector<std::function<void(const TaskView&)>> callbacks;
    TaskView view;
    std::string owner;
    std::shared_ptr<MessageSink> notify;  // the task's notification sink, if it had one
  };
  // Once the locks are released: the end notice, then the waiting requests' answers.
  void Announce(Ended& ended) const;
  // With mu_ held: ends a running task with `status` (kCancelled when its cancellation was
  // asked) and `payload` of `bytes`; false when it had ended already.
  bool EndLocked(Task& task, TaskStatus status, nlohmann::json payload, size_t bytes,
                 Ended& ended);
  // With mu_ held: drops terminal tasks past their TTL, then, while `need_slot` (one more task
  // must fit) or the result bytes exceed the limit, the oldest terminal one of the owner that
  // keeps the most (tasks, or result bytes): a client's flood drops its own results before
  // another client's.
  void Evict(bool need_slot);
  // Ended, past its TTL and past the grace after its end.
  bool Expired(const Task& task, std::chrono::steady_clock::time_point now) const;
  void Forget(std::map<std::string, std::shared_ptr<Task>>::iterator it, bool early);

  const TaskLimits limits_;
  const EndNotice on_end_;
  const ChangeNotice on_change_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Task>> tasks_;  // by id
  std::deque<std::string> order_;                       // ids, oldest first (may hold gone ones)
  std::chrono::steady_clock::time_point last_sweep_;    // Evict's pass over every task
  std::map<std::string, size_t> running_by_owner_;
  // What each owner keeps, for Evict: its tasks, its results' bytes, and its ended tasks' ids,
  // oldest first (they may include forgotten ones). Gone with the owner's last task.
  struct Share {
    size_t kept = 0;
    size_t result_bytes = 0;
    std::deque<std::string> ended;
  };
  std::map<std::string, Share> shares_;
  size_t running_ = 0;
  size_t result_bytes_ = 0;
  uint64_t created_ = 0;
  uint64_t refused_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace mcpexec::mcp
