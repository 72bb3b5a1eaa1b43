#include "engine/engine.h"

#include <pthread.h>
#include <signal.h>

#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "base/call_steps.h"
#include "engine/ready_target.h"
#include "log/log.h"
#include "sandbox/sandbox.h"
#include "sandbox/zygote.h"

namespace mcpexec::engine {
namespace {

Result<sandbox::RunResult> RunCold(std::shared_ptr<const sandbox::LaunchPlan> plan,
                                   const sandbox::Program& program,
                                   const sandbox::RunLimits& limits,
                                   const sandbox::RunHooks& hooks) {
  MCPEXEC_ASSIGN_OR_RETURN(sandbox::Sandbox box, sandbox::Sandbox::Create(std::move(plan)));
  MarkTaken("cold");
  return box.Run(program, limits, hooks);
}

// A warm sandbox made on request, when an engine has none ready: the cold plan with the warm
// agent (its plan compiled at the first request).
class WarmOnRequest {
 public:
  explicit WarmOnRequest(std::shared_ptr<const sandbox::LaunchPlan> cold) : cold_(std::move(cold)) {}
  Result<sandbox::Sandbox> Make() {
    std::shared_ptr<const sandbox::LaunchPlan> warm;
    {
      std::lock_guard lock(mutex_);
      if (!warm_) {
        sandbox::SandboxSpec spec = cold_->Spec();
        spec.warm = true;
        spec.zygote = false;
        MCPEXEC_ASSIGN_OR_RETURN(warm_, sandbox::Compile(spec, cold_->LimitsBackend()));
      }
      warm = warm_;
    }
    return sandbox::Sandbox::Create(std::move(warm));
  }

 private:
  const std::shared_ptr<const sandbox::LaunchPlan> cold_;
  std::mutex mutex_;
  std::shared_ptr<const sandbox::LaunchPlan> warm_;
};

class ColdEngine final : public Engine {
 public:
  explicit ColdEngine(std::shared_ptr<const sandbox::LaunchPlan> plan)
      : plan_(std::move(plan)), warm_(plan_) {}
  const char* Name() const override { return "cold"; }
  Result<sandbox::RunResult> Run(const sandbox::Program& program, const sandbox::RunLimits& limits,
                                 const sandbox::RunHooks& hooks) override {
    return RunCold(plan_, program, limits, hooks);
  }
  Result<sandbox::Sandbox> TakeWarm() override { return warm_.Make(); }
  const sandbox::LaunchPlan& Plan() const override { return *plan_; }
  EngineState State() const override { return {}; }

 private:
  const std::shared_ptr<const sandbox::LaunchPlan> plan_;
  WarmOnRequest warm_;
};

// Retries of a refill that failed, doubling up to the longest.
constexpr auto kFirstRetry = std::chrono::milliseconds(250);
constexpr auto kLongestRetry = std::chrono::seconds(30);

// Where a pool's ready sandboxes come from.
class SandboxSource {
 public:
  virtual ~SandboxSource() = default;
  virtual const char* Name() const = 0;
  // One more ready sandbox, with the package layer `layer` mounted when it is not empty (only a
  // source that HasLayers). Called on the refill thread only: what it starts dies with it.
  virtual Result<sandbox::Sandbox> Make(std::string_view layer) = 0;
  // A sandbox for a run that found none ready, made on the run's thread; nullopt: run cold.
  virtual std::optional<sandbox::Sandbox> MakeForRun(std::string_view /*layer*/) {
    return std::nullopt;
  }
  // Whether its sandboxes can mount a package layer.
  virtual bool HasLayers() const { return false; }
  // Fills in what the source knows of the engine's state (the zygote's fields). Thread-safe.
  virtual void AddState(EngineState& /*state*/) const {}
  // Adds the init pids of what the source holds itself (a live zygote's). Thread-safe.
  virtual void AddInits(std::vector<pid_t>& /*inits*/) const {}
};

// The pool: each sandbox a warm interpreter of its own.
class WarmSource final : public SandboxSource {
 public:
  explicit WarmSource(std::shared_ptr<const sandbox::LaunchPlan> warm) : warm_(std::move(warm)) {}
  const char* Name() const override { return "pool"; }
  Result<sandbox::Sandbox> Make(std::string_view /*layer*/) override {
    return sandbox::Sandbox::Create(warm_);
  }

