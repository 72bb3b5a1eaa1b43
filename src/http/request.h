// HTTP/1.1 requests as bytes: the request head (RFC 9112 sections 2-5), the body's framing
// (section 6, with its request-smuggling rules), chunked bodies (section 7) and the query string.
// Pure functions over memory: no sockets, no clocks, nothing thrown but std::bad_alloc, and every
// allocation bounded by the limits, so that each function can be unit-tested and fuzzed alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcpexec::http {

struct HeadLimits {
  size_t max_head_bytes = 16 * 1024;  // request line + header lines + the empty line; else 431
  size_t max_headers = 100;           // header lines; else 431
};

// How the body of a request is delimited (RFC 9112 6.3).
enum class BodyFraming {
  kNone,           // no Content-Length, no Transfer-Encoding: no body
  kContentLength,  // exactly content_length bytes (may be 0)
  kChunked,        // Transfer-Encoding: chunked
};

struct HeaderField {
  std::string name;   // as sent; compare case-insensitively
  std::string value;  // leading and trailing whitespace removed
};

// A parsed, validated request head. Owns its strings.
struct RequestHead {
  std::string method;     // case-sensitive token: "GET", "POST"...
  std::string target;     // the request-target as sent
  std::string path;       // its path: "/mcp" (absolute-form is reduced to its path; not decoded)
  std::string query;      // what follows '?', still percent-encoded; empty when none
  int minor_version = 1;  // HTTP/1.<minor_version>: 0 or 1
  std::vector<HeaderField> headers;  // in the order received

  BodyFraming framing = BodyFraming::kNone;
  uint64_t content_length = 0;   // with kContentLength
  bool keep_alive = true;        // the client allows another request on this connection
  bool expect_continue = false;  // "Expect: 100-continue" on an HTTP/1.1 request

  // The value of the first header named `name` (case-insensitive), nullopt when absent.
  std::optional<std::string_view> Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const { return Header(name).has_value(); }
  // True when body bytes follow the head (chunked, or a non-zero Content-Length).
  bool HasBody() const {
    return framing == BodyFraming::kChunked ||
           (framing == BodyFraming::kContentLength && content_length > 0);
  }
};

// Why a request cannot be served. `status` is the response code: 400 (malformed), 413
// (Content-Length beyond 2^63), 431 (head or header count over the limits), 501 (a transfer coding
// other than chunked), 505 (an HTTP version other than 1.0 and 1.1). The connection must close
// after answering: where the next request would start is unknown. `reason` is static text.
struct HttpError {
  int status = 400;
  std::string_view reason;
};

struct HeadParse {
  enum class State {
    kIncomplete,  // no error so far, but the head's empty line has not arrived yet
    kComplete,    // `head` is set; it used the first `consumed` bytes of the input
    kError,       // `error` is set
  };
  State state = State::kIncomplete;
  RequestHead head;
  size_t consumed = 0;
  HttpError error;
  // With kIncomplete: a `scan_from` for the next call on the same (grown) input, so that a head
  // arriving a byte at a time is scanned in linear time.
  size_t scanned = 0;
};

// Parses the request head at the start of `input` (the bytes received so far on a connection).
// Empty lines before the request line are skipped (RFC 9112 2.2). Lines must end in CRLF. Rules
// enforced: method a token; request-target in origin-form, absolute-form (http/https) or "*",
// visible ASCII only; header names tokens with no whitespace before the colon; values without
// control characters; obs-fold refused; more than one Host, or none in HTTP/1.1, refused; more
// than one Content-Length header (even with equal values) refused; Content-Length together with
// Transfer-Encoding refused; Transfer-Encoding in HTTP/1.0 refused; Transfer-Encoding other than
// exactly "chunked" refused with 501. `scan_from` is the `scanned` of an earlier kIncomplete
// result on a prefix of `input`, or 0. Thread-safe (no state).
HeadParse ParseRequestHead(std::string_view input, const HeadLimits& limits, size_t scan_from = 0);

// Decodes a chunked request body (RFC 9112 7.1) incrementally, from bytes fed in any pieces.
// Chunk extensions are ignored (their line is bounded); trailer fields are read and discarded
// (bounded). Not thread-safe; one per body.
class ChunkedDecoder {
 public:
  // `max_body_bytes` bounds the decoded body: a chunk that would exceed it is refused with 413
  // before its data is read.
  explicit ChunkedDecoder(uint64_t max_body_bytes) : max_body_bytes_(max_body_bytes) {}

  struct Step {
    enum class State { kNeedMore, kDone, kError };
    State state = State::kNeedMore;
    size_t consumed = 0;  // bytes of `input` used; with kDone the rest belongs to the next request
    HttpError error;      // with kError: 400 (malformed) or 413 (over max_body_bytes)
  };

  // Consumes `input`, appending the decoded data to `*body`. After kDone or kError, further calls
  // return the same state and consume nothing.
  Step Feed(std::string_view input, std::string* body);

 private:
  enum class Phase {  // the size-line phases first: Feed() tells them apart by order
    kSize,
    kSizeSpace,
    kExtension,
    kSizeLf,
    kData,
    kDataCr,
    kDataLf,
    kTrailerStart,
    kTrailerLine,
    kTrailerLf,
    kLastLf,
    kDone,
    kError,
  };
  Step Fail(int status, std::string_view reason, size_t consumed);
  std::optional<HttpError> SizeLineByte(char c);
  std::optional<HttpError> FramingByte(char c);

  const uint64_t max_body_bytes_;
  Phase phase_ = Phase::kSize;
  uint64_t chunk_left_ = 0;   // data bytes left in the current chunk, or its size being read
  size_t size_digits_ = 0;    // hex digits of the size line so far
  size_t line_bytes_ = 0;     // bytes of the current size or trailer line
  size_t trailer_bytes_ = 0;  // bytes of the whole trailer section
  uint64_t decoded_ = 0;
  HttpError error_;
};

// The value of query parameter `name` in `query` (the part after '?'), percent-decoded, with '+'
// read as a space (form encoding); the first one when repeated. A malformed %-escape is kept as
// it is. nullopt when absent.
std::optional<std::string> QueryParam(std::string_view query, std::string_view name);

}  // namespace mcpexec::http
