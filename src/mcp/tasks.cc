#include "mcp/tasks.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "base/random.h"

namespace mcpexec::mcp {

const char* TaskStatusName(TaskStatus status) {
  switch (status) {
    case TaskStatus::kWorking:
      return "working";
    case TaskStatus::kInputRequired:
      return "input_required";
    case TaskStatus::kCompleted:
      return "completed";
    case TaskStatus::kFailed:
      return "failed";
    case TaskStatus::kCancelled:
      return "cancelled";
  }
  return "failed";
}

bool IsTerminal(TaskStatus status) {
  return status != TaskStatus::kWorking && status != TaskStatus::kInputRequired;
}

bool Task::CancelRequested() const {
  std::lock_guard lock(mu_);
  return cancel_requested_;
}

TaskView Task::View() const {
  std::lock_guard lock(mu_);
  return view_;
}

TaskView Task::View(size_t max_payload_bytes) const {
  std::lock_guard lock(mu_);
  if (view_.payload_bytes <= max_payload_bytes) return view_;
  TaskView view;
  view.id = view_.id;
  view.status = view_.status;
  view.status_message = view_.status_message;
  view.created = view_.created;
  view.updated = view_.updated;
  view.ttl_ms = view_.ttl_ms;
  view.poll_interval_ms = view_.poll_interval_ms;
  view.payload_bytes = view_.payload_bytes;
  view.input_requests = view_.input_requests;
  view.version = view_.version;
  return view;
}

std::shared_ptr<MessageSink> Task::NotificationSink() const {
  std::lock_guard lock(mu_);
  return notify_ ? notify_ : home_;
}

void Task::SetNotificationSink(std::shared_ptr<MessageSink> sink) {
  std::lock_guard lock(mu_);
  if (!IsTerminal(view_.status)) notify_ = std::move(sink);
}

void Task::SetHomeSink(std::shared_ptr<MessageSink> sink) {
  std::lock_guard lock(mu_);
  if (!IsTerminal(view_.status)) home_ = std::move(sink);
}

void Task::DropNotificationSink(const MessageSink* sink) {
  std::shared_ptr<MessageSink> dropped;  // released after the lock
  std::lock_guard lock(mu_);
  if (notify_.get() == sink) dropped = std::move(notify_);
}

std::optional<nlohmann::json> Task::AwaitInput(const nlohmann::json& requests) {
  std::unique_lock lock(mu_);
  if (cancel_requested_ || IsTerminal(view_.status)) return std::nullopt;
  view_.status = TaskStatus::kInputRequired;
  view_.updated = std::chrono::system_clock::now();
  ++view_.version;
  view_.input_requests = requests;
  answers_ = nlohmann::json::object();
  Changed(lock);
  // Bounded by the task's TTL: a worker thread waits here, and a client may never answer.
  const bool answered =
      input_cv_.wait_until(lock, created_steady_ + std::chrono::milliseconds(view_.ttl_ms), [&] {
        return cancel_requested_ || view_.input_requests.empty();
      });
  view_.input_requests = nullptr;
  if (!answered) {
    cancel_requested_ = true;
    view_.status_message = "no answer came within the task's TTL";
  }
  if (cancel_requested_) return std::nullopt;
  view_.status = TaskStatus::kWorking;
  view_.updated = std::chrono::system_clock::now();
  ++view_.version;
  nlohmann::json answers = std::exchange(answers_, nlohmann::json::object());
  Changed(lock);
  return answers;
}

void Task::Changed(std::unique_lock<std::mutex>& lock) {
  if (!on_change_) return;
  const TaskView view = view_;
  lock.unlock();
  on_change_(owner_, view);
  lock.lock();
}

void Task::Answer(const nlohmann::json& responses) {
  std::lock_guard lock(mu_);
  if (view_.status != TaskStatus::kInputRequired || !responses.is_object()) return;
  for (const auto& [key, value] : responses.items()) {
    if (!view_.input_requests.contains(key)) continue;
    answers_[key] = value;
    view_.input_requests.erase(key);
  }
  view_.updated = std::chrono::system_clock::now();
  if (view_.input_requests.empty()) input_cv_.notify_all();
}

TaskStore::TaskStore(TaskLimits limits, EndNotice on_end, ChangeNotice on_change)
    : limits_(limits), on_end_(on_end), on_change_(std::move(on_change)) {}

void TaskStore::Announce(Ended& ended) const {
  if (ended.notify && on_end_ != nullptr) on_end_(ended.view, *ended.notify);
  ended.notify.reset();
  if (on_change_) on_change_(ended.owner, ended.view);
  for (auto& done : ended.callbacks) done(ended.view);
}

Result<std::shared_ptr<Task>> TaskStore::Create(const std::string& owner,
                                                std::optional<int64_t> requested_ttl_ms) {
  Result<std::string> id = RandomHex(16);
  if (!id.ok()) return std::move(id).error();
  auto task = std::make_shared<Task>();
  task->id_ = *id;
  task->owner_ = owner;
  task->on_change_ = on_change_;
  task->cancel_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!task->cancel_.Valid()) return Errno(ErrorCode::kUnavailable, "eventfd for a task");
  task->created_steady_ = std::chrono::steady_clock::now();
  const int64_t ttl = std::clamp(requested_ttl_ms.value_or(limits_.max_ttl_ms),
                                 std::min(limits_.min_ttl_ms, limits_.max_ttl_ms),
                                 limits_.max_ttl_ms);
  TaskView& view = task->view_;
  view.id = *id;
  view.created = view.updated = std::chrono::system_clock::now();
  view.ttl_ms = ttl;
  view.poll_interval_ms = limits_.poll_interval_ms;

