#include "base/call_steps.h"

namespace mcpexec {

namespace call_steps_internal {
constinit thread_local CallSteps* current = nullptr;
}  // namespace call_steps_internal

std::optional<CallSteps> HandOffSteps() {
  CallSteps* steps = call_steps_internal::current;
  if (steps == nullptr) return std::nullopt;
  CallSteps copy = *steps;
  steps->handed_off = true;
  return copy;
}

}  // namespace mcpexec
