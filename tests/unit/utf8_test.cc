#include "base/utf8.h"

#include <gtest/gtest.h>

namespace mcpexec {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(RepairUtf8, KeepsValidText) {
  const std::string text = "plain ascii, caf\xC3\xA9, \xE2\x82\xAC, \xF0\x9F\x98\x80";
  EXPECT_EQ(RepairUtf8(text), text);
}

TEST(RepairUtf8, ReplacesStrayBytes) {
  EXPECT_EQ(RepairUtf8("a\xFF" "b"), "a" + kFffd + "b");
  EXPECT_EQ(RepairUtf8("\x80\x80"), kFffd + kFffd);
}

TEST(RepairUtf8, ReplacesOverlongsSurrogatesAndOutOfRange) {
  EXPECT_EQ(RepairUtf8("\xC0\xAF"), kFffd + kFffd);          // overlong '/'
  EXPECT_EQ(RepairUtf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // U+D800
  EXPECT_EQ(RepairUtf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
}

TEST(RepairUtf8, ReplacesATruncatedSequenceWithOneCharacter) {
  EXPECT_EQ(RepairUtf8("x\xE2\x82"), "x" + kFffd);
  EXPECT_EQ(RepairUtf8("\xE2\x82" "y"), kFffd + "y");
}

TEST(RepairUtf8, KeepsNulBytes) {
  EXPECT_EQ(RepairUtf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(Utf8SafeCut, NeverSplitsACharacter) {
  const std::string euro = "ab\xE2\x82\xAC";
  EXPECT_EQ(Utf8SafeCut(euro, 5), 5u);
  EXPECT_EQ(Utf8SafeCut(euro, 4), 2u);
  EXPECT_EQ(Utf8SafeCut(euro, 3), 2u);
  EXPECT_EQ(Utf8SafeCut(euro, 2), 2u);
  EXPECT_EQ(Utf8SafeCut(euro, 10), 5u);
  EXPECT_EQ(Utf8SafeCut("\xFF\xFF\xFF", 2), 2u);  // garbage is cut where asked
}

TEST(Utf8CompleteLength, HoldsBackOnlyACharacterThatCouldStillBeCompleted) {
  EXPECT_EQ(Utf8CompleteLength(""), 0u);
  EXPECT_EQ(Utf8CompleteLength("ab\xE2\x82\xAC"), 5u);
  EXPECT_EQ(Utf8CompleteLength("ab\xE2\x82"), 2u);
  EXPECT_EQ(Utf8CompleteLength("ab\xE2"), 2u);
  EXPECT_EQ(Utf8CompleteLength("\xF0\x9F\x98"), 0u);
  EXPECT_EQ(Utf8CompleteLength("a\xFF"), 2u);        // can never start a character
  EXPECT_EQ(Utf8CompleteLength("a\xE2" "b"), 3u);    // already broken: nothing to wait for
  EXPECT_EQ(Utf8CompleteLength("\x80\x80\x80"), 3u);
}

// Holding back what Utf8CompleteLength leaves out, and repairing each chunk, gives what
// repairing the whole stream gives, wherever the stream is cut.
TEST(Utf8CompleteLength, ChunkByChunkRepairEqualsWholeRepair) {
  const std::string stream =
      "ok \xE2\x82\xAC \xF0\x9F\x98\x80 \xC3\xA9\xFF\xE0\x80\xED\xA0\x80\xF0\x90\x80"
      "\xC3 \xF4\x90\x80\x80\xE2\x82";
  for (size_t a = 0; a <= stream.size(); ++a) {
    for (size_t b = a; b <= stream.size(); ++b) {
      std::string held, out;
      for (std::string_view chunk : {std::string_view(stream).substr(0, a),
                                     std::string_view(stream).substr(a, b - a),
                                     std::string_view(stream).substr(b)}) {
        held.append(chunk);
        const size_t n = Utf8CompleteLength(held);
        out += RepairUtf8(std::string_view(held).substr(0, n));
        held.erase(0, n);
      }
      out += RepairUtf8(held);
      ASSERT_EQ(out, RepairUtf8(stream)) << "cut at " << a << " and " << b;
    }
  }
}

}  // namespace
}  // namespace mcpexec
