#include "mcp/transport/stdio.h"

#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/call_steps.h"
#include "jsonrpc/message.h"
#include "log/log.h"
#include "mcp/call_steps_log.h"
#include "mcp/transport/line_writer.h"

namespace mcpexec::mcp {
namespace {

// What may wait in the writer's queue while the client is not reading: notifications past it are
// dropped (the same budget as a Streamable HTTP stream's).
constexpr size_t kMaxPendingBytes = 4u << 20;

}  // namespace

Result<void> ServeStdio(Server& server, int in_fd, int out_fd, size_t max_message_bytes) {
  auto sink = std::make_shared<LineWriter>(out_fd, kMaxPendingBytes);
  std::shared_ptr<Session> session = server.NewSession("stdio");
  std::string pending;
  bool discarding = false;  // inside a line that is already too long
  char buf[65536];
  for (;;) {
    const ssize_t n = read(in_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const Error error = Errno(ErrorCode::kInternal, "read(stdin)");
      session->Close();
      sink->Finish();
      return error;
    }
    if (n == 0) break;
    size_t start = 0;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      if (buf[i] != '\n') continue;
      if (!discarding) {
        pending.append(buf + start, i - start);
        if (!pending.empty() && pending.back() == '\r') pending.pop_back();
        if (pending.find_first_not_of(" \t") != std::string::npos) {
          std::optional<CallSteps> steps = StartCallSteps();
          const CallStepsScope in_call(steps);
          session->Handle(pending, sink);
        }
      }
      pending.clear();
      discarding = false;
      start = i + 1;
    }
    if (!discarding) pending.append(buf + start, static_cast<size_t>(n) - start);
    if (!discarding && pending.size() > max_message_bytes) {
      sink->Send(jsonrpc::MakeError(nullptr, jsonrpc::kInvalidRequest,
                                    "Invalid Request: message larger than " +
                                        std::to_string(max_message_bytes) + " bytes"),
                 true);
      log::Warn("message too large", {{"limit", max_message_bytes}});
      pending.clear();
      discarding = true;
    }
  }
  if (!discarding && pending.find_first_not_of(" \t\r") != std::string::npos) {
    session->Handle(pending, sink);  // a last message without its newline
  }
  session->Close();
  sink->Finish();  // what was answered before EOF still reaches the client
  return Ok();
}

}  // namespace mcpexec::mcp