 private:
  const std::shared_ptr<const sandbox::LaunchPlan> warm_;
};

constexpr auto kZygoteTimeout = std::chrono::seconds(30);

// What identifies the rootfs that prepared sandboxes (and a zygote) have mounted: a rebuilt one
// is a new directory or a new interpreter (a new inode, or new content: its mtime). Not its
// ctime, which a new hard link to it changes too (tests/deploy/container-check links the rootfs
// into a build context while other suites run). Two stat(2)s, cheap enough for every run.
struct RootfsStamp {
  dev_t dev = 0;
  ino_t dir = 0, python = 0;
  timespec python_changed{};
  bool operator==(const RootfsStamp& o) const {
    return dev == o.dev && dir == o.dir && python == o.python &&
           python_changed.tv_sec == o.python_changed.tv_sec &&
           python_changed.tv_nsec == o.python_changed.tv_nsec;
  }
};

RootfsStamp StampOf(const sandbox::LaunchPlan& plan) {
  RootfsStamp stamp;
  struct stat st;
  if (stat(plan.Spec().rootfs.c_str(), &st) == 0) {
    stamp.dev = st.st_dev;
    stamp.dir = st.st_ino;
  }
  if (stat((plan.Spec().rootfs + plan.ExecPath()).c_str(), &st) == 0) {
    stamp.python = st.st_ino;
    stamp.python_changed = st.st_mtim;
  }
  return stamp;
}

// Which directory a package layer's path names now: eviction renames a layer away before it
// removes it, and an install of the same set makes a new one. {0, 0} when there is none.
struct LayerId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const LayerId&) const = default;
};

LayerId LayerIdOf(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino};
}

// The zygote engine: sandboxes forked from one zygote, which is replaced after
// `max_forks` forks, after `max_age`, when the rootfs changes, and when it dies.
class ZygoteSource final : public SandboxSource {
 public:
  ZygoteSource(std::shared_ptr<const sandbox::LaunchPlan> plan, const PoolOptions& options)
      : plan_(std::move(plan)), options_(options) {}
  const char* Name() const override { return "zygote"; }

  bool HasLayers() const override { return !plan_->Spec().zygote_layers.empty(); }

  Result<sandbox::Sandbox> Make(std::string_view layer) override {
    std::shared_ptr<const sandbox::Zygote> zygote = Current();
    if (zygote && !zygote->Alive()) {
      log::Warn("the zygote has ended; runs are cold until a new one is ready",
                {{"forks", static_cast<int64_t>(zygote->Forks())}});
      Set(nullptr);
      zygote.reset();
    } else if (const char* why = zygote ? Stale(*zygote) : nullptr) {
      // The old one still forks the runs that find nothing ready until the new one is.
      log::Info("the zygote is replaced",
                {{"why", why},
                 {"forks", static_cast<int64_t>(zygote->Forks())},
                 {"age_s", static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::steady_clock::now() - zygote->Started())
                               .count())}});
      zygote.reset();
    }
    if (!zygote) {
      const RootfsStamp stamp = StampOf(*plan_);
      auto started = sandbox::Zygote::Start(plan_, kZygoteTimeout);
      if (!started.ok()) {
        Set(nullptr);  // never fork from a stale zygote once its replacement fails
        return started.error();
      }
      zygote = *started;
      std::lock_guard lock(mutex_);
      stamp_ = stamp;
      zygote_ = zygote;
    }
    return Counted(zygote->Fork(kZygoteTimeout, layer));
  }

  std::optional<sandbox::Sandbox> MakeForRun(std::string_view layer) override {
    std::shared_ptr<const sandbox::Zygote> zygote = Current();
    if (!zygote || !zygote->Alive() || RootfsChanged()) return std::nullopt;
    Result<sandbox::Sandbox> box = Counted(zygote->Fork(kZygoteTimeout, layer));
    if (box.ok()) return std::move(*box);
    log::Warn("the zygote could not fork a run; it runs cold", {{"error", box.error().message}});
    return std::nullopt;
  }

  void AddState(EngineState& state) const override {
    state.zygote = true;
    const std::shared_ptr<const sandbox::Zygote> zygote = Current();
    state.zygote_alive = zygote && zygote->Alive();
    state.zygote_forks = forks_.load(std::memory_order_relaxed);
  }

  void AddInits(std::vector<pid_t>& inits) const override {
    const std::shared_ptr<const sandbox::Zygote> zygote = Current();
    if (zygote && zygote->Alive()) inits.push_back(zygote->InitPid());
  }

 private:
  Result<sandbox::Sandbox> Counted(Result<sandbox::Sandbox> box) {
    if (box.ok()) forks_.fetch_add(1, std::memory_order_relaxed);
    return box;
  }
  std::shared_ptr<const sandbox::Zygote> Current() const {
    std::lock_guard lock(mutex_);
    return zygote_;
  }
  void Set(std::shared_ptr<const sandbox::Zygote> zygote) {
    std::lock_guard lock(mutex_);
    zygote_ = std::move(zygote);
  }
  bool RootfsChanged() {
    const RootfsStamp now = StampOf(*plan_);
    std::lock_guard lock(mutex_);
    return !(now == stamp_);
  }
  // Why `zygote` is due for replacement, or null when it is not.
  const char* Stale(const sandbox::Zygote& zygote) {
    if (zygote.Forks() >= options_.zygote_max_forks) return "forks";
    if (std::chrono::steady_clock::now() - zygote.Started() >= options_.zygote_max_age) {
      return "age";
    }
    return RootfsChanged() ? "rootfs" : nullptr;
  }

  const std::shared_ptr<const sandbox::LaunchPlan> plan_;
  const PoolOptions options_;
  mutable std::mutex mutex_;
  std::shared_ptr<const sandbox::Zygote> zygote_;
  RootfsStamp stamp_;
  std::atomic<uint64_t> forks_{0};
};

