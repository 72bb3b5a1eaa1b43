// MessageSink: where the server's messages for one exchange go. A transport implements it: the
// stdio transport writes every message to stdout; Streamable HTTP answers the POST that carried
// the request; legacy SSE writes to the session's event stream.
#pragma once

#include <nlohmann/json.hpp>

namespace mcpexec::mcp {

class MessageSink {
 public:
  virtual ~MessageSink() = default;
  // Sends one JSON-RPC message to the client. `final` is true for the response that ends a
  // request; nothing more is sent to this sink for that request afterwards. Called from any
  // thread (tool calls finish on worker threads); implementations must be thread-safe and must
  // not block for long (a slow client must not stall a worker: buffer or drop and close).
  // False when the message was dropped: a notification past the budget of a client that does
  // not read, or anything after the exchange ended. For the final response, stdio's writer
  // marks the call's Step::kSerialized once the text is made, and Step::kWriting just before it
  // writes it (base/call_steps.h); when it leaves the writing to another thread, it hands the
  // call's record to it (HandOffSteps). HTTP's queue marks kSerialized only: its connection
  // writes the reply after the line.
  virtual bool Send(const nlohmann::json& message, bool final) = 0;
  // Whether messages sent after the final response still reach the client: true for a stream
  // that outlives its requests (stdio, legacy SSE), false for one request's reply (Streamable
  // HTTP), which drops them. A task keeps its creating request's sink only when it is.
  virtual bool OpenAfterFinal() const { return false; }
  // Whether notifications reach the client before the final response: false for a Streamable
  // HTTP reply in JSON, which has room for the response alone.
  virtual bool CarriesNotifications() const { return true; }
};

}  // namespace mcpexec::mcp
