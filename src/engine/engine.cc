#include "engine/engine.h"

#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "log/log.h"
#include "sandbox/sandbox.h"

namespace mcpexec::engine {
namespace {

Result<sandbox::RunResult> RunCold(std::shared_ptr<const sandbox::LaunchPlan> plan,
                                   const sandbox::Program& program,
                                   const sandbox::RunLimits& limits,
                                   const sandbox::RunHooks& hooks) {
  MCPEXEC_ASSIGN_OR_RETURN(sandbox::Sandbox box, sandbox::Sandbox::Create(std::move(plan)));
  return box.Run(program, limits, hooks);
}

class ColdEngine final : public Engine {
 public:
  explicit ColdEngine(std::shared_ptr<const sandbox::LaunchPlan> plan) : plan_(std::move(plan)) {}
  const char* Name() const override { return "cold"; }
  Result<sandbox::RunResult> Run(const sandbox::Program& program, const sandbox::RunLimits& limits,
                                 const sandbox::RunHooks& hooks) override {
    return RunCold(plan_, program, limits, hooks);
  }
  const sandbox::LaunchPlan& Plan() const override { return *plan_; }

 private:
  const std::shared_ptr<const sandbox::LaunchPlan> plan_;
};

// Retries of a refill that failed, doubling up to the longest.
constexpr auto kFirstRetry = std::chrono::milliseconds(250);
constexpr auto kLongestRetry = std::chrono::seconds(30);

class PoolEngine final : public Engine {
 public:
  PoolEngine(std::shared_ptr<const sandbox::LaunchPlan> cold,
             std::shared_ptr<const sandbox::LaunchPlan> warm, const PoolOptions& options)
      : cold_(std::move(cold)), warm_(std::move(warm)), options_(options) {}

  ~PoolEngine() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (refiller_.joinable()) refiller_.join();
  }

  // Starts the refiller and waits for its first sandbox (or its first error).
  Result<void> Start() {
    refiller_ = std::thread([this] { Refill(); });
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !ready_.empty() || first_error_; });
    if (first_error_) return *first_error_;
    return Ok();
  }

  const char* Name() const override { return "pool"; }
  const sandbox::LaunchPlan& Plan() const override { return *cold_; }

  Result<sandbox::RunResult> Run(const sandbox::Program& program, const sandbox::RunLimits& limits,
                                 const sandbox::RunHooks& hooks) override {
    for (;;) {
      std::optional<sandbox::Sandbox> box = Take();
      // Never wait for a refill: a cold run starts sooner than a warm interpreter imports.
      if (!box) return RunCold(cold_, program, limits, hooks);
      if (!box->Waiting()) {
        log::Warn("a prepared sandbox ended while it waited; it is dropped");
        continue;
      }
      return box->Run(program, limits, hooks);
    }
  }

 private:
  std::optional<sandbox::Sandbox> Take() {
    std::optional<sandbox::Sandbox> box;
    {
      std::lock_guard lock(mutex_);
      if (ready_.empty()) return box;
      box.emplace(std::move(ready_.front()));
      ready_.pop_front();
    }
    changed_.notify_all();
    return box;
  }

  bool NeedsOne() const {
    return ready_.size() < options_.size && (options_.refill || made_ < options_.size);
  }

  // The pool's sandboxes are created on this thread, which lives as long as the pool: a
  // sandbox dies with the thread that created it (Sandbox::Create).
  void Refill() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    auto retry = kFirstRetry;
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [this] { return stopping_ || NeedsOne(); });
      if (stopping_) return;
      lock.unlock();
      Result<sandbox::Sandbox> box = sandbox::Sandbox::Create(warm_);
      lock.lock();
      if (box.ok()) {
        ready_.push_back(std::move(*box));
        ++made_;
        retry = kFirstRetry;
        changed_.notify_all();
        continue;
      }
      if (made_ == 0) {
        first_error_ = box.error();
        changed_.notify_all();
        return;
      }
      log::Warn("cannot prepare a pool sandbox; runs are cold until one is ready",
                {{"error", box.error().message}, {"retry_ms", retry.count()}});
      changed_.wait_for(lock, retry, [this] { return stopping_; });
      retry = std::min<std::chrono::milliseconds>(retry * 2, kLongestRetry);
    }
  }

  const std::shared_ptr<const sandbox::LaunchPlan> cold_;
  const std::shared_ptr<const sandbox::LaunchPlan> warm_;
  const PoolOptions options_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<sandbox::Sandbox> ready_;
  size_t made_ = 0;
  bool stopping_ = false;
  std::optional<Error> first_error_;
  std::thread refiller_;  // last: joined before the members it uses are destroyed
};

}  // namespace

std::unique_ptr<Engine> MakeColdEngine(std::shared_ptr<const sandbox::LaunchPlan> plan) {
  return std::make_unique<ColdEngine>(std::move(plan));
}

Result<std::unique_ptr<Engine>> MakePoolEngine(std::shared_ptr<const sandbox::LaunchPlan> cold,
                                               std::shared_ptr<const sandbox::LaunchPlan> warm,
                                               const PoolOptions& options) {
  auto pool = std::make_unique<PoolEngine>(std::move(cold), std::move(warm), options);
  MCPEXEC_RETURN_IF_ERROR(pool->Start());
  return std::unique_ptr<Engine>(std::move(pool));
}

}  // namespace mcpexec::engine