class PoolEngine final : public Engine {
 public:
  PoolEngine(std::shared_ptr<const sandbox::LaunchPlan> cold,
             std::unique_ptr<SandboxSource> source, const PoolOptions& options)
      : cold_(std::move(cold)),
        source_(std::move(source)),
        options_(options),
        warm_on_request_(cold_),
        target_(options.size, options.refill ? options.max_size : options.size,
                options.peak_window),
        stamp_(StampOf(*cold_)) {}

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

  const char* Name() const override { return source_->Name(); }
  const sandbox::LaunchPlan& Plan() const override { return *cold_; }
  EngineState State() const override {
    EngineState state;
    state.name = source_->Name();
    {
      std::lock_guard lock(mutex_);
      state.ready = ready_.size();
      state.target = target_.Target(ReadyTarget::Clock::now());
    }
    source_->AddState(state);
    return state;
  }

  std::vector<pid_t> HeldInits() const override {
    std::vector<pid_t> inits;
    source_->AddInits(inits);
    std::lock_guard lock(mutex_);
    for (const sandbox::Sandbox& box : ready_) inits.push_back(box.InitPid());
    for (const LayeredBox& layered : layered_ready_) inits.push_back(layered.box.InitPid());
    return inits;
  }

  Result<sandbox::RunResult> Run(const sandbox::Program& program, const sandbox::RunLimits& limits,
                                 const sandbox::RunHooks& hooks) override {
    const InFlight in_flight(*this);
    const bool rootfs_changed = DropIfRootfsChanged();
    bool made_for_run = false;
    for (;;) {
      std::optional<sandbox::Sandbox> box = Take();
      const char* how = "ready";
      if (!box && !made_for_run && !rootfs_changed) {
        box = source_->MakeForRun({});
        made_for_run = true;
        how = "forked";
      }
      // Never wait for a refill: a cold run starts sooner than a warm interpreter imports.
      if (!box) return RunCold(cold_, program, limits, hooks);
      if (!box->Waiting()) {
        log::Warn("a prepared sandbox ended while it waited; it is dropped");
        continue;
      }
      MarkTaken(how);
      return box->Run(program, limits, hooks);
    }
  }

  Result<sandbox::Sandbox> TakeWarm() override {
    const bool rootfs_changed = DropIfRootfsChanged();
    for (;;) {
      std::optional<sandbox::Sandbox> box = Take();
      if (!box) break;
      if (box->Waiting()) return std::move(*box);
      log::Warn("a prepared sandbox ended while it waited; it is dropped");
    }
    if (!rootfs_changed) {
      if (std::optional<sandbox::Sandbox> box = source_->MakeForRun({})) return std::move(*box);
    }
    return warm_on_request_.Make();
  }

