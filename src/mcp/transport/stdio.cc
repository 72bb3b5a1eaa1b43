#include "mcp/transport/stdio.h"

#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <string>

#include "jsonrpc/message.h"
#include "log/log.h"

namespace mcpexec::mcp {
namespace {

class LineSink : public MessageSink {
 public:
  explicit LineSink(int fd) : fd_(fd) {}

  void Send(const nlohmann::json& message, bool /*final*/) override {
    std::string line = jsonrpc::Serialize(message);
    line.push_back('\n');
    std::lock_guard lock(mu_);
    if (broken_) return;
    for (size_t done = 0; done < line.size();) {
      const ssize_t n = write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        broken_ = true;  // the client closed its end; the read loop will see EOF
        log::Warn("stdout closed by the client");
        return;
      }
      done += static_cast<size_t>(n);
    }
  }

 private:
  const int fd_;
  std::mutex mu_;
  bool broken_ = false;
};

}  // namespace

Result<void> ServeStdio(Server& server, int in_fd, int out_fd, size_t max_message_bytes) {
  auto sink = std::make_shared<LineSink>(out_fd);
  std::shared_ptr<Session> session = server.NewSession("stdio");
  std::string pending;
  bool discarding = false;  // inside a line that is already too long
  char buf[65536];
  for (;;) {
    const ssize_t n = read(in_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      session->Close();
      return Errno(ErrorCode::kInternal, "read(stdin)");
    }
    if (n == 0) break;
    size_t start = 0;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      if (buf[i] != '\n') continue;
      if (!discarding) {
        pending.append(buf + start, i - start);
        if (!pending.empty() && pending.back() == '\r') pending.pop_back();
        if (pending.find_first_not_of(" \t") != std::string::npos) {
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
  return Ok();
}

}  // namespace mcpexec::mcp
