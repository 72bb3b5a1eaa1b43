// LineWriter: the stdio transport's MessageSink. Writes one JSON-RPC message per line to a
// descriptor from a thread of its own, so that a client that stops reading its server's stdout
// never stalls the thread that sends: a run's supervisor sends progress and log notifications
// with the program's output while the run goes on, and must keep enforcing its deadline.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

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

  // Queues `message` as one line. Thread-safe. Never blocks for a notification; dropped after
  // Finish() or once a write has failed (the client closed its end).
  bool Send(const nlohmann::json& message, bool final) override;
  bool OpenAfterFinal() const override { return true; }

  // Writes everything queued, then stops the thread. Blocks until that is written or a write
  // fails. Idempotent.
  void Finish();

 private:
  void Run();

  const int fd_;
  const size_t max_pending_bytes_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;
  size_t pending_bytes_ = 0;  // queued, plus the line being written
  bool broken_ = false;
  bool finishing_ = false;
  std::thread thread_;  // last: started once the members it uses exist
};

}  // namespace mcpexec::mcp
