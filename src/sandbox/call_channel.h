// A session's control channel, the supervisor's side (docs/sessions.md): on the start socket
// the supervisor sends each call, "C" + the call's id with four descriptors, and the
// interpreter answers it, "D" + the same id + the call's status and value. The program runs in
// the interpreter and can write to the socket too, so every message is checked against the one
// call it may answer: anything else ends the session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace mcpexec::sandbox {

// A call's id: fresh random bytes per call, so that no answer can be made before the call is.
inline constexpr size_t kCallIdBytes = 16;
// The agent cuts a value at this many characters (warm_agent.cc, `value_limit`).
inline constexpr size_t kMaxValueChars = 16000;
// The largest answer: "D", the id, the status (4 bytes), the flag byte, the value in UTF-8.
inline constexpr size_t kMaxAnswerBytes = 1 + kCallIdBytes + 5 + 4 * kMaxValueChars;

// A fresh call id (getrandom).
Result<std::string> NewCallId();

// The "C" message of the call `id` (sent with the call's descriptors).
std::string CallMessage(std::string_view id);

// One message from the control socket, as read without waiting.
struct ControlMessage {
  enum class Kind { kNone, kMessage, kClosed };
  Kind kind = Kind::kNone;  // kNone: nothing waits; kClosed: the other end is closed
  std::string data;         // its first kMaxAnswerBytes bytes at most
  size_t size = 0;          // its whole length, even when that is more than `data` holds
  bool descriptors = false;  // it carried descriptors (the kernel closed them)
};

// Reads one message from `fd`, never waiting. A zero-length message is told apart from the end
// of file by the socket's hang-up state. Errors only for what is not the peer's doing.
Result<ControlMessage> ReceiveControl(int fd);

// A well-formed answer.
struct CallAnswer {
  int status = 0;                     // 0-255, as a process's
  std::optional<std::string> value;   // repr() of a last expression, at most kMaxValueChars
};

// `message` (kMessage) as the answer to the call `id`: the answer, or kFailedPrecondition with
// what is wrong in words ("an empty message", "an answer with an earlier call's id", ...): its
// form first, then whose answer it is.
// `previous` is the id of the session's call before (empty when none), to name a stale answer.
// An empty `id` matches nothing: that is a message when no call is waiting for its answer.
Result<CallAnswer> ParseAnswer(const ControlMessage& message, std::string_view id,
                               std::string_view previous);

}  // namespace mcpexec::sandbox
