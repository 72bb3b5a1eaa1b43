#include "mcp/transport/line_writer.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "jsonrpc/message.h"
#include "log/log.h"

namespace mcpexec::mcp {

LineWriter::LineWriter(int fd, size_t max_pending_bytes)
    : fd_(fd), max_pending_bytes_(max_pending_bytes), thread_([this] { Run(); }) {}

LineWriter::~LineWriter() { Finish(); }

bool LineWriter::Send(const nlohmann::json& message, bool final) {
  std::string line = jsonrpc::Serialize(message);
  line.push_back('\n');
  std::unique_lock lock(mu_);
  if (final || jsonrpc::IsResponse(message)) {
    // An empty queue always takes one, however large.
    changed_.wait(lock, [&] {
      return broken_ || finishing_ || pending_bytes_ == 0 ||
             pending_bytes_ + line.size() <= max_pending_bytes_;
    });
  } else if (pending_bytes_ + line.size() > max_pending_bytes_) {
    return false;
  }
  if (broken_ || finishing_) return false;
  pending_bytes_ += line.size();
  queue_.push_back(std::move(line));
  changed_.notify_all();
  return true;
}

void LineWriter::Finish() {
  {
    std::lock_guard lock(mu_);
    finishing_ = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void LineWriter::Run() {
  // A client that closed its end makes write fail with EPIPE; the signal would end the server.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  std::unique_lock lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return !queue_.empty() || finishing_; });
    if (queue_.empty()) return;  // finishing, and all written
    const std::string line = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    bool ok = true;
    for (size_t done = 0; done < line.size();) {
      const ssize_t n = write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ok = false;
        break;
      }
      done += static_cast<size_t>(n);
    }
    lock.lock();
    pending_bytes_ -= line.size();
    if (!ok) {
      broken_ = true;  // the client closed its end; the read loop will see EOF
      queue_.clear();
      pending_bytes_ = 0;
      log::Warn("stdout closed by the client");
    }
    changed_.notify_all();
    if (!ok) return;
  }
}

}  // namespace mcpexec::mcp
