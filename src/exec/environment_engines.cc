#include "exec/environment_engines.h"

#include "exec/exec.h"
#include "log/log.h"
#include "sandbox/plan.h"

namespace mcpexec::exec {
namespace {

// While a run in progress holds an environment's engine, how often its keeper looks whether it
// still does (the run's end itself tells nobody).
constexpr auto kInUseCheck = std::chrono::seconds(1);

// A use of an environment's engine, counted in `usage` (EnvironmentEngines::Usage) from its
// making (under the set's lock) to its end: what the engine EngineFor hands out holds
// (engine::MakeHoldingEngine), and so does its KeepAlive, which a session holds for its life.
template <class Usage>
class UsageHold {
 public:
  explicit UsageHold(std::shared_ptr<Usage> usage) : usage_(std::move(usage)) {
    usage_->in_use.fetch_add(1, std::memory_order_acq_rel);
  }
  // The last use's end, never moved back by a use that ended earlier; the holding engine lets
  // go of the engine first, so that once the count says unused nothing but the set holds it.
  ~UsageHold() {
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    auto last = usage_->last_end.load(std::memory_order_relaxed);
    while (last < now &&
           !usage_->last_end.compare_exchange_weak(last, now, std::memory_order_relaxed)) {
    }
    usage_->in_use.fetch_sub(1, std::memory_order_acq_rel);
  }
  UsageHold(const UsageHold&) = delete;
  UsageHold& operator=(const UsageHold&) = delete;

 private:
  const std::shared_ptr<Usage> usage_;
};

}  // namespace

sandbox::SandboxSpec SpecForEnvironment(const config::Config& config, const Environment& env) {
  sandbox::SandboxSpec spec = SpecFromConfig(config);
  spec.rootfs = env.image;
  spec.preload = env.preload;
  spec.extra_env = env.env;
  return spec;
}

Result<std::shared_ptr<EnvironmentEngines>> EnvironmentEngines::Prepare(
    const config::Config& config, Offer offer, std::shared_ptr<limits::LimitsBackend> backend) {
  std::shared_ptr<EnvironmentEngines> set(new EnvironmentEngines());
  set->config_ = config;
  set->offer_ = std::move(offer);
  set->idle_ = std::chrono::seconds(config.environment_idle_s);
  for (const Environment& env : set->offer_.environments) {
    auto plan = PrepareSandboxes(SpecForEnvironment(config, env), backend);
    if (!plan.ok()) {
      return std::move(plan).error().WithContext("the environment \"" + env.name + "\"");
    }
    auto slot = std::make_unique<Slot>();
    slot->env = &env;
    slot->plan = *plan;
    slot->cold = engine::MakeColdEngine(*plan);
    if (env.name == set->offer_.default_name) set->default_slot_ = set->slots_.size();
    set->slots_.push_back(std::move(slot));
  }
  if (set->slots_.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "no environment is offered");
  }
  return set;
}

Result<void> EnvironmentEngines::StartDefault(std::vector<PassedOver>* passed_over) {
  Slot& slot = *slots_[default_slot_];
  MCPEXEC_ASSIGN_OR_RETURN(std::shared_ptr<engine::Engine> started,
                           StartEngine(config_, slot.plan, EngineUse::kServe, passed_over));
  std::lock_guard lock(mutex_);
  slot.started = std::move(started);
  return Ok();
}

std::shared_ptr<EnvironmentEngines> EnvironmentEngines::Single(
    std::shared_ptr<engine::Engine> engine) {
  std::shared_ptr<EnvironmentEngines> set(new EnvironmentEngines());
  Environment env;
  env.name = kDefaultEnvironment;
  if (engine) env.image = engine->Plan().Spec().rootfs;
  set->offer_.environments.push_back(std::move(env));
  auto slot = std::make_unique<Slot>();
  slot->env = &set->offer_.environments.front();
  slot->started = std::move(engine);
  set->slots_.push_back(std::move(slot));
  return set;
}

EnvironmentEngines::~EnvironmentEngines() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& slot : slots_) {
    if (slot->keeper.joinable()) slot->keeper.join();
  }
}

const std::shared_ptr<engine::Engine>& EnvironmentEngines::DefaultEngine() const {
  return slots_[default_slot_]->started;
}

