#include "exec/environment_engines.h"

#include "exec/exec.h"
#include "log/log.h"
#include "sandbox/plan.h"

namespace mcpexec::exec {

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
  bool privileged = false;
  for (const Environment& env : set->offer_.environments) {
    const sandbox::SandboxSpec spec = SpecForEnvironment(config, env);
    if (spec.privileged_id_mapping && !privileged) {
      MCPEXEC_RETURN_IF_ERROR(sandbox::DropSupplementaryGroups());
      privileged = true;
    }
    auto plan = sandbox::Compile(spec, backend);
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
  stop_.notify_all();
  for (auto& slot : slots_) {
    if (slot->starter.joinable()) slot->starter.join();
  }
}

const std::shared_ptr<engine::Engine>& EnvironmentEngines::DefaultEngine() const {
  return slots_[default_slot_]->started;
}

std::shared_ptr<engine::Engine> EnvironmentEngines::EngineFor(const std::string& name) {
  std::lock_guard lock(mutex_);
  for (auto& slot : slots_) {
    if (slot->env->name != name) continue;
    if (slot->started) return slot->started;
    if (!slot->starting && !stopping_) StartInBackground(*slot);
    return slot->cold;
  }
  return nullptr;
}

void EnvironmentEngines::StartInBackground(Slot& slot) {
  slot.starting = true;
  slot.starter = std::thread([this, &slot] {
    const std::string name = slot.env->name;
    log::Info("starting an environment's engine", {{"environment", name}});
    std::vector<PassedOver> passed_over;
    auto started = StartEngine(config_, slot.plan, EngineUse::kServe, &passed_over);
    for (const PassedOver& p : passed_over) {
      log::Warn("an engine does not start here; runs take a slower one",
                {{"environment", name}, {"engine", p.engine}, {"error", p.error.message}});
    }
    std::unique_lock lock(mutex_);
    if (started.ok()) {
      slot.started = std::move(*started);
      log::Info("an environment's engine is ready",
                {{"environment", name}, {"engine", slot.started->Name()}});
    } else {
      log::Warn("an environment's engine did not start: its runs stay cold",
                {{"environment", name}, {"error", started.error().message}});
    }
    stop_.wait(lock, [this] { return stopping_; });
  });
}

}  // namespace mcpexec::exec