  std::lock_guard lock(mu_);
  if (!Enabled()) return MakeError(ErrorCode::kFailedPrecondition, "tasks are turned off");
  auto running = running_by_owner_.find(owner);
  const size_t mine = running == running_by_owner_.end() ? 0 : running->second;
  if (mine >= limits_.max_running_per_caller) {
    ++refused_;
    return MakeError(ErrorCode::kResourceExhausted,
                     "too many tasks running: " + std::to_string(mine) +
                         " of this client's run now (MCP_EXEC_MAX_TASKS_PER_CALLER); wait for "
                         "one to end or cancel one");
  }
  Evict(true);
  if (tasks_.size() >= limits_.max_tasks) {
    ++refused_;
    return MakeError(ErrorCode::kResourceExhausted,
                     "too many tasks in the server (MCP_EXEC_MAX_TASKS); try again when one "
                     "has ended");
  }
  task->seq_ = ++created_;
  ++running_by_owner_[owner];
  ++running_;
  ++shares_[owner].kept;
  tasks_.emplace(task->id_, task);
  order_.push_back(task->id_);
  return task;
}

std::shared_ptr<Task> TaskStore::Find(const std::string& owner, const std::string& id) {
  std::lock_guard lock(mu_);
  Evict(false);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second->owner_ != owner) return nullptr;
  if (Expired(*it->second, std::chrono::steady_clock::now())) {
    Forget(it, false);
    return nullptr;
  }
  return it->second;
}

bool TaskStore::EndLocked(Task& task, TaskStatus status, nlohmann::json payload, size_t bytes,
                          Ended& ended) {
  {
    std::lock_guard task_lock(task.mu_);
    if (IsTerminal(task.view_.status)) return false;
    if (task.cancel_requested_) status = TaskStatus::kCancelled;
    task.view_.status = status;
    task.view_.updated = std::chrono::system_clock::now();
    if (status == TaskStatus::kCancelled && task.view_.status_message == "cancelling") {
      task.view_.status_message = "cancelled by the client";
    }
    if (status == TaskStatus::kFailed && payload.is_object()) {
      task.view_.status_message = payload.value("message", std::string("the task failed"));
    }
    task.ended_steady_ = std::chrono::steady_clock::now();
    // Its run has returned (Finish) or never started (Discard): nothing reads the cancel
    // eventfd any more, and a kept task holds no descriptor (a store of MCP_EXEC_MAX_TASKS ended
    // tasks held as many). RequestCancel writes to it only under this lock, before the end.
    task.cancel_.Reset();
    task.view_.payload = std::move(payload);
    task.view_.payload_bytes = bytes;
    ++task.view_.version;
    task.view_.input_requests = nullptr;
    ended.notify = task.notify_ ? std::move(task.notify_) : std::move(task.home_);
    task.notify_.reset();
    task.home_.reset();
    for (Task::Waiter& waiter : task.on_done_) ended.callbacks.push_back(std::move(waiter.done));
    task.on_done_.clear();
    ended.view = task.view_;
    ended.owner = task.owner_;
  }
  auto owner = running_by_owner_.find(task.owner_);
  if (owner != running_by_owner_.end() && --owner->second == 0) running_by_owner_.erase(owner);
  --running_;
  return true;
}

