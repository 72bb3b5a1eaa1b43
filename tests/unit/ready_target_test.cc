#include "engine/ready_target.h"

#include <gtest/gtest.h>

namespace mcpexec::engine {
namespace {

using namespace std::chrono_literals;
using Clock = ReadyTarget::Clock;

const Clock::time_point kT0 = Clock::time_point() + 1000s;
constexpr Clock::time_point kNever = Clock::time_point::max();

void Start(ReadyTarget& target, int runs) {
  for (int i = 0; i < runs; ++i) target.RunStarted();
}

void End(ReadyTarget& target, int runs, Clock::time_point at) {
  for (int i = 0; i < runs; ++i) target.RunEnded(at);
}

TEST(ReadyTarget, StaysAtTheFloorUnderOneRunAtATime) {
  ReadyTarget target(2, 8, 30s);
  EXPECT_EQ(target.Target(kT0), 2u);
  for (int i = 0; i < 10; ++i) {
    target.RunStarted();
    target.RunEnded(kT0 + std::chrono::seconds(i));
  }
  EXPECT_EQ(target.Target(kT0 + 10s), 2u);
  EXPECT_EQ(target.NextFall(kT0 + 10s), kNever);
}

TEST(ReadyTarget, FollowsABurstUpToTheCeiling) {
  ReadyTarget target(2, 4, 30s);
  Start(target, 3);
  EXPECT_EQ(target.Target(kT0), 3u);
  Start(target, 3);
  EXPECT_EQ(target.InFlight(), 6u);
  EXPECT_EQ(target.Target(kT0), 4u) << "never above the ceiling";
  End(target, 6, kT0 + 1s);
  EXPECT_EQ(target.Target(kT0 + 2s), 4u);
}

TEST(ReadyTarget, KeepsAPeakForTheWindowAfterItsRunsEndedThenFalls) {
  ReadyTarget target(1, 8, 30s);
  Start(target, 4);
  EXPECT_EQ(target.NextFall(kT0), kNever) << "its runs are still in flight";
  End(target, 4, kT0);
  EXPECT_EQ(target.Target(kT0 + 29s), 4u) << "the next burst of 4 finds 4 ready";
  EXPECT_EQ(target.NextFall(kT0 + 29s), kT0 + 30s);
  EXPECT_EQ(target.Target(kT0 + 30s), 1u) << "quiet for the window: back to the floor";
  EXPECT_EQ(target.NextFall(kT0 + 30s), kNever);
}

// Runs of 40 s, longer than the window: the window starts when they end, not when they started.
TEST(ReadyTarget, ARunLongerThanTheWindowKeepsItsPeakForTheWindowAfterItEnds) {
  ReadyTarget target(2, 8, 30s);
  Start(target, 4);
  EXPECT_EQ(target.Target(kT0 + 39s), 4u);
  End(target, 4, kT0 + 40s);
  EXPECT_EQ(target.Target(kT0 + 69s), 4u);
  EXPECT_EQ(target.Target(kT0 + 70s), 2u);
}

// A peak of 4, then of 3 later: when the 4 is older than the window, the 3 still holds.
TEST(ReadyTarget, FallsALevelAtATime) {
  ReadyTarget target(1, 8, 30s);
  Start(target, 4);
  End(target, 4, kT0);
  Start(target, 3);
  End(target, 3, kT0 + 20s);
  EXPECT_EQ(target.Target(kT0 + 29s), 4u);
  EXPECT_EQ(target.NextFall(kT0 + 29s), kT0 + 30s);
  EXPECT_EQ(target.Target(kT0 + 35s), 3u);
  EXPECT_EQ(target.NextFall(kT0 + 35s), kT0 + 50s);
  EXPECT_EQ(target.Target(kT0 + 50s), 1u);
}

TEST(ReadyTarget, NeverFallsBelowWhatIsInFlight) {
  ReadyTarget target(1, 8, 30s);
  Start(target, 5);
  End(target, 2, kT0);
  EXPECT_EQ(target.Target(kT0 + 31s), 3u);
  EXPECT_EQ(target.NextFall(kT0 + 31s), kNever);
  target.RunStarted();
  EXPECT_EQ(target.Target(kT0 + 32s), 4u);
}

TEST(ReadyTarget, ACeilingBelowTheFloorIsTheFloor) {
  ReadyTarget target(3, 1, 30s);
  EXPECT_EQ(target.Target(kT0), 3u);
  Start(target, 5);
  EXPECT_EQ(target.Target(kT0), 3u);
  End(target, 5, kT0);
  EXPECT_EQ(target.Target(kT0 + 1s), 3u);
}

TEST(ReadyTarget, MoreEndsThanStartsDoNotWrap) {
  ReadyTarget target(1, 8, 30s);
  target.RunEnded(kT0);
  EXPECT_EQ(target.InFlight(), 0u);
  target.RunStarted();
  EXPECT_EQ(target.Target(kT0), 1u);
}

// The steady clock's epoch may be the boot: a time near it is not taken for a recent peak.
TEST(ReadyTarget, NoPeakYetIsNotAPeakAtTheClocksEpoch) {
  ReadyTarget target(1, 8, 30s);
  EXPECT_EQ(target.Target(Clock::time_point() + 1s), 1u);
  EXPECT_EQ(target.NextFall(Clock::time_point() + 1s), kNever);
}

// Three runs that end together make the target fall 3, 2, 1 within a moment. An engine that
// wakes at the first fall, drops one and destroys it past the second must look again at once,
// not wait for a next fall that will never come with two ready above a target of one.
TEST(ReadyTarget, MoreReadyThanTheTargetIsLookedAtNow) {
  ReadyTarget target(1, 3, 30s);
  Start(target, 3);
  End(target, 3, kT0);
  EXPECT_EQ(target.NextLook(3, kT0 + 1s), kT0 + 30s) << "three ready for a target of three";
  EXPECT_EQ(target.NextLook(2, kT0 + 31s), kT0 + 31s) << "two ready for a target of one";
  EXPECT_EQ(target.NextLook(1, kT0 + 31s), kNever) << "at the floor: nothing to drop";
  EXPECT_EQ(target.NextLook(0, kT0 + 31s), kNever);
}

}  // namespace
}  // namespace mcpexec::engine
