// How many sandboxes a warm engine keeps ready (docs/engine.md, "Fork ahead"): as many as runs
// were in flight at once lately, between MCP_EXEC_POOL_SIZE and MCP_EXEC_POOL_MAX. A burst of N
// runs then finds N ready when it comes again, and a quiet engine goes back to the floor and its
// memory. Not thread-safe: its engine calls it under its own lock.
#pragma once

#include <chrono>
#include <cstddef>

namespace mcpexec::engine {

class ReadyTarget {
 public:
  using Clock = std::chrono::steady_clock;

  // `floor` <= `ceiling`; a peak counts for `window` after it was last reached.
  ReadyTarget(size_t floor, size_t ceiling, std::chrono::seconds window);

  void RunStarted(Clock::time_point now);
  void RunEnded();
  // The sandboxes to keep ready now.
  size_t Target(Clock::time_point now);
  // When Target() falls next if no run starts: for the refill's wait. time_point::max() when it
  // cannot (at the floor, or its peak still in flight).
  Clock::time_point NextFall() const;

  size_t InFlight() const { return in_flight_; }

 private:
  const size_t floor_, ceiling_;
  const std::chrono::seconds window_;
  size_t in_flight_ = 0;
  size_t peak_ = 0;             // the most runs in flight at once since peak_at_
  Clock::time_point peak_at_;   // when peak_ was last reached
};

}  // namespace mcpexec::engine
