#include "sandbox/call_channel.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/random.h"
#include "sandbox/warm_agent.h"

namespace mcpexec::sandbox {
namespace {

Error Bad(std::string what) { return MakeError(ErrorCode::kFailedPrecondition, std::move(what)); }

// Characters of UTF-8 text: bytes that do not continue a character. The agent encodes with
// "replace", so what it sends is valid UTF-8; anything else is cut to size by the result's repair.
size_t Utf8Characters(std::string_view text) {
  size_t n = 0;
  for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

Result<std::string> NewCallId() { return RandomBytes(kCallIdBytes); }

std::string CallMessage(std::string_view id) { return std::string(1, kSessionCall).append(id); }

Result<ControlMessage> ReceiveControl(int fd) {
  ControlMessage closed;
  closed.kind = ControlMessage::Kind::kClosed;
  ControlMessage message;
  message.data.resize(kMaxAnswerBytes);
  iovec iov{message.data.data(), message.data.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  // No room for descriptors: the kernel closes any sent along and says so with MSG_CTRUNC.
  // MSG_TRUNC: the return value is the message's whole length, however long.
  ssize_t got;
  do {
    got = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_TRUNC);
  } while (got < 0 && errno == EINTR);
  if (got < 0 && errno == EAGAIN) return ControlMessage{};
  if (got < 0 && (errno == ECONNRESET || errno == EPIPE || errno == ENOTCONN)) {
    return closed;
  }
  if (got < 0) return Errno(ErrorCode::kInternal, "recvmsg(session control socket)");
  if (got == 0) {
    // A zero-length message and the end of file both read as 0; only the end hangs up.
    pollfd pfd{fd, POLLIN | POLLRDHUP, 0};
    if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLRDHUP)) != 0) {
      return closed;
    }
  }
  message.kind = ControlMessage::Kind::kMessage;
  message.size = static_cast<size_t>(got);
  message.data.resize(std::min(message.size, kMaxAnswerBytes));
  message.descriptors = (msg.msg_flags & MSG_CTRUNC) != 0;
  return message;
}

Result<CallAnswer> ParseAnswer(const ControlMessage& message, std::string_view id,
                               std::string_view previous) {
  constexpr size_t kFixed = 1 + kCallIdBytes + 5;
  const std::string_view data = message.data;
  if (message.size == 0) return Bad("an empty message");
  if (message.size > kMaxAnswerBytes) {
    return Bad("an oversized message (" + std::to_string(message.size) +
               " bytes; an answer has at most " + std::to_string(kMaxAnswerBytes) + ")");
  }
  if (message.descriptors) return Bad("a malformed message (it carried descriptors)");
  if (data[0] != kSessionDone) return Bad("a malformed message (it is not an answer, \"D\")");
  if (data.size() < kFixed) {
    return Bad("a malformed message (" + std::to_string(data.size()) +
               " bytes, shorter than an answer)");
  }
  int32_t status = 0;
  memcpy(&status, data.data() + 1 + kCallIdBytes, sizeof status);
  const auto flag = static_cast<unsigned char>(data[kFixed - 1]);
  if (status < 0 || status > 255) {
    return Bad("a malformed answer (status " + std::to_string(status) + " is not 0-255)");
  }
  if (flag > 1) return Bad("a malformed answer (flag byte " + std::to_string(flag) + ")");
  if (flag == 0 && data.size() != kFixed) {
    return Bad("a malformed answer (a value after \"no value\")");
  }
  const std::string_view value = data.substr(kFixed);
  if (const size_t chars = Utf8Characters(value); chars > kMaxValueChars) {
    return Bad("an oversized value (" + std::to_string(chars) + " characters; the agent cuts at " +
               std::to_string(kMaxValueChars) + ")");
  }
  // Well-formed: now whether it answers this call.
  const std::string_view its = data.substr(1, kCallIdBytes);
  if (id.size() != kCallIdBytes || its != id) {
    if (!previous.empty() && its == previous) return Bad("an answer with an earlier call's id");
    return Bad("an answer with an id that no call had (forged)");
  }
  CallAnswer answer;
  answer.status = status;
  if (flag == 1) answer.value = std::string(value);
  return answer;
}

}  // namespace mcpexec::sandbox
