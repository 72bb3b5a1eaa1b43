// HTTP/1.1 responses: what a handler fills in (status, headers, a body or a stream), and the pure
// functions that turn it into bytes (status line and header fields, chunk framing). Writing to
// the socket is connection.h's job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcpexec::http {

// Where a streamed body goes. Used only on the connection's thread, during the provider's call.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // Sends `data` as the next piece of the body (one chunk). False when the connection failed (the
  // client hung up, stopped reading for longer than the write timeout, or the server is stopping):
  // the provider should then return false.
  virtual bool Write(std::string_view data) = 0;
  // Ends the body after what was written; the provider is not called again and the connection
  // may serve another request.
  virtual void Done() = 0;
};

// A response being built by a handler. Not thread-safe: it belongs to one connection thread.
struct Response {
  int status = 200;
  // Besides Content-Length, Transfer-Encoding, Connection and Keep-Alive, which the connection
  // writes itself. Names are unique (SetHeader replaces).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;    // a fixed-length body (omitted on the wire for HEAD, but still counted)
  bool close = false;  // close the connection after this response

  // A streamed body instead of `body`: called again and again on the connection's thread, each
  // call writing what it has (or waiting for it, within bounded time), until it calls Done() or
  // returns false (which ends the connection).
  std::function<bool(StreamSink&)> stream;
  // Called exactly once after a streamed response ends, or when it is never sent; `done` is true
  // when the provider reached Done(). For releasing what the provider holds.
  std::function<void(bool done)> stream_ended;

  // Sets a header, replacing one of the same name (case-insensitive).
  void SetHeader(std::string_view name, std::string value);
  // The value of header `name`, or nullptr.
  const std::string* FindHeader(std::string_view name) const;
  // A fixed-length body with its Content-Type.
  void SetContent(std::string content, std::string_view content_type);
  // A streamed body with its Content-Type (see `stream` and `stream_ended`).
  void SetStream(std::string_view content_type, std::function<bool(StreamSink&)> provider,
                 std::function<void(bool done)> ended);
};

// How the body of a response is delimited on the wire.
enum class ResponseFraming {
  kContentLength,  // Content-Length: n
  kChunked,        // Transfer-Encoding: chunked (streams to HTTP/1.1 clients)
  kUntilClose,     // the body ends when the connection closes (streams to HTTP/1.0 clients)
};

struct ResponseHeadOptions {
  ResponseFraming framing = ResponseFraming::kContentLength;
  uint64_t content_length = 0;
  bool keep_alive = true;         // false: "Connection: close"
  int request_minor_version = 1;  // an HTTP/1.0 client kept alive is told "Connection: keep-alive"
  int keep_alive_timeout_s = 0;   // > 0: announced in "Keep-Alive: timeout=N" when kept alive
};

// The status line and header section of `res`, ending with the empty line. Header fields whose
// name or value holds CR, LF or NUL are left out, so that nothing a handler sets can split the
// response. Pure.
std::string SerializeResponseHead(const Response& res, const ResponseHeadOptions& options);

// A whole response that ends its connection: `status` with {"error":"<reason>"} as its JSON
// body, and Retry-After when `retry_after_s` > 0. `reason` is plain text (no quotes or
// backslashes). Pure.
std::string ClosingErrorResponse(int status, std::string_view reason, int retry_after_s = 0);

// The reason phrase for `status` ("Not Found"); "Unknown" for codes this server never sends.
std::string_view StatusReason(int status);

// The line that starts a chunk of `size` bytes: hex size and CRLF. The chunk's data and a CRLF
// follow it; a chunk of size 0 ("0\r\n\r\n" with the empty trailer) ends the body.
std::string ChunkHeader(size_t size);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace mcpexec::http
