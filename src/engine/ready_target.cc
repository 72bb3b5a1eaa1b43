#include "engine/ready_target.h"

#include <algorithm>

namespace mcpexec::engine {

ReadyTarget::ReadyTarget(size_t floor, size_t ceiling, std::chrono::seconds window)
    : floor_(floor),
      ceiling_(std::max(floor, ceiling)),
      window_(window),
      held_until_(ceiling_ + 1, Clock::time_point::min()) {}

void ReadyTarget::RunStarted() { ++in_flight_; }

void ReadyTarget::RunEnded(Clock::time_point now) {
  if (in_flight_ == 0) return;
  if (in_flight_ <= ceiling_) held_until_[in_flight_] = now;
  --in_flight_;
}

size_t ReadyTarget::Target(Clock::time_point now) const {
  size_t level = std::min(in_flight_, ceiling_);
  for (size_t k = ceiling_; k > level; --k) {
    if (held_until_[k] != Clock::time_point::min() && now - held_until_[k] < window_) {
      level = k;
      break;
    }
  }
  return std::max(level, floor_);
}

ReadyTarget::Clock::time_point ReadyTarget::NextFall(Clock::time_point now) const {
  const size_t target = Target(now);
  if (target == floor_ || target <= in_flight_) return Clock::time_point::max();
  return held_until_[target] + window_;
}

ReadyTarget::Clock::time_point ReadyTarget::NextLook(size_t ready, Clock::time_point now) const {
  if (ready > Target(now)) return now;
  return NextFall(now);
}

}  // namespace mcpexec::engine