  std::optional<Result<sandbox::RunResult>> RunWithLayer(
      const LayerUse& layer, const sandbox::Program& program, const sandbox::RunLimits& limits,
      const sandbox::RunHooks& hooks) override {
    std::optional<sandbox::Sandbox> box = TakeForLayer(layer);
    if (!box) return std::nullopt;
    return box->Run(program, limits, hooks);
  }

  std::optional<Result<sandbox::Sandbox>> TakeWarmWithLayer(const LayerUse& layer) override {
    std::optional<sandbox::Sandbox> box = TakeForLayer(layer);
    if (!box) return std::nullopt;
    return Result<sandbox::Sandbox>(std::move(*box));
  }

 private:
  // A run of Run() from its start to its end, counted for the ready target. Both wake the
  // refill: it may have more to prepare, or a time to let some go.
  class InFlight {
   public:
    explicit InFlight(PoolEngine& engine) : engine_(engine) {
      {
        std::lock_guard lock(engine_.mutex_);
        engine_.target_.RunStarted();
      }
      engine_.changed_.notify_all();
    }
    ~InFlight() {
      {
        std::lock_guard lock(engine_.mutex_);
        engine_.target_.RunEnded(ReadyTarget::Clock::now());
      }
      engine_.changed_.notify_all();  // the refill's wait may end sooner now
    }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

   private:
    PoolEngine& engine_;
  };

