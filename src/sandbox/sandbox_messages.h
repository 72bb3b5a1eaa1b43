// Messages from a sandbox being set up: ChildReport records on its report socket and the
// agent's bytes on its start socket (both SOCK_SEQPACKET, one message per record), each with at
// most one descriptor (SCM_RIGHTS); and the supervisor's messages that carry descriptors.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/child/plan_view.h"

namespace mcpexec::sandbox {

struct SandboxMessage {
  std::string data;  // empty: end of file
  UniqueFd passed;   // the descriptor it carried, if any
};

// One message of at most 4096 bytes, waiting at most until `deadline`; `what` names the socket
// in errors.
Result<SandboxMessage> ReceiveMessage(int fd, std::chrono::steady_clock::time_point deadline,
                                      const char* what);

// Sends `message` (one message of the socket) with `fds` (SCM_RIGHTS, at most 8) to a zygote or
// a session's interpreter; kUnavailable with `gone` when the other end has closed.
Result<void> SendWithDescriptors(int fd, std::string_view message, std::span<const int> fds,
                                 const char* gone);

// One ChildReport and the descriptor it carries, if any, into `passed`. nullopt on EOF.
Result<std::optional<ChildReport>> ReadReport(int fd,
                                              std::chrono::steady_clock::time_point deadline,
                                              UniqueFd& passed);

}  // namespace mcpexec::sandbox
