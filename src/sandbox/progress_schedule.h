// ProgressSchedule: when the supervisor calls RunHooks::on_progress while a program runs.
#pragma once

#include <chrono>

namespace mcpexec::sandbox {

// A call is due `interval` after the previous one (or after the start), and sooner,
// `output_interval` after it, once output has arrived since: a program that writes all the time
// gets a call every `output_interval`, a silent one every `interval`, and never more often than
// the shorter of the two. Pure: the caller passes the time. Not thread-safe.
class ProgressSchedule {
 public:
  using Clock = std::chrono::steady_clock;

  ProgressSchedule(Clock::time_point start, std::chrono::milliseconds interval,
                   std::chrono::milliseconds output_interval);

  // Output has arrived: the next call may come sooner.
  void OutputArrived() { output_ = true; }
  // When the next call is due.
  Clock::time_point Next() const;
  bool Due(Clock::time_point now) const { return now >= Next(); }
  // The call due was made at `now`.
  void Called(Clock::time_point now);

 private:
  Clock::time_point last_;
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds output_interval_;
  bool output_ = false;
};

}  // namespace mcpexec::sandbox
