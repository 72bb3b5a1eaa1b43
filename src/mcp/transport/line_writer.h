// LineWriter: the stdio transport's MessageSink. Writes one JSON-RPC message per line to a
// descriptor from a thread of its own, so that a client that stops reading its server's stdout
// never stalls the thread that sends: a run's supervisor sends progress and log notifications
// with the program's output while the run goes on, and must keep enforcing its deadline.
// A response that finds nothing queued and room in a pipe, a Unix socket or a file is written
// by its sender, one thread hand-off fewer on a call's answer (CanWriteNow). Every write blocks
// SIGPIPE in its thread for its length: a client that closed its end gives EPIPE.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "base/call_steps.h"
#include "mcp/message_sink.h"

namespace mcpexec::mcp {

class LineWriter : public MessageSink {
 public:
  // Writes to `fd` (not owned). Notifications that would take what is queued and not yet
  // written past `max_pending_bytes` are dropped; a response waits for room instead (the
  // client's reading paces the calls that answer it, as a blocking write would).
  LineWriter(int fd, size_t max_pending_bytes);
  // Finish().
  ~LineWriter() override;
  LineWriter(const LineWriter&) = delete;
  LineWriter& operator=(const LineWriter&) = delete;

  // Queues `message` as one line, or writes it at once (a response, above). Thread-safe. Never
  // blocks for a notification; dropped after Finish() or once a write has failed (the client
  // closed its end).
  bool Send(const nlohmann::json& message, bool final) override;
  bool OpenAfterFinal() const override { return true; }

  // Writes everything queued, then stops the thread. Blocks until that is written or a write
  // fails. Idempotent.
  void Finish();

 private:
  void Run();
  // Whether `line` can be written now without waiting: nothing queued or being written, the
  // line within PIPE_BUF (a pipe writes it whole into one free buffer), and the descriptor a
  // pipe, a Unix socket or a file that polls writable. Called with mu_ held.
  bool CanWriteNow(const std::string& line) const;
  // Writes `line` with mu_ released (writing_ set), then accounts for it; false if the write
  // failed. `lock` holds mu_ on entry and on return.
  bool WriteLocked(std::unique_lock<std::mutex>& lock, const std::string& line);

  const int fd_;
  const bool direct_;  // fd_ is a pipe, a Unix socket or a regular file: CanWriteNow may say yes
  const size_t max_pending_bytes_;
  std::mutex mu_;
  std::condition_variable room_;  // for a response waiting for room in the queue
  std::condition_variable work_;  // for the thread: a line queued, the end, or a write done
  // A line waiting for the thread, with the steps of the call it answers (base/call_steps.h),
  // which the thread reports once it has written it.
  struct Pending {
    std::string line;
    std::unique_ptr<CallSteps> steps;  // null but for a response while steps are measured
  };
  std::deque<Pending> queue_;
  size_t pending_bytes_ = 0;  // queued, plus the line being written
  bool writing_ = false;      // a line is being written, by the thread or by its sender
  bool broken_ = false;
  bool finishing_ = false;
  std::thread thread_;  // last: started once the members it uses exist
};

}  // namespace mcpexec::mcp