std::shared_ptr<engine::Engine> EnvironmentEngines::EngineFor(const std::string& name) {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = *slots_[i];
    if (slot.env->name != name) continue;
    if (slot.started) {
      // The default environment's engine, and any when none is ever released, is handed out
      // as it is.
      if (i == default_slot_ || idle_.count() == 0) return slot.started;
      return engine::MakeHoldingEngine(slot.started,
                                       std::make_shared<UsageHold<Usage>>(slot.usage));
    }
    if (!slot.starting && !stopping_) {
      slot.starting = true;
      if (slot.keeper.joinable()) {
        changed_.notify_all();  // a keeper that released its engine waits for this
      } else {
        slot.keeper = std::thread([this, &slot] { Keep(slot); });
      }
    }
    return slot.cold;
  }
  return nullptr;
}

std::vector<EnvironmentEngines::EnvironmentState> EnvironmentEngines::States() const {
  std::vector<EnvironmentState> states;
  std::vector<std::vector<pid_t>> inits;
  {
    std::lock_guard lock(mutex_);
    for (const auto& slot : slots_) {
      states.push_back({slot->env->name, slot->started != nullptr, {}});
      inits.push_back(slot->started ? slot->started->HeldInits() : std::vector<pid_t>{});
    }
  }
  // Outside the lock: /proc is read while runs get their engines.
  for (size_t i = 0; i < states.size(); ++i) states[i].memory = engine::MemoryOf(inits[i]);
  return states;
}

bool EnvironmentEngines::WaitUntilIdle(std::unique_lock<std::mutex>& lock, Slot& slot) {
  for (;;) {
    if (stopping_) return false;
    if (idle_.count() == 0) {
      changed_.wait(lock);
      continue;
    }
    if (slot.usage->in_use.load(std::memory_order_acquire) > 0) {
      changed_.wait_for(lock, std::min<Clock::duration>(kInUseCheck, idle_));
      continue;
    }
    const Clock::time_point unused_since(
        Clock::duration(slot.usage->last_end.load(std::memory_order_relaxed)));
    if (Clock::now() - unused_since >= idle_) return true;
    changed_.wait_until(lock, unused_since + idle_);
  }
}

void EnvironmentEngines::Keep(Slot& slot) {
  const std::string name = slot.env->name;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    const bool again = slot.released;
    lock.unlock();
    log::Info(again ? "starting an environment's engine again, for a call after its release"
                    : "starting an environment's engine",
              {{"environment", name}});
    std::vector<PassedOver> passed_over;
    auto started = StartEngine(config_, slot.plan, EngineUse::kServe, &passed_over);
    for (const PassedOver& p : passed_over) {
      log::Warn("an engine does not start here; runs take a slower one",
                {{"environment", name}, {"engine", p.engine}, {"error", p.error.message}});
    }
    lock.lock();
    if (!started.ok()) {
      // As at the first start: its runs stay cold, and nothing starts it again.
      log::Warn("an environment's engine did not start: its runs stay cold",
                {{"environment", name}, {"error", started.error().message}});
      changed_.wait(lock, [this] { return stopping_; });
      return;
    }
    slot.started = std::move(*started);
    slot.starting = false;
    // Unused from now until a call takes it.
    slot.usage->last_end.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    log::Info("an environment's engine is ready",
              {{"environment", name}, {"engine", slot.started->Name()}});
    // The set ends with the engine started: it is destroyed with the slot, after this thread.
    if (!WaitUntilIdle(lock, slot)) return;
    // Nothing holds it but the slot (no run, no session: in_use is 0 under the lock, and only
    // EngineFor, under it, makes a use): this is the last reference. Destroyed here, outside
    // the lock: its refill thread is joined, its zygote and prepared sandboxes killed and
    // reaped, their cgroups removed, while calls get the cold engine.
    std::shared_ptr<engine::Engine> released = std::move(slot.started);
    slot.released = true;
    const std::string engine_name = released->Name();
    lock.unlock();
    const engine::ProcessMemory freed = engine::MemoryOf(released->HeldInits());
    released.reset();
    log::Info("an environment's engine was released: no run or session used it for "
              "MCP_EXEC_ENVIRONMENT_IDLE_S",
              {{"environment", name},
               {"engine", engine_name},
               {"idle_s", static_cast<int64_t>(idle_.count())},
               {"rss_bytes", static_cast<int64_t>(freed.rss_bytes)},
               {"pss_bytes", static_cast<int64_t>(freed.pss_bytes)}});
    lock.lock();
    changed_.wait(lock, [this, &slot] { return stopping_ || slot.starting; });
  }
}

}  // namespace mcpexec::exec