  // Sandboxes prepared before the rootfs was replaced or removed hold the old one, which no run
  // may get once that is seen: they are dropped, and this run is cold (an error if the rootfs is
  // gone). The refill makes new ones (for the zygote, from a new zygote) from the new rootfs.
  bool DropIfRootfsChanged() {
    const RootfsStamp now = StampOf(*cold_);
    std::deque<sandbox::Sandbox> dropped;
    std::deque<LayeredBox> dropped_layered;
    {
      std::lock_guard lock(mutex_);
      if (now == stamp_) return false;
      stamp_ = now;
      dropped.swap(ready_);
      dropped_layered.swap(layered_ready_);
    }
    log::Info("the rootfs changed; the sandboxes prepared from it are dropped",
              {{"engine", source_->Name()}, {"dropped", static_cast<int64_t>(dropped.size())}});
    changed_.notify_all();
    return true;
  }

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
    return ready_.size() < target_.Target(ReadyTarget::Clock::now()) &&
           (options_.refill || made_ < options_.size);
  }

  // Past a burst, the target falls and the oldest ready sandboxes above it go, with the memory
  // they hold (and sooner a replaced zygote their forks keep). Under the lock; destroys them
  // without it.
  void DropAboveTarget(std::unique_lock<std::mutex>& lock) {
    std::deque<sandbox::Sandbox> extra;
    const size_t target = target_.Target(ReadyTarget::Clock::now());
    while (ready_.size() > target) {
      extra.push_back(std::move(ready_.front()));
      ready_.pop_front();
    }
    if (extra.empty()) return;
    lock.unlock();
    extra.clear();
    lock.lock();
  }

  // A sandbox with `layer` mounted: the one prepared for it, else one made now on this thread.
  // The refill then prepares the next one for it: the last options_.size layers used each have
  // one ready. One prepared before its layer was evicted (and maybe installed again) is dropped.
  // nullopt when the source cannot mount layers, or has no zygote to fork from.
  std::optional<sandbox::Sandbox> TakeForLayer(const LayerUse& layer) {
    if (!source_->HasLayers()) return std::nullopt;
    const bool rootfs_changed = DropIfRootfsChanged();
    std::optional<LayeredBox> prepared;
    std::deque<LayeredBox> stale;
    {
      std::lock_guard lock(mutex_);
      if (auto it = std::find_if(layered_ready_.begin(), layered_ready_.end(),
                                 [&](const LayeredBox& b) { return b.key == layer.key; });
          it != layered_ready_.end()) {
        prepared.emplace(std::move(*it));
        layered_ready_.erase(it);
      }
      // Those whose layers are gone hold their files' space until dropped.
      for (auto it = layered_ready_.begin(); it != layered_ready_.end();) {
        if (it->id == LayerIdOf(it->dir)) {
          ++it;
        } else {
          stale.push_back(std::move(*it));
          it = layered_ready_.erase(it);
        }
      }
      if (options_.refill) {
        std::erase_if(layered_wanted_, [&](const LayerUse& w) { return w.key == layer.key; });
        // Without the lease: a layer waiting for its sandbox is not kept from eviction.
        layered_wanted_.push_back(LayerUse{layer.key, layer.dir, nullptr});
        while (layered_wanted_.size() > options_.size) layered_wanted_.pop_front();
      }
    }
    changed_.notify_all();
    stale.clear();
    // The run holds the layer's lease: a directory that is still the one the sandbox mounted
    // stays whole until the run ends.
    if (prepared && prepared->id != LayerIdOf(layer.dir)) prepared.reset();
    if (prepared && prepared->box.Waiting()) {
      MarkTaken("ready");
      return std::move(prepared->box);
    }
    if (prepared) log::Warn("a prepared sandbox ended while it waited; it is dropped");
    if (rootfs_changed) return std::nullopt;
    std::optional<sandbox::Sandbox> forked = source_->MakeForRun(layer.key);
    if (forked) MarkTaken("forked");
    return forked;
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
      if (stopping_) return;
      DropAboveTarget(lock);
      if (stopping_) return;
      // Once per pass: the target moves with the clock, and the branches below must agree.
      const bool needs_one = NeedsOne();
      if (!needs_one && layered_wanted_.empty()) {
        // Until a run starts or ends, a sandbox is taken, or the target may fall (to let the
        // sandboxes above it go); then everything is looked at again. Not at all when it fell
        // while DropAboveTarget destroyed the ones above it without the lock.
        const ReadyTarget::Clock::time_point now = ReadyTarget::Clock::now();
        const ReadyTarget::Clock::time_point look = target_.NextLook(ready_.size(), now);
        if (look == ReadyTarget::Clock::time_point::max()) {
          changed_.wait(lock);
        } else if (look > now) {
          changed_.wait_until(lock, look);
        }
        continue;
      }
      const RootfsStamp made_from = stamp_;
      if (!needs_one) {
        // The plain pool is full: one for the layer a run took last.
        LayerUse layer = std::move(layered_wanted_.back());
        layered_wanted_.pop_back();
        const bool has_one = std::any_of(layered_ready_.begin(), layered_ready_.end(),
                                         [&](const LayeredBox& b) { return b.key == layer.key; });
        if (has_one) continue;
        lock.unlock();
        // Eviction renames a layer away before it removes anything: when the same directory is
        // there before and after the fork, the fork mounted it whole.
        const LayerId id = LayerIdOf(layer.dir);
        Result<sandbox::Sandbox> box = source_->Make(layer.key);
        const LayerId mounted = LayerIdOf(layer.dir);
        std::optional<LayeredBox> oldest;
        lock.lock();
        if (!box.ok()) {
          log::Warn("cannot prepare a sandbox with a package layer; its runs fork one each",
                    {{"engine", source_->Name()}, {"error", box.error().message}});
          continue;
        }
        if (!(made_from == stamp_) || id != mounted || id == LayerId{}) continue;
        layered_ready_.push_back(LayeredBox{layer.key, layer.dir, id, std::move(*box)});
        if (layered_ready_.size() > options_.size) {
          oldest.emplace(std::move(layered_ready_.front()));
          layered_ready_.pop_front();
          lock.unlock();
          oldest.reset();
          lock.lock();
        }
        continue;
      }
      lock.unlock();
      Result<sandbox::Sandbox> box = source_->Make({});
      lock.lock();
      // A run saw the rootfs change while this one was made, maybe from the old one: it is
      // dropped (rare enough to be destroyed under the lock).
      if (box.ok() && !(made_from == stamp_)) continue;
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
      // (Sandboxes above a falling target wait for the retry, at most kLongestRetry.)
      log::Warn("cannot prepare a sandbox; runs are cold until one is ready",
                {{"engine", source_->Name()},
                 {"error", box.error().message},
                 {"retry_ms", retry.count()}});
      changed_.wait_for(lock, retry, [this] { return stopping_; });
      retry = std::min<std::chrono::milliseconds>(retry * 2, kLongestRetry);
    }
  }

  const std::shared_ptr<const sandbox::LaunchPlan> cold_;
  const std::unique_ptr<SandboxSource> source_;
  const PoolOptions options_;
  WarmOnRequest warm_on_request_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  ReadyTarget target_;  // how many to keep in ready_
  std::deque<sandbox::Sandbox> ready_;
  // Sandboxes with a package layer, one per layer, the one prepared last at the back; and the
  // layers runs took, the last at the back, each to prepare one for.
  struct LayeredBox {
    std::string key, dir;
    LayerId id;  // of `dir` when the sandbox mounted it
    sandbox::Sandbox box;
  };
  std::deque<LayeredBox> layered_ready_;
  std::deque<LayerUse> layered_wanted_;
  RootfsStamp stamp_;  // the rootfs the ready sandboxes were made from
  size_t made_ = 0;
  bool stopping_ = false;
  std::optional<Error> first_error_;
  std::thread refiller_;  // last: joined before the members it uses are destroyed
};

