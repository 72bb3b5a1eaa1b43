// ProgressSchedule: when the supervisor calls on_progress (the rate of output notifications).
#include "sandbox/progress_schedule.h"

#include <gtest/gtest.h>

namespace mcpexec::sandbox {
namespace {

using std::chrono::milliseconds;
const ProgressSchedule::Clock::time_point t0{};

TEST(ProgressScheduleTest, ASilentRunGetsACallEveryInterval) {
  ProgressSchedule s(t0, milliseconds(500), milliseconds(100));
  EXPECT_EQ(s.Next(), t0 + milliseconds(500));
  EXPECT_FALSE(s.Due(t0 + milliseconds(499)));
  EXPECT_TRUE(s.Due(t0 + milliseconds(500)));
  s.Called(t0 + milliseconds(503));
  EXPECT_EQ(s.Next(), t0 + milliseconds(1003));
}

TEST(ProgressScheduleTest, OutputBringsTheNextCallForwardButNotCloserThanTheOutputInterval) {
  ProgressSchedule s(t0, milliseconds(500), milliseconds(100));
  s.Called(t0 + milliseconds(500));
  s.OutputArrived();
  EXPECT_EQ(s.Next(), t0 + milliseconds(600));
  s.Called(t0 + milliseconds(600));
  // Nothing new since: back to the slow pace.
  EXPECT_EQ(s.Next(), t0 + milliseconds(1100));
  // Output long after the previous call: due at once.
  s.OutputArrived();
  EXPECT_TRUE(s.Due(t0 + milliseconds(900)));
}

TEST(ProgressScheduleTest, ContinuousOutputGivesAtMostOneCallPerOutputInterval) {
  ProgressSchedule s(t0, milliseconds(500), milliseconds(100));
  int calls = 0;
  for (int ms = 0; ms <= 2000; ++ms) {
    const auto now = t0 + milliseconds(ms);
    s.OutputArrived();  // output every millisecond
    if (s.Due(now)) {
      ++calls;
      s.Called(now);
    }
  }
  EXPECT_EQ(calls, 20);  // at 100, 200, ... 2000 ms
}

TEST(ProgressScheduleTest, AnOutputIntervalLongerThanTheIntervalChangesNothing) {
  ProgressSchedule s(t0, milliseconds(20), milliseconds(1000));
  s.OutputArrived();
  EXPECT_EQ(s.Next(), t0 + milliseconds(20));
}

}  // namespace
}  // namespace mcpexec::sandbox
