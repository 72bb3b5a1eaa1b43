#include "sandbox/progress_schedule.h"

#include <algorithm>

namespace mcpexec::sandbox {

ProgressSchedule::ProgressSchedule(Clock::time_point start, std::chrono::milliseconds interval,
                                   std::chrono::milliseconds output_interval)
    : last_(start), interval_(interval), output_interval_(std::min(output_interval, interval)) {}

ProgressSchedule::Clock::time_point ProgressSchedule::Next() const {
  return last_ + (output_ ? output_interval_ : interval_);
}

void ProgressSchedule::Called(Clock::time_point now) {
  last_ = now;
  output_ = false;
}

}  // namespace mcpexec::sandbox
