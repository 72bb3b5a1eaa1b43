#include "mcp/call_steps_log.h"

#include <chrono>

#include "log/log.h"

namespace mcpexec::mcp {
namespace {

// Each field: the time from one step to the next.
struct StepField {
  const char* name;
  Step from;
  Step to;
};

constexpr StepField kFields[] = {
    {"parse_us", Step::kRead, Step::kParsed},
    {"dispatch_us", Step::kParsed, Step::kQueued},
    {"queue_us", Step::kQueued, Step::kStarted},
    {"validate_us", Step::kStarted, Step::kValidated},
    {"take_us", Step::kValidated, Step::kTaken},
    {"send_us", Step::kTaken, Step::kSent},
    {"run_us", Step::kSent, Step::kEnded},
    {"collect_us", Step::kEnded, Step::kCollected},
    {"result_us", Step::kCollected, Step::kAnswered},
    {"serialize_us", Step::kAnswered, Step::kSerialized},
    {"write_us", Step::kSerialized, Step::kWriting},
};

}  // namespace

std::optional<CallSteps> StartCallSteps() {
  if (!log::Enabled(log::Level::kDebug)) return std::nullopt;
  std::optional<CallSteps> steps(std::in_place);
  steps->at[static_cast<size_t>(Step::kRead)] = CallSteps::Clock::now();
  return steps;
}

nlohmann::json CallStepsFields(const CallSteps& steps) {
  nlohmann::json fields = {
      {"tool", steps.tool}, {"session", steps.session}, {"request_id", steps.request_id}};
  if (steps.sandbox != nullptr) fields["sandbox"] = steps.sandbox;
  for (const StepField& field : kFields) {
    if (!steps.Reached(field.from) || !steps.Reached(field.to)) continue;
    const auto took = steps.At(field.to) - steps.At(field.from);
    fields[field.name] = std::chrono::duration_cast<std::chrono::microseconds>(took).count();
  }
  return fields;
}

void LogCallSteps(const CallSteps& steps) {
  if (steps.handed_off || steps.tool.empty()) return;
  log::Debug("call steps", CallStepsFields(steps));
}

}  // namespace mcpexec::mcp
