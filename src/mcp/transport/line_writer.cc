#include "mcp/transport/line_writer.h"

#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "base/sigpipe_block.h"
#include "base/sys.h"
#include "jsonrpc/message.h"
#include "log/log.h"
#include "mcp/call_steps_log.h"

namespace mcpexec::mcp {

namespace {

// A pipe or a Unix socket that polls writable takes PIPE_BUF bytes without blocking, and a file
// always does; a terminal (flow control) or a TCP socket (a small send buffer) may not.
bool NeverBlocksWhenWritable(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  if (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode)) return true;
  int domain = 0;
  socklen_t size = sizeof domain;
  return S_ISSOCK(st.st_mode) && getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &size) == 0 &&
         domain == AF_UNIX;
}

}  // namespace

LineWriter::LineWriter(int fd, size_t max_pending_bytes)
    : fd_(fd),
      direct_(NeverBlocksWhenWritable(fd)),
      max_pending_bytes_(max_pending_bytes),
      thread_([this] { Run(); }) {}

LineWriter::~LineWriter() { Finish(); }

bool LineWriter::Send(const nlohmann::json& message, bool final) {
  std::string line = jsonrpc::Serialize(message);
  line.push_back('\n');
  const bool response = final || jsonrpc::IsResponse(message);
  if (response) MarkStep(Step::kSerialized);
  std::unique_lock lock(mu_);
  if (response) {
    // An empty queue always takes one, however large.
    room_.wait(lock, [&] {
      return broken_ || finishing_ || pending_bytes_ == 0 ||
             pending_bytes_ + line.size() <= max_pending_bytes_;
    });
  } else if (pending_bytes_ + line.size() > max_pending_bytes_) {
    return false;
  }
  if (broken_ || finishing_) return false;
  pending_bytes_ += line.size();
  if (response && CanWriteNow(line)) return WriteLocked(lock, line);
  std::unique_ptr<CallSteps> steps;
  if (response) {
    if (std::optional<CallSteps> handed = HandOffSteps()) {
      steps = std::make_unique<CallSteps>(std::move(*handed));
    }
  }
  queue_.push_back(Pending{std::move(line), std::move(steps)});
  work_.notify_one();
  return true;
}

bool LineWriter::CanWriteNow(const std::string& line) const {
  if (!direct_ || writing_ || !queue_.empty() || line.size() > PIPE_BUF) return false;
  pollfd pfd{fd_, POLLOUT, 0};
  return poll(&pfd, 1, 0) == 1 && pfd.revents == POLLOUT;
}

bool LineWriter::WriteLocked(std::unique_lock<std::mutex>& lock, const std::string& line) {
  writing_ = true;
  lock.unlock();
  // Before the write, not after it: the client may read the line as soon as it is in, and
  // this thread run again only later; a call's steps must end within what its client waits.
  MarkStep(Step::kWriting);
  bool ok;
  {
    const ScopedSigpipeBlock no_sigpipe;  // the client may close its end at any moment
    ok = WriteAll(fd_, line).ok();
  }
  lock.lock();
  writing_ = false;
  pending_bytes_ -= line.size();
  if (!ok && !broken_) {
    broken_ = true;  // the client closed its end; the read loop will see EOF
    queue_.clear();
    pending_bytes_ = 0;
    log::Warn("stdout closed by the client");
  }
  room_.notify_all();
  // The thread waits for this write only when it has a line to write after it, or must end.
  if (!queue_.empty() || finishing_ || broken_) work_.notify_one();
  return ok;
}

void LineWriter::Finish() {
  {
    std::lock_guard lock(mu_);
    finishing_ = true;
    room_.notify_all();
    work_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void LineWriter::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    // A sender may be writing its response: the next line waits for it.
    work_.wait(lock, [&] { return (!queue_.empty() || finishing_ || broken_) && !writing_; });
    if (broken_ || queue_.empty()) return;  // the client is gone, or finishing and all written
    Pending next = std::move(queue_.front());
    queue_.pop_front();
    const CallStepsScope in_call(next.steps.get());
    if (!WriteLocked(lock, next.line)) return;
    if (next.steps) {
      lock.unlock();
      LogCallSteps(*next.steps);
      lock.lock();
    }
  }
}

}  // namespace mcpexec::mcp
