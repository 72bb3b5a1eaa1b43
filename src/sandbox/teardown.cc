#include "sandbox/teardown.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "sandbox/zygote.h"

namespace mcpexec::sandbox {

struct Teardown::State {
  mutable std::mutex mutex;
  std::condition_variable drained;
  // Heap-allocated so that the thread can poll them while Add appends; only the thread (or
  // Add, past the bound, with remains it never queued) removes them.
  std::vector<std::unique_ptr<SandboxRemains>> pending;
  Stats stats;
  FailureHandler on_failure;
  bool stopping = false;
  UniqueFd wake{eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  std::thread thread;

  void Wake() const {
    const uint64_t one = 1;
    (void)!write(wake.Get(), &one, sizeof one);
  }

  // Reaps init (it is ending: this returns at once or soon), then removes the cgroup.
  void Complete(SandboxRemains& remains) {
    std::optional<Error> failure;
    if (Result<int> reaped = remains.init.Wait(); !reaped.ok()) failure = reaped.error();
    if (remains.cgroup) {
      if (Result<void> removed = remains.cgroup->Remove(); !removed.ok()) {
        failure = removed.error();
      }
      remains.cgroup.reset();
    }
    remains.zygote.reset();
    FailureHandler handler;
    {
      std::lock_guard lock(mutex);
      ++stats.completed;
      if (failure) ++stats.failed;
      if (failure) handler = on_failure;
    }
    if (handler) handler(*failure);
  }

  void Loop() {
    std::vector<SandboxRemains*> watched;
    std::vector<pollfd> fds;
    for (;;) {
      watched.clear();
      fds.assign(1, pollfd{wake.Get(), POLLIN, 0});
      bool ready_now = false;
      {
        std::lock_guard lock(mutex);
        if (pending.empty()) {
          drained.notify_all();
          if (stopping) return;
        }
        for (const auto& remains : pending) {
          watched.push_back(remains.get());
          // A reaped init's pidfd no longer says anything: its remains are ready now.
          ready_now |= remains->init.Reaped();
          fds.push_back(pollfd{remains->init.PidFd(), POLLIN, 0});
        }
      }
      if (poll(fds.data(), fds.size(), ready_now ? 0 : -1) < 0 && errno != EINTR) {
        for (pollfd& fd : fds) fd.revents = POLLIN;  // wait for each init in turn
      }
      uint64_t count;
      while (read(wake.Get(), &count, sizeof count) > 0) {
      }
      for (size_t i = 0; i < watched.size(); ++i) {
        SandboxRemains* remains = watched[i];
        if (fds[i + 1].revents == 0 && !remains->init.Reaped()) continue;
        Complete(*remains);
        std::lock_guard lock(mutex);
        std::erase_if(pending, [&](const auto& p) { return p.get() == remains; });
      }
    }
  }
};

Teardown& Teardown::Shared() {
  // Never destroyed: a server's threads may still hand it remains while the process exits.
  // Orderly exits Drain() it first.
  static Teardown* const shared = new Teardown();
  return *shared;
}

Teardown::Teardown() : state_(std::make_unique<State>()) {}

Teardown::~Teardown() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->Wake();
  if (state_->thread.joinable()) state_->thread.join();
}

void Teardown::Add(SandboxRemains remains) {
  std::unique_lock lock(state_->mutex);
  if (state_->pending.size() >= kMaxPending || !state_->wake.Valid()) {
    ++state_->stats.inline_;
    lock.unlock();
    state_->Complete(remains);
    return;
  }
  state_->pending.push_back(std::make_unique<SandboxRemains>(std::move(remains)));
  if (!state_->thread.joinable()) state_->thread = std::thread([this] { state_->Loop(); });
  lock.unlock();
  state_->Wake();
}

void Teardown::Drain() {
  std::unique_lock lock(state_->mutex);
  state_->drained.wait(lock, [this] { return state_->pending.empty(); });
}

void Teardown::OnFailure(FailureHandler handler) {
  std::lock_guard lock(state_->mutex);
  state_->on_failure = std::move(handler);
}

Teardown::Stats Teardown::GetStats() const {
  std::lock_guard lock(state_->mutex);
  Stats stats = state_->stats;
  stats.pending = state_->pending.size();
  return stats;
}

}  // namespace mcpexec::sandbox