std::string ProcPath(pid_t pid, const char* what) {
  return "/proc/" + std::to_string(pid) + "/" + what;
}

// How deep `pid`'s PID namespace is nested (the pids on the NSpid line of its status, which
// anyone may read, where ns/pid needs ptrace access that a rootless server lacks over a
// sandbox's init); 0 when it cannot be read. A descendant of a process is in that process's
// namespace or one nested below it, so among descendants the same depth is the same namespace.
size_t PidNamespaceDepth(pid_t pid) {
  std::ifstream in(ProcPath(pid, "status"));
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("NSpid:")) continue;
    std::istringstream fields(line.substr(6));
    size_t depth = 0;
    for (pid_t p; fields >> p;) ++depth;
    return depth;
  }
  return 0;
}

// The children of every thread of `pid`.
std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> children;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator(ProcPath(pid, "task"), error)) {
    std::ifstream in(task.path() / "children");
    for (pid_t child; in >> child;) children.push_back(child);
  }
  return children;
}

// Adds `pid`'s Rss and Pss (smaps_rollup, in kB); false when it cannot be read.
bool AddRollup(pid_t pid, ProcessMemory& memory) {
  std::ifstream in(ProcPath(pid, "smaps_rollup"));
  uint64_t rss = 0, pss = 0;
  bool has_rss = false, has_pss = false;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    uint64_t kb = 0;
    if (!(fields >> key >> kb)) continue;
    if (key == "Rss:") rss = kb, has_rss = true;
    if (key == "Pss:") pss = kb, has_pss = true;
  }
  if (!has_rss || !has_pss) return false;
  memory.rss_bytes += rss * 1024;
  memory.pss_bytes += pss * 1024;
  ++memory.processes;
  return true;
}

}  // namespace

ProcessMemory MemoryOf(const std::vector<pid_t>& inits) {
  ProcessMemory memory;
  std::set<pid_t> seen;
  for (const pid_t init : inits) {
    const size_t depth = PidNamespaceDepth(init);
    if (depth == 0 || !seen.insert(init).second) continue;
    std::vector<pid_t> todo = {init};
    while (!todo.empty()) {
      const pid_t pid = todo.back();
      todo.pop_back();
      AddRollup(pid, memory);
      for (const pid_t child : ChildrenOf(pid)) {
        if (PidNamespaceDepth(child) == depth && seen.insert(child).second) {
          todo.push_back(child);
        }
      }
    }
  }
  return memory;
}

namespace {

class HoldingEngine final : public Engine, public std::enable_shared_from_this<HoldingEngine> {
 public:
  HoldingEngine(std::shared_ptr<Engine> engine, std::shared_ptr<const void> hold)
      : hold_(std::move(hold)), engine_(std::move(engine)) {}

