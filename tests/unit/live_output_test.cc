// LiveOutput: the bounded, UTF-8-clean, stream-labelled output of notifications.
#include "exec/live_output.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/utf8.h"

namespace mcpexec::exec {
namespace {

using sandbox::Stream;
using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kEuro = "\xE2\x82\xAC";
const std::string kFffd = "\xEF\xBF\xBD";

bool IsValidUtf8(const std::string& s) { return RepairUtf8(s) == s; }

TEST(LiveOutputTest, WithoutOutputTheMessageSaysTheRunIsAlive) {
  LiveOutput live;
  LiveUpdate u = live.Take(milliseconds(1500), 42);
  EXPECT_EQ(u.message, "running for 1.5 s, 42 bytes of output so far");
  EXPECT_DOUBLE_EQ(u.progress, 1.5);
  EXPECT_TRUE(u.streams.empty());
}

TEST(LiveOutputTest, CarriesOnlyWhatIsNewAndSaysWhichStream) {
  LiveOutput live;
  live.Add(Stream::kStdout, "one\n");
  LiveUpdate u = live.Take(milliseconds(100), 4);
  EXPECT_EQ(u.message, "[stdout] one\n");
  ASSERT_EQ(u.streams.size(), 1u);
  EXPECT_EQ(u.streams[0].stream, Stream::kStdout);
  EXPECT_EQ(u.streams[0].text, "one\n");

  live.Add(Stream::kStdout, "two\n");
  u = live.Take(milliseconds(200), 8);
  EXPECT_EQ(u.message, "[stdout] two\n");
  EXPECT_THAT(live.Take(milliseconds(300), 8).message, StartsWith("running for"));
}

TEST(LiveOutputTest, KeepsTheOrderOfBothStreams) {
  LiveOutput live;
  live.Add(Stream::kStdout, "a\n");
  live.Add(Stream::kStderr, "warn");  // no line break: the next label starts a line anyway
  live.Add(Stream::kStdout, "b\n");
  live.Add(Stream::kStdout, "c\n");
  LiveUpdate u = live.Take(milliseconds(100), 10);
  EXPECT_EQ(u.message, "[stdout] a\n[stderr] warn\n[stdout] b\nc\n");
  ASSERT_EQ(u.streams.size(), 2u);
  EXPECT_EQ(u.streams[0].stream, Stream::kStdout);
  EXPECT_EQ(u.streams[0].text, "a\nb\nc\n");
  EXPECT_EQ(u.streams[1].stream, Stream::kStderr);
  EXPECT_EQ(u.streams[1].text, "warn");
}

TEST(LiveOutputTest, ProgressStrictlyIncreases) {
  LiveOutput live;
  double last = -1;
  for (int ms : {0, 0, 100, 100, 99, 250}) {
    const double p = live.Take(milliseconds(ms), 0).progress;
    EXPECT_GT(p, last) << ms;
    last = p;
  }
}

TEST(LiveOutputTest, KeepsTheNewestOutputWithinTheBoundAndSaysWhatWasSkipped) {
  LiveOutput live(4096);
  std::string all;
  for (int i = 0; i < 1000; ++i) {
    const std::string line = "line " + std::to_string(i) + "\n";
    all += line;
    live.Add(Stream::kStdout, line);
  }
  LiveUpdate u = live.Take(milliseconds(100), all.size());
  EXPECT_LE(u.message.size(), 4096u);
  EXPECT_GT(u.message.size(), 3900u);
  EXPECT_THAT(u.message, StartsWith("["));
  const size_t marker_end = u.message.find('\n');
  const std::string kept = u.message.substr(marker_end + 1 + std::string("[stdout] ").size());
  const size_t skipped = all.size() - kept.size();
  EXPECT_EQ(u.message.substr(0, marker_end), "[" + std::to_string(skipped) + " bytes skipped]");
  EXPECT_EQ(all.substr(skipped), kept);  // the newest, contiguous
  ASSERT_EQ(u.streams.size(), 1u);
  EXPECT_LE(u.streams[0].text.size(), 4096u);
  EXPECT_EQ(u.streams[0].text, "[" + std::to_string(skipped) + " bytes skipped]\n" + kept);
  // The next update starts afresh: no marker.
  live.Add(Stream::kStdout, "after\n");
  EXPECT_EQ(live.Take(milliseconds(200), 0).message, "[stdout] after\n");
}

TEST(LiveOutputTest, OneHugeChunkIsCutToItsNewestPart) {
  LiveOutput live(4096);
  live.Add(Stream::kStderr, std::string(1 << 20, 'x') + "end");
  LiveUpdate u = live.Take(milliseconds(100), 1 << 20);
  EXPECT_LE(u.message.size(), 4096u);
  EXPECT_THAT(u.message, HasSubstr("bytes skipped]\n[stderr] xxx"));
  EXPECT_THAT(u.message, testing::EndsWith("xxxend"));
  ASSERT_EQ(u.streams.size(), 1u);
  EXPECT_EQ(u.streams[0].stream, Stream::kStderr);
  const std::string& text = u.streams[0].text;
  const size_t skipped = std::stoul(text.substr(1));
  EXPECT_EQ(skipped + (text.size() - text.find('\n') - 1), (1u << 20) + 3);
}

TEST(LiveOutputTest, ManyAlternatingRunsStayWithinTheBoundLabelsIncluded) {
  LiveOutput live(4096);
  for (int i = 0; i < 5000; ++i) live.Add(i % 2 ? Stream::kStderr : Stream::kStdout, "x");
  LiveUpdate u = live.Take(milliseconds(100), 5000);
  EXPECT_LE(u.message.size(), 4096u);
  EXPECT_THAT(u.message, HasSubstr("bytes skipped]\n"));
  EXPECT_THAT(u.message, testing::EndsWith("[stdout] x\n[stderr] x"));
  for (const auto& s : u.streams) EXPECT_LE(s.text.size(), 4096u);
}

TEST(LiveOutputTest, NeverSplitsACharacterBetweenTwoUpdates) {
  LiveOutput live;
  live.Add(Stream::kStdout, "price: \xE2\x82");  // the euro sign, cut after two of its bytes
  LiveUpdate first = live.Take(milliseconds(100), 9);
  EXPECT_EQ(first.message, "[stdout] price: ");
  live.Add(Stream::kStdout, "\xAC\n");
  LiveUpdate second = live.Take(milliseconds(200), 11);
  EXPECT_EQ(second.message, "[stdout] " + kEuro + "\n");
  EXPECT_EQ(second.streams[0].text, kEuro + "\n");
}

TEST(LiveOutputTest, AHeldCharacterIsNotMixedWithTheOtherStream) {
  LiveOutput live;
  live.Add(Stream::kStdout, "\xE2");
  live.Add(Stream::kStderr, "e\n");
  live.Add(Stream::kStdout, "\x82\xAC");
  EXPECT_EQ(live.Take(milliseconds(100), 0).message, "[stderr] e\n[stdout] " + kEuro);
}

TEST(LiveOutputTest, IllFormedBytesBecomeReplacementCharacters) {
  LiveOutput live;
  live.Add(Stream::kStdout,
           "a\xFF"
           "b\xC0\xAF\n");
  LiveUpdate u = live.Take(milliseconds(100), 0);
  EXPECT_EQ(u.streams[0].text, "a" + kFffd + "b" + kFffd + kFffd + "\n");
}

// Whatever the bytes and however they are cut, every update is valid UTF-8 within the bound,
// and with a bound large enough to skip nothing, the updates add up to the repaired stream.
TEST(LiveOutputTest, AnyBytesAnyCutsGiveValidBoundedText) {
  std::string stream;
  uint32_t x = 12345;
  for (int i = 0; i < 20000; ++i) {
    x = x * 1103515245 + 12345;
    const int pick = (x >> 16) % 6;
    stream += pick == 0   ? std::string(1, static_cast<char>(x >> 8))
              : pick == 1 ? kEuro
              : pick == 2 ? "\xF0\x9F\x98\x80"
                          : "t";
  }
  stream += "t";  // a complete character at the end: nothing is held back
  for (size_t bound : {size_t{100}, size_t{4096}, size_t{1} << 20}) {
    LiveOutput live(bound);
    std::string joined;
    size_t pos = 0;
    int ms = 0;
    while (pos < stream.size()) {
      x = x * 1103515245 + 12345;
      const size_t n = std::min(stream.size() - pos, size_t{1} + (x >> 16) % 700);
      live.Add(Stream::kStdout, std::string_view(stream).substr(pos, n));
      pos += n;
      if ((x >> 8) % 3 == 0) continue;
      LiveUpdate u = live.Take(milliseconds(ms += 100), pos);
      ASSERT_TRUE(IsValidUtf8(u.message));
      ASSERT_LE(u.message.size(), std::max<size_t>(bound, 64));
      for (const auto& s : u.streams) {
        ASSERT_TRUE(IsValidUtf8(s.text));
        ASSERT_LE(s.text.size(), std::max<size_t>(bound, 64));
        joined += s.text;
      }
    }
    for (const auto& s : live.Take(milliseconds(ms += 100), pos).streams) joined += s.text;
    if (bound == size_t{1} << 20) {
      EXPECT_EQ(joined, RepairUtf8(stream));
    }
  }
}

}  // namespace
}  // namespace mcpexec::exec
