// The hand-off between the server's threads and an HTTP response: a MessageQueue collects what
// the server sends for one request (Streamable HTTP) or one event stream (legacy SSE), and the
// connection thread that owns the response drains it. Sending never touches the network, so a
// tool call finishing on a worker thread never waits for a slow client.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "mcp/message_sink.h"

namespace mcpexec::mcp::transport {

// A thread-safe queue of serialized JSON-RPC messages with an eventfd that is readable while
// something is waiting to be taken (so a reader can poll it together with its socket).
class MessageQueue {
 public:
  enum class Kind {
    kNotification,   // droppable: over the buffer budget it is discarded (progress only)
    kResponse,       // never dropped
    kFinalResponse,  // never dropped; ends the queue: later pushes are ignored
  };

  // `max_pending_bytes` bounds what notifications may pile up while the client is not reading.
  // `max_queued_bytes` bounds everything pending: a response that would pass it (unless the
  // queue is empty) aborts the queue instead, so a client that stops reading a stream that never
  // ends (legacy SSE) loses the stream, and the server keeps its memory.
  static Result<std::shared_ptr<MessageQueue>> Create(size_t max_pending_bytes,
                                                      size_t max_queued_bytes = SIZE_MAX);

  // Adds a message. False when it was dropped (over budget, or after the final response, or
  // after Abort) or, over `max_queued_bytes`, it aborted the queue. Thread-safe; never blocks
  // on I/O.
  bool Push(std::string message, Kind kind);
  // Abort() was caused by a reader too slow for `max_queued_bytes`.
  bool Overflowed() const;
  // Ends the queue without a final response (the session went away). Thread-safe.
  void Abort();

  struct Batch {
    std::vector<std::string> messages;
    bool final = false;    // the last of `messages` is the final response
    bool aborted = false;  // Abort() was called; nothing more will come
  };
  // Takes everything pending and clears the eventfd. Never blocks.
  Batch Take();
  // Takes the final response when it is all the queue holds (before any Take: a request
  // answered at once, with nothing before it) and `wanted` accepts it; takes nothing and
  // returns nullopt otherwise. `wanted` runs under the queue's lock. Never blocks.
  std::optional<std::string> TakeLoneFinal(const std::function<bool(std::string_view)>& wanted);

  // Readable (POLLIN) while Take() would return something new. Owned by the queue.
  int WaitFd() const { return event_.Get(); }

 private:
  MessageQueue(UniqueFd event, size_t max_pending_bytes, size_t max_queued_bytes);
  void Signal();

  const UniqueFd event_;
  const size_t max_pending_bytes_;
  const size_t max_queued_bytes_;
  mutable std::mutex mu_;
  bool overflowed_ = false;
  std::vector<std::string> pending_;
  size_t pending_bytes_ = 0;
  bool final_pushed_ = false;
  bool final_taken_ = false;
  bool aborted_ = false;
};

// Where a MessageSink puts what it is given.
enum class SinkMode {
  kRequestStream,  // Streamable HTTP, SSE reply: notifications and the final response
  kRequestJson,    // Streamable HTTP, JSON reply: the final response only
  kSessionStream,  // legacy SSE: every message of every request of the session; never ends
};

// A MessageSink that serializes each message into a MessageQueue.
class QueueSink : public MessageSink {
 public:
  QueueSink(std::shared_ptr<MessageQueue> queue, SinkMode mode)
      : queue_(std::move(queue)), mode_(mode) {}
  bool Send(const nlohmann::json& message, bool final) override;
  bool OpenAfterFinal() const override { return mode_ == SinkMode::kSessionStream; }
  bool CarriesNotifications() const override { return mode_ != SinkMode::kRequestJson; }

 private:
  const std::shared_ptr<MessageQueue> queue_;
  const SinkMode mode_;
};

// One SSE event: "event: <name>\n" then one "data: " line per line of `data`, then a blank line.
std::string SseEvent(std::string_view name, std::string_view data);
// An SSE comment: clients ignore it; it keeps proxies from closing an idle stream and tells the
// server early that the client is gone.
inline constexpr std::string_view kSseKeepAlive = ": keep-alive\n\n";

}  // namespace mcpexec::mcp::transport
