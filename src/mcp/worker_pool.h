// WorkerPool: a fixed set of long-lived threads running tool calls, with a bounded queue.
// Long-lived matters: a sandbox dies with the thread that created it (PR_SET_PDEATHSIG).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mcpexec::mcp {

class WorkerPool {
 public:
  // `workers` threads (at least 1) and room for `queue_capacity` waiting tasks.
  WorkerPool(size_t workers, size_t queue_capacity);
  // Drain().
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task`; false (and `task` dropped) when the queue is full. Thread-safe.
  bool TrySubmit(std::function<void()> task);

  // Stops taking tasks, runs every queued one, and joins the threads. Idempotent. Call it
  // before destroying what the tasks use (the server, its tools).
  void Drain();

  size_t Workers() const { return workers_; }
  size_t QueueCapacity() const { return capacity_; }

  struct Stats {
    size_t queued = 0;    // tasks waiting for a thread
    size_t running = 0;   // tasks a thread runs now
    uint64_t rejected = 0;  // TrySubmit calls refused because the queue was full, since start
  };
  // Thread-safe.
  Stats GetStats() const;

 private:
  void Loop();

  const size_t capacity_;
  size_t workers_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t running_ = 0;
  uint64_t rejected_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace mcpexec::mcp
