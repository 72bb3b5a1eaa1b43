#include "engine/ready_target.h"

#include <gtest/gtest.h>

namespace mcpexec::engine {
namespace {

using namespace std::chrono_literals;
using Clock = ReadyTarget::Clock;

const Clock::time_point kT0 = Clock::time_point() + 1000s;

TEST(ReadyTarget, StaysAtTheFloorUnderOneRunAtATime) {
  ReadyTarget target(2, 8, 30s);
  EXPECT_EQ(target.Target(kT0), 2u);
  for (int i = 0; i < 10; ++i) {
    target.RunStarted(kT0 + std::chrono::seconds(i));
    target.RunEnded();
  }
  EXPECT_EQ(target.Target(kT0 + 10s), 2u);
  EXPECT_EQ(target.NextFall(), Clock::time_point::max());
}

TEST(ReadyTarget, FollowsABurstUpToTheCeiling) {
  ReadyTarget target(2, 4, 30s);
  for (int i = 0; i < 3; ++i) target.RunStarted(kT0);
  EXPECT_EQ(target.Target(kT0), 3u);
  for (int i = 0; i < 3; ++i) target.RunStarted(kT0);
  EXPECT_EQ(target.InFlight(), 6u);
  EXPECT_EQ(target.Target(kT0), 4u) << "never above the ceiling";
}

TEST(ReadyTarget, KeepsAPeakForTheWindowAfterItsRunsEndedThenFalls) {
  ReadyTarget target(1, 8, 30s);
  for (int i = 0; i < 4; ++i) target.RunStarted(kT0);
  EXPECT_EQ(target.NextFall(), Clock::time_point::max()) << "its runs are still in flight";
  for (int i = 0; i < 4; ++i) target.RunEnded();
  EXPECT_EQ(target.Target(kT0 + 29s), 4u) << "the next burst of 4 finds 4 ready";
  EXPECT_EQ(target.NextFall(), kT0 + 30s);
  EXPECT_EQ(target.Target(kT0 + 30s), 1u) << "quiet for the window: back to the floor";
  EXPECT_EQ(target.NextFall(), Clock::time_point::max());
}

TEST(ReadyTarget, APeakReachedAgainStartsItsWindowAgain) {
  ReadyTarget target(1, 8, 30s);
  target.RunStarted(kT0);
  target.RunStarted(kT0);
  target.RunEnded();
  target.RunEnded();
  target.RunStarted(kT0 + 20s);
  target.RunStarted(kT0 + 20s);
  target.RunEnded();
  target.RunEnded();
  EXPECT_EQ(target.Target(kT0 + 45s), 2u);
  EXPECT_EQ(target.Target(kT0 + 50s), 1u);
}

TEST(ReadyTarget, FallsToWhatIsStillInFlightNotBelow) {
  ReadyTarget target(1, 8, 30s);
  for (int i = 0; i < 5; ++i) target.RunStarted(kT0);
  for (int i = 0; i < 2; ++i) target.RunEnded();
  EXPECT_EQ(target.Target(kT0 + 31s), 3u);
  // A smaller peak after the fall is its own.
  target.RunStarted(kT0 + 32s);
  EXPECT_EQ(target.Target(kT0 + 32s), 4u);
}

TEST(ReadyTarget, ACeilingBelowTheFloorIsTheFloor) {
  ReadyTarget target(3, 1, 30s);
  EXPECT_EQ(target.Target(kT0), 3u);
  for (int i = 0; i < 5; ++i) target.RunStarted(kT0);
  EXPECT_EQ(target.Target(kT0), 3u);
}

TEST(ReadyTarget, MoreEndsThanStartsDoNotWrap) {
  ReadyTarget target(1, 8, 30s);
  target.RunEnded();
  EXPECT_EQ(target.InFlight(), 0u);
  target.RunStarted(kT0);
  EXPECT_EQ(target.Target(kT0), 1u);
}

}  // namespace
}  // namespace mcpexec::engine