  const char* Name() const override { return engine_->Name(); }
  Result<sandbox::RunResult> Run(const sandbox::Program& program, const sandbox::RunLimits& limits,
                                 const sandbox::RunHooks& hooks) override {
    return engine_->Run(program, limits, hooks);
  }
  Result<sandbox::Sandbox> TakeWarm() override { return engine_->TakeWarm(); }
  const sandbox::LaunchPlan& Plan() const override { return engine_->Plan(); }
  EngineState State() const override { return engine_->State(); }
  std::vector<pid_t> HeldInits() const override { return engine_->HeldInits(); }
  std::shared_ptr<const void> KeepAlive() override { return shared_from_this(); }
  std::optional<Result<sandbox::RunResult>> RunWithLayer(
      const LayerUse& layer, const sandbox::Program& program, const sandbox::RunLimits& limits,
      const sandbox::RunHooks& hooks) override {
    return engine_->RunWithLayer(layer, program, limits, hooks);
  }
  std::optional<Result<sandbox::Sandbox>> TakeWarmWithLayer(const LayerUse& layer) override {
    return engine_->TakeWarmWithLayer(layer);
  }

 private:
  // Declared first, destroyed last.
  const std::shared_ptr<const void> hold_;
  std::shared_ptr<Engine> engine_;
};

class LayeredEngine final : public Engine, public std::enable_shared_from_this<LayeredEngine> {
 public:
  LayeredEngine(std::shared_ptr<Engine> engine, LayerUse layer, std::shared_ptr<Engine> bound)
      : layer_(std::move(layer)), engine_(std::move(engine)), bound_(std::move(bound)) {}

  const char* Name() const override { return engine_->Name(); }
  Result<sandbox::RunResult> Run(const sandbox::Program& program, const sandbox::RunLimits& limits,
                                 const sandbox::RunHooks& hooks) override {
    if (auto result = engine_->RunWithLayer(layer_, program, limits, hooks)) {
      return std::move(*result);
    }
    return bound_->Run(program, limits, hooks);
  }
  Result<sandbox::Sandbox> TakeWarm() override {
    if (auto box = engine_->TakeWarmWithLayer(layer_)) return std::move(*box);
    return bound_->TakeWarm();
  }
  // What every run's sandbox is: the environment's, with the layer bound.
  const sandbox::LaunchPlan& Plan() const override { return bound_->Plan(); }
  EngineState State() const override { return engine_->State(); }
  std::vector<pid_t> HeldInits() const override { return engine_->HeldInits(); }
  std::shared_ptr<const void> KeepAlive() override { return shared_from_this(); }

 private:
  // Declared first, destroyed last.
  const LayerUse layer_;
  std::shared_ptr<Engine> engine_;
  std::shared_ptr<Engine> bound_;
};

}  // namespace

std::shared_ptr<Engine> MakeHoldingEngine(std::shared_ptr<Engine> engine,
                                          std::shared_ptr<const void> hold) {
  return std::make_shared<HoldingEngine>(std::move(engine), std::move(hold));
}

std::shared_ptr<Engine> MakeLayeredEngine(std::shared_ptr<Engine> engine, LayerUse layer,
                                          std::shared_ptr<Engine> bound) {
  return std::make_shared<LayeredEngine>(std::move(engine), std::move(layer), std::move(bound));
}

std::unique_ptr<Engine> MakeColdEngine(std::shared_ptr<const sandbox::LaunchPlan> plan) {
  return std::make_unique<ColdEngine>(std::move(plan));
}

Result<std::unique_ptr<Engine>> MakePoolEngine(std::shared_ptr<const sandbox::LaunchPlan> cold,
                                               std::shared_ptr<const sandbox::LaunchPlan> warm,
                                               const PoolOptions& options) {
  auto pool = std::make_unique<PoolEngine>(
      std::move(cold), std::make_unique<WarmSource>(std::move(warm)), options);
  MCPEXEC_RETURN_IF_ERROR(pool->Start());
  return std::unique_ptr<Engine>(std::move(pool));
}

Result<std::unique_ptr<Engine>> MakeZygoteEngine(std::shared_ptr<const sandbox::LaunchPlan> cold,
                                                 std::shared_ptr<const sandbox::LaunchPlan> zygote,
                                                 const PoolOptions& options) {
  auto pool = std::make_unique<PoolEngine>(
      std::move(cold), std::make_unique<ZygoteSource>(std::move(zygote), options), options);
  MCPEXEC_RETURN_IF_ERROR(pool->Start());
  return std::unique_ptr<Engine>(std::move(pool));
}

}  // namespace mcpexec::engine
