#include "sandbox/output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/utf8.h"

namespace mcpexec::sandbox {

void CappedOutput::Append(Stream stream, std::string_view chunk) {
  if (chunk.empty()) return;
  if (truncated_) return;
  std::string& out = stream == Stream::kStdout ? stdout_ : stderr_;
  const size_t room = cap_ - Held();
  if (chunk.size() <= room) {
    out.append(chunk);
    return;
  }
  // Cut on a character boundary so that truncation itself adds no replacement character.
  out.append(chunk.substr(0, Utf8SafeCut(chunk, room)));
  truncated_ = true;
}

DrainEnd DrainPipe(int fd, Stream stream, CappedOutput& output, size_t budget) {
  char buf[65536];
  while (budget > 0) {
    if (output.Truncated()) return DrainEnd::kCapped;
    // One byte past the room is enough to know the output is truncated; taking no more leaves
    // the rest in the pipe, where it counts against the program's own buffer.
    const size_t want = std::min({sizeof buf, budget, output.Room() + 1});
    const ssize_t n = read(fd, buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return DrainEnd::kEmpty;
    if (n <= 0) return DrainEnd::kClosed;
    output.Append(stream, std::string_view(buf, static_cast<size_t>(n)));
    budget -= static_cast<size_t>(n);
    if (static_cast<size_t>(n) < want) return output.Truncated() ? DrainEnd::kCapped : DrainEnd::kEmpty;
  }
  return output.Truncated() ? DrainEnd::kCapped : DrainEnd::kMore;
}

void GrowPipeForDiscard(int fd) { (void)fcntl(fd, F_SETPIPE_SZ, kDiscardPipeBytes); }

DrainEnd DiscardPipe(int fd, int null_fd, size_t budget) {
  while (budget > 0) {
    const ssize_t n = splice(fd, nullptr, null_fd, nullptr, budget, SPLICE_F_NONBLOCK);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return DrainEnd::kEmpty;
    if (n <= 0) return DrainEnd::kClosed;
    budget -= static_cast<size_t>(n);
  }
  return DrainEnd::kMore;
}

}  // namespace mcpexec::sandbox
