// How many sandboxes a warm engine keeps ready (docs/engine.md, "Fork ahead"): as many as runs
// were in flight at once at any moment of the last 30 s (the window), between
// MCP_EXEC_POOL_SIZE and MCP_EXEC_POOL_MAX. A burst of N runs then finds N ready when it comes
// again within the window after the last one ended, and a quiet engine goes back to the floor
// and its memory. Not thread-safe: its engine calls it under its own lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

namespace mcpexec::engine {

class ReadyTarget {
 public:
  using Clock = std::chrono::steady_clock;

  // A `ceiling` below `floor` is the floor.
  ReadyTarget(size_t floor, size_t ceiling, std::chrono::seconds window);

  void RunStarted();
  void RunEnded(Clock::time_point now);
  // The sandboxes to keep ready at `now`.
  size_t Target(Clock::time_point now) const;
  // When Target() falls next if no run starts or ends: for the refill's wait.
  // Clock::time_point::max() when it cannot (at the floor, or that many runs in flight).
  Clock::time_point NextFall(Clock::time_point now) const;
  // When an engine holding `ready` sandboxes must look again: `now` when more are ready than the
  // target (it may have fallen while the engine destroyed others above it), else NextFall(now).
  Clock::time_point NextLook(size_t ready, Clock::time_point now) const;

  size_t InFlight() const { return in_flight_; }

 private:
  const size_t floor_, ceiling_;
  const std::chrono::seconds window_;
  size_t in_flight_ = 0;
  // [k]: when the runs in flight last fell below k (k = 1 .. ceiling_); min() for never.
  std::vector<Clock::time_point> held_until_;
};

}  // namespace mcpexec::engine
