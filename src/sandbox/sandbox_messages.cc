#include "sandbox/sandbox_messages.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "sandbox/child/rights_message.h"

namespace mcpexec::sandbox {

Result<SandboxMessage> ReceiveMessage(int fd, std::chrono::steady_clock::time_point deadline,
                                      const char* what) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return MakeError(ErrorCode::kDeadlineExceeded,
                       std::string("sandbox set-up did not finish in time (") + what + ")");
    }
    pollfd pfd{fd, POLLIN, 0};
    const int n = poll(&pfd, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(ErrorCode::kInternal, std::string("poll(") + what + ")");
    if (n == 0) continue;
    char buffer[4096];
    iovec iov{buffer, sizeof buffer};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t got = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == ECONNRESET || errno == EPIPE)) return SandboxMessage{};
    if (got < 0) return Errno(ErrorCode::kInternal, std::string("recvmsg(") + what + ")");
    SandboxMessage message;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
          c->cmsg_len == CMSG_LEN(sizeof(int))) {
        int received;
        memcpy(&received, CMSG_DATA(c), sizeof received);
        message.passed.Reset(received);
      }
    }
    if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
      return MakeError(ErrorCode::kInternal, std::string("an oversized message on the ") + what);
    }
    message.data.assign(buffer, static_cast<size_t>(got));
    return message;
  }
}

Result<std::optional<ChildReport>> ReadReport(int fd,
                                              std::chrono::steady_clock::time_point deadline,
                                              UniqueFd& passed) {
  MCPEXEC_ASSIGN_OR_RETURN(SandboxMessage message, ReceiveMessage(fd, deadline, "set-up report"));
  if (message.passed.Valid()) passed = std::move(message.passed);
  if (message.data.empty()) return std::optional<ChildReport>();
  ChildReport report;
  if (message.data.size() != sizeof report) {
    return MakeError(ErrorCode::kInternal, "short set-up report from the sandbox");
  }
  memcpy(&report, message.data.data(), sizeof report);
  return std::optional<ChildReport>(report);
}

Result<void> SendWithDescriptors(int fd, std::string_view message, std::span<const int> fds,
                                 const char* gone) {
  constexpr size_t kMost = 10;  // a zygote's fork: 5, and up to 4 to join its cgroup
  if (fds.size() > kMost) return MakeError(ErrorCode::kInternal, "too many descriptors to send");
  iovec iov{const_cast<char*>(message.data()), message.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(kMost * sizeof(int))] = {};
  msghdr msg;
  PrepareRightsMessage(msg, iov, control, CMSG_SPACE(fds.size() * sizeof(int)), fds.data(),
                       fds.size());
  for (;;) {
    if (sendmsg(fd, &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(message.size())) return Ok();
    if (errno == EINTR) continue;
    if (errno == EPIPE || errno == ECONNRESET) return MakeError(ErrorCode::kUnavailable, gone);
    return Errno(ErrorCode::kInternal, "sendmsg(start socket)");
  }
}

}  // namespace mcpexec::sandbox
