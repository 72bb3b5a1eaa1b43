#include "mcp/worker_pool.h"

namespace mcpexec::mcp {

WorkerPool::WorkerPool(size_t workers, size_t queue_capacity)
    : capacity_(queue_capacity), workers_(workers == 0 ? 1 : workers) {
  threads_.reserve(workers_);
  for (size_t i = 0; i < workers_; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkerPool::~WorkerPool() { Drain(); }

void WorkerPool::Drain() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

bool WorkerPool::TrySubmit(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    if (queue_.size() >= capacity_) {
      ++rejected_;
      return false;
    }
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void WorkerPool::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    task();
    std::lock_guard lock(mu_);
    --running_;
  }
}

WorkerPool::Stats WorkerPool::GetStats() const {
  std::lock_guard lock(mu_);
  return {queue_.size(), running_, rejected_};
}

}  // namespace mcpexec::mcp
