// A session's control channel (call_channel.h): only the call's own, well-formed answer is an
// answer; every other message is named for what it is, and an empty message is not the end of
// file (issue 23: an empty message read as EOF made the next call hang to its deadline).
#include "sandbox/call_channel.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>

#include "base/unique_fd.h"

namespace mcpexec::sandbox {
namespace {

const std::string kId(kCallIdBytes, 'a');
const std::string kEarlier(kCallIdBytes, 'b');

std::string Answer(const std::string& id, int32_t status, std::optional<std::string> value) {
  std::string m = "D" + id;
  m.append(reinterpret_cast<const char*>(&status), sizeof status);
  m.push_back(value ? 1 : 0);
  if (value) m += *value;
  return m;
}

ControlMessage Message(std::string data) {
  ControlMessage m;
  m.kind = ControlMessage::Kind::kMessage;
  m.size = data.size();
  m.data = std::move(data);
  return m;
}

// What is wrong with `data` as the answer to kId, or "" when it is that answer.
std::string Problem(std::string data, std::string_view id = kId) {
  auto parsed = ParseAnswer(Message(std::move(data)), id, kEarlier);
  return parsed.ok() ? "" : parsed.error().message;
}

TEST(CallChannel, TheCallsOwnAnswerIsTaken) {
  auto plain = ParseAnswer(Message(Answer(kId, 3, std::nullopt)), kId, kEarlier);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->status, 3);
  EXPECT_FALSE(plain->value);
  auto valued = ParseAnswer(Message(Answer(kId, 0, "'é'")), kId, "");
  ASSERT_TRUE(valued.ok()) << valued.error().message;
  EXPECT_EQ(valued->value, "'é'");
  const std::string longest(kMaxValueChars, 'x');
  EXPECT_EQ(Problem(Answer(kId, 0, longest)), "");
  std::string wide;  // the longest value in the widest characters: the largest answer
  for (size_t i = 0; i < kMaxValueChars; ++i) wide += "\xf0\x9f\x98\x80";
  EXPECT_EQ(Problem(Answer(kId, 255, wide)), "");
  EXPECT_EQ(Answer(kId, 255, wide).size(), kMaxAnswerBytes);
}

TEST(CallChannel, AnotherCallsOrAForgedIdIsNamed) {
  EXPECT_EQ(Problem(Answer(kEarlier, 0, std::nullopt)), "an answer with an earlier call's id");
  EXPECT_EQ(Problem(Answer(std::string(kCallIdBytes, 'z'), 0, std::nullopt)),
            "an answer with an id that no call had (forged)");
  EXPECT_EQ(Problem(Answer(kId, 0, std::nullopt), ""),
            "an answer with an id that no call had (forged)")
      << "between calls nothing is an answer, the last call's own answer neither";
}

TEST(CallChannel, MalformedEmptyAndOversizedMessagesAreNamed) {
  EXPECT_EQ(Problem(""), "an empty message");
  EXPECT_EQ(Problem("X" + kId + "12345"), "a malformed message (it is not an answer, \"D\")");
  EXPECT_EQ(Problem("D" + kId), "a malformed message (17 bytes, shorter than an answer)");
  EXPECT_EQ(Problem(Answer(kId, 256, std::nullopt)), "a malformed answer (status 256 is not 0-255)");
  EXPECT_EQ(Problem(Answer(kId, -1, std::nullopt)), "a malformed answer (status -1 is not 0-255)");
  std::string flagged = Answer(kId, 0, std::nullopt);
  flagged.back() = 2;
  EXPECT_EQ(Problem(flagged), "a malformed answer (flag byte 2)");
  EXPECT_EQ(Problem(Answer(kId, 0, std::nullopt) + "x"),
            "a malformed answer (a value after \"no value\")");
  EXPECT_EQ(Problem(Answer(kId, 0, std::string(kMaxValueChars + 1, 'x'))),
            "an oversized value (16001 characters; the agent cuts at 16000)");
  ControlMessage huge = Message(std::string(kMaxAnswerBytes, 'D'));
  huge.size = 65535;
  EXPECT_EQ(ParseAnswer(huge, kId, "").error().message,
            "an oversized message (65535 bytes; an answer has at most 64022)");
  ControlMessage with_fds = Message(Answer(kId, 0, std::nullopt));
  with_fds.descriptors = true;
  EXPECT_EQ(ParseAnswer(with_fds, kId, "").error().message,
            "a malformed message (it carried descriptors)");
}

TEST(CallChannel, AnEmptyMessageIsNotTheEndOfFile) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd mine(sv[0]), theirs(sv[1]);
  auto nothing = ReceiveControl(mine.Get());
  ASSERT_TRUE(nothing.ok());
  EXPECT_EQ(nothing->kind, ControlMessage::Kind::kNone);

  ASSERT_EQ(send(theirs.Get(), "", 0, 0), 0);
  auto empty = ReceiveControl(mine.Get());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->kind, ControlMessage::Kind::kMessage);
  EXPECT_EQ(empty->size, 0u);

  const std::string big(70000, 'D');
  ASSERT_EQ(send(theirs.Get(), big.data(), big.size(), 0), static_cast<ssize_t>(big.size()));
  auto oversized = ReceiveControl(mine.Get());
  ASSERT_TRUE(oversized.ok());
  EXPECT_EQ(oversized->size, big.size()) << "the whole length, past the buffer";
  EXPECT_EQ(oversized->data.size(), kMaxAnswerBytes);

  theirs.Reset();
  auto closed = ReceiveControl(mine.Get());
  ASSERT_TRUE(closed.ok());
  EXPECT_EQ(closed->kind, ControlMessage::Kind::kClosed);
}

}  // namespace
}  // namespace mcpexec::sandbox
