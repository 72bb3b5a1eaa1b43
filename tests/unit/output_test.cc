#include "sandbox/output.h"

#include <gtest/gtest.h>

namespace mcpexec::sandbox {
namespace {

TEST(CappedOutput, KeepsEverythingUnderTheCap) {
  CappedOutput out(10);
  out.Append(Stream::kStdout, "abc");
  out.Append(Stream::kStderr, "de");
  out.Append(Stream::kStdout, "fgh");
  EXPECT_EQ(out.Stdout(), "abcfgh");
  EXPECT_EQ(out.Stderr(), "de");
  EXPECT_FALSE(out.Truncated());
}

TEST(CappedOutput, ExactlyAtTheCapIsNotTruncated) {
  CappedOutput out(4);
  out.Append(Stream::kStdout, "abcd");
  EXPECT_EQ(out.Stdout(), "abcd");
  EXPECT_FALSE(out.Truncated());
}

TEST(CappedOutput, CapIsCombinedAcrossStreamsInArrivalOrder) {
  CappedOutput out(5);
  out.Append(Stream::kStderr, "123");
  out.Append(Stream::kStdout, "4567");
  out.Append(Stream::kStderr, "89");
  EXPECT_EQ(out.Stderr(), "123");
  EXPECT_EQ(out.Stdout(), "45");
  EXPECT_TRUE(out.Truncated());
  EXPECT_EQ(out.Held(), 5u);
}

TEST(CappedOutput, HeldBytesStayBoundedWhateverIsAppended) {
  CappedOutput out(1000);
  const std::string chunk(65536, 'x');
  for (int i = 0; i < 1000; ++i) out.Append(Stream::kStdout, chunk);
  EXPECT_EQ(out.Held(), 1000u);
  EXPECT_LE(out.Stdout().capacity(), 2 * 65536u);
  EXPECT_TRUE(out.Truncated());
}

TEST(CappedOutput, TruncationDoesNotSplitACharacter) {
  CappedOutput out(4);
  out.Append(Stream::kStdout, "ab\xE2\x82\xAC");  // the euro sign would straddle the cap
  EXPECT_EQ(out.Stdout(), "ab");
  EXPECT_TRUE(out.Truncated());
}

}  // namespace
}  // namespace mcpexec::sandbox
