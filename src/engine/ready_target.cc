#include "engine/ready_target.h"

#include <algorithm>

namespace mcpexec::engine {

ReadyTarget::ReadyTarget(size_t floor, size_t ceiling, std::chrono::seconds window)
    : floor_(floor), ceiling_(std::max(floor, ceiling)), window_(window) {}

void ReadyTarget::RunStarted(Clock::time_point now) {
  ++in_flight_;
  (void)Target(now);  // lets an old peak fall before this one is compared with it
  if (in_flight_ >= peak_) {
    peak_ = in_flight_;
    peak_at_ = now;
  }
}

void ReadyTarget::RunEnded() {
  if (in_flight_ > 0) --in_flight_;
}

size_t ReadyTarget::Target(Clock::time_point now) {
  if (peak_ > in_flight_ && now - peak_at_ >= window_) {
    peak_ = in_flight_;
    peak_at_ = now;
  }
  return std::clamp(peak_, floor_, ceiling_);
}

ReadyTarget::Clock::time_point ReadyTarget::NextFall() const {
  if (std::clamp(peak_, floor_, ceiling_) == floor_ || peak_ <= in_flight_) {
    return Clock::time_point::max();
  }
  return peak_at_ + window_;
}

}  // namespace mcpexec::engine
