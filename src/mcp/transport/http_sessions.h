// SessionTable: the MCP sessions of one HTTP server, by session id, for both HTTP transports.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mcp/server.h"
#include "mcp/transport/sse_stream.h"

namespace mcpexec::mcp::transport {

// Thread-safe. Session ids are the secrets clients hold; the table never logs them.
class SessionTable {
 public:
  enum class Kind {
    kStreamable,  // Streamable HTTP: Mcp-Session-Id; lives until DELETE, Stop or idle expiry
    kLegacy,      // legacy SSE: ?sessionId=; lives as long as its event stream
  };

  using Now = std::function<std::chrono::steady_clock::time_point()>;

  // At most `max_sessions` at once. A Streamable HTTP session unused for `idle_timeout` with no
  // reply open may be closed to make room for a new one. `now` is the clock (tests pass their own).
  SessionTable(size_t max_sessions, std::chrono::milliseconds idle_timeout,
               Now now = std::chrono::steady_clock::now);

  // Adds a session: legacy when `stream` (its event stream) is set, else Streamable HTTP. When
  // the table is full, first closes the idle sessions; false when it is still full (the caller
  // answers 503 and closes `session` itself).
  bool Add(const std::string& id, std::shared_ptr<Session> session,
           std::shared_ptr<MessageQueue> stream = nullptr);

  // The session with this id and kind (nullptr when unknown, closed, or of the other kind), and
  // for a legacy one its event stream. Marks the session used.
  std::shared_ptr<Session> Find(const std::string& id, Kind kind,
                                std::shared_ptr<MessageQueue>* stream = nullptr);

  // Remembers an open Streamable HTTP reply of session `id`, so that Remove() ends it, unless the
  // session has `max_open` replies open already: false then, nothing is tracked, and the caller
  // refuses the request. When the session is already gone, aborts `reply` at once (true).
  bool TrackReply(const std::string& id, const std::shared_ptr<MessageQueue>& reply,
                  size_t max_open = SIZE_MAX);

  // Forgets the session, aborts its open replies and closes it (cancelling its running calls).
  // False when the id is unknown.
  bool Remove(const std::string& id);

  // Removes and closes every session; returns how many there were.
  size_t CloseAll();

  size_t Size() const;
  // Open sessions of one kind.
  size_t Count(Kind kind) const;

 private:
  struct Entry {
    std::shared_ptr<Session> session;
    std::shared_ptr<MessageQueue> stream;
    std::chrono::steady_clock::time_point last_used;
    std::vector<std::weak_ptr<MessageQueue>> replies;
  };
  static void Close(Entry& entry);

  const size_t max_sessions_;
  const std::chrono::milliseconds idle_timeout_;
  const Now now_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> sessions_;
};

}  // namespace mcpexec::mcp::transport
