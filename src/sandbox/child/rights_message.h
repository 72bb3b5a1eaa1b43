// A message that carries descriptors (SCM_RIGHTS), laid out in the caller's storage: it
// allocates nothing, so that the post-clone child uses it as well as the supervisor.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstring>

namespace mcpexec::sandbox {

// `control` must hold CMSG_SPACE(count * sizeof(int)) bytes, aligned for cmsghdr.
inline void PrepareRightsMessage(msghdr& msg, iovec& iov, char* control, size_t control_len,
                                 const int* fds, size_t count) noexcept {
  msg = msghdr{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = control_len;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(count * sizeof(int));
  memcpy(CMSG_DATA(cmsg), fds, count * sizeof(int));
}

}  // namespace mcpexec::sandbox