void TaskStore::Finish(const std::shared_ptr<Task>& task, TaskStatus status,
                       nlohmann::json payload) {
  // Measured before the locks: a large result takes a while, and text that is not UTF-8 must
  // not throw half-way through.
  const size_t bytes =
      payload.is_null()
          ? 0
          : payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
  Ended ended;
  {
    std::lock_guard lock(mu_);
    if (!EndLocked(*task, status, std::move(payload), bytes, ended)) return;
    // A task forgotten while it ran (DropOwner) is not kept.
    if (tasks_.count(task->id_) != 0) {
      result_bytes_ += bytes;
      Share& share = shares_[task->owner_];
      share.result_bytes += bytes;
      share.ended.push_back(task->id_);
      Evict(false);
    }
  }
  Announce(ended);
}

std::optional<uint64_t> TaskStore::WhenDone(const std::shared_ptr<Task>& task, WaitKind kind,
                                            std::function<void(const TaskView&)> done) {
  TaskView view;
  {
    std::lock_guard lock(task->mu_);
    if (!IsTerminal(task->view_.status)) {
      const auto same_kind = std::count_if(task->on_done_.begin(), task->on_done_.end(),
                                           [kind](const Task::Waiter& w) { return w.kind == kind; });
      if (static_cast<size_t>(same_kind) >= kMaxWaiters) return std::nullopt;
      const uint64_t number = ++task->waits_made_;
      task->on_done_.push_back({number, kind, std::move(done)});
      return number;
    }
    view = task->view_;
  }
  done(view);
  return 0;
}

void TaskStore::StopWaiting(const std::shared_ptr<Task>& task, uint64_t wait) {
  std::function<void(const TaskView&)> dropped;  // released after the lock: it may hold a sink
  std::lock_guard lock(task->mu_);
  auto it = std::find_if(task->on_done_.begin(), task->on_done_.end(),
                         [wait](const Task::Waiter& w) { return w.number == wait; });
  if (it == task->on_done_.end()) return;
  dropped = std::move(it->done);
  task->on_done_.erase(it);
}

void TaskStore::MarkCancelled(const std::shared_ptr<Task>& task, const std::string& why) {
  std::lock_guard lock(task->mu_);
  if (IsTerminal(task->view_.status)) return;
  task->cancel_requested_ = true;
  task->view_.status_message = why;
}

bool TaskStore::RequestCancel(const std::shared_ptr<Task>& task) {
  std::lock_guard lock(task->mu_);
  if (IsTerminal(task->view_.status)) return false;
  if (task->cancel_requested_) return true;
  task->cancel_requested_ = true;
  task->view_.status_message = "cancelling";
  task->input_cv_.notify_all();
  // Under the lock, while the task has not ended: its end closes the descriptor (EndLocked).
  const uint64_t one = 1;
  (void)!write(task->cancel_.Get(), &one, sizeof one);
  return true;
}

bool TaskStore::List(const std::string& owner, const std::string& cursor, size_t page_size,
                     std::vector<TaskView>& page, std::string& next_cursor) {
  uint64_t from = 0;
  if (!cursor.empty()) {
    if (cursor.size() > 19 || cursor.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    from = std::stoull(cursor);
  }
  page.clear();
  next_cursor.clear();
  std::lock_guard lock(mu_);
  Evict(false);
  const auto now = std::chrono::steady_clock::now();
  for (const std::string& id : order_) {
    auto it = tasks_.find(id);
    if (it == tasks_.end() || it->second->owner_ != owner || it->second->seq_ < from) continue;
    if (Expired(*it->second, now)) continue;
    if (page.size() == page_size) {
      next_cursor = std::to_string(it->second->seq_);
      break;
    }
    page.push_back(it->second->View());
  }
  return true;
}

void TaskStore::DropOwner(const std::string& owner) {
  std::vector<std::shared_ptr<Task>> mine;
  {
    std::lock_guard lock(mu_);
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      if (it->second->owner_ != owner) {
        ++it;
        continue;
      }
      mine.push_back(it->second);
      auto next = std::next(it);
      Forget(it, false);
      it = next;
    }
  }
  for (const auto& task : mine) RequestCancel(task);
}

void TaskStore::Discard(const std::shared_ptr<Task>& task) {
  Ended ended;
  {
    std::lock_guard lock(mu_);
    if (!EndLocked(*task, TaskStatus::kFailed,
                   {{"code", -32603}, {"message", "the task's run could not start"}}, 0, ended)) {
      return;
    }
    if (auto it = tasks_.find(task->id_); it != tasks_.end()) Forget(it, false);
  }
  Announce(ended);
}

void TaskStore::CancelAll() {
  std::vector<std::shared_ptr<Task>> all;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, task] : tasks_) all.push_back(task);
  }
  for (const auto& task : all) RequestCancel(task);
}

TaskStore::Stats TaskStore::GetStats() const {
  std::lock_guard lock(mu_);
  return Stats{tasks_.size(), running_, result_bytes_, created_, refused_, dropped_};
}

void TaskStore::Forget(std::map<std::string, std::shared_ptr<Task>>::iterator it, bool early) {
  auto share = shares_.find(it->second->owner_);
  {
    std::lock_guard task_lock(it->second->mu_);
    if (IsTerminal(it->second->view_.status)) {
      const size_t bytes = it->second->view_.payload_bytes;
      result_bytes_ -= bytes;
      if (share != shares_.end()) share->second.result_bytes -= bytes;
    }
  }
  if (share != shares_.end() && --share->second.kept == 0) shares_.erase(share);
  if (early) ++dropped_;
  tasks_.erase(it);
}

bool TaskStore::Expired(const Task& task, std::chrono::steady_clock::time_point now) const {
  std::lock_guard task_lock(task.mu_);
  return IsTerminal(task.view_.status) &&
         now - task.created_steady_ >= std::chrono::milliseconds(task.view_.ttl_ms) &&
         now - task.ended_steady_ >= std::chrono::milliseconds(limits_.min_ttl_ms);
}

void TaskStore::Evict(bool need_slot) {
  const auto now = std::chrono::steady_clock::now();
  // The tasks past their TTL, in one pass over all of them at most once a second (a lookup
  // checks the task it finds itself); the pass also trims the ids of forgotten tasks.
  if (now - last_sweep_ >= std::chrono::seconds(1)) {
    last_sweep_ = now;
    std::deque<std::string> kept;
    for (const std::string& id : order_) {
      auto it = tasks_.find(id);
      if (it == tasks_.end()) continue;
      if (Expired(*it->second, now)) {
        Forget(it, false);
        continue;
      }
      kept.push_back(id);
    }
    order_.swap(kept);
    for (auto& [owner, share] : shares_) {
      std::erase_if(share.ended, [this](const std::string& id) { return tasks_.count(id) == 0; });
    }
  }
  // Over a limit: an ended task goes, the oldest of the owner that keeps the most of what is
  // over, until within it. Running ones stay. One pass over the owners each, not the tasks.
  for (;;) {
    const bool slots = need_slot && tasks_.size() >= limits_.max_tasks;
    if (!slots && result_bytes_ <= limits_.max_result_bytes) return;
    Share* most = nullptr;
    for (auto& [owner, share] : shares_) {
      while (!share.ended.empty() && tasks_.count(share.ended.front()) == 0) share.ended.pop_front();
      if (share.ended.empty()) continue;
      if (most == nullptr || (slots ? share.kept > most->kept
                                    : share.result_bytes > most->result_bytes)) {
        most = &share;
      }
    }
    if (most == nullptr) return;  // every kept task runs
    auto it = tasks_.find(most->ended.front());
    most->ended.pop_front();
    Forget(it, !Expired(*it->second, now));  // may erase *most
  }
}

}  // namespace mcpexec::mcp
