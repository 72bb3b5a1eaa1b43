// The HTTP/1.1 request side: the head parser, the chunked decoder and query parameters as pure
// functions, then the same bytes as what a client sent on a connection (ServeConnection over a
// socketpair, with a scripted handler that admits, refuses, reads bodies and streams). The
// client half-closes after its bytes and every timeout is a few milliseconds, so that no input
// can stall the fuzzer.
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "http/connection.h"
#include "http/request.h"

namespace {

using namespace mcpexec::http;
using namespace std::chrono_literals;

class ScriptedHandler : public Handler {
 public:
  Admission Admit(const Request& req, Response& res) override {
    if (req.head.path == "/refuse") {
      res.status = 403;
      res.close = true;
      res.SetContent("{\"error\":\"forbidden\"}", "application/json");
      return Admission::kAnswered;
    }
    if (req.head.path == "/healthz") {
      res.SetContent("ok", "text/plain");
      return Admission::kAnswered;
    }
    return Admission::kAdmitted;
  }
  void Handle(Request& req, Response& res) override {
    if (req.head.path == "/throw") throw std::runtime_error("handler failed");
    if (req.head.path == "/unread") {  // leaves the body unread: a lingering close
      res.SetContent("unread", "text/plain");
      return;
    }
    if (req.head.path == "/stream") {
      auto left = std::make_shared<int>(3);
      res.SetStream(
          "text/event-stream",
          [left](StreamSink& sink) {
            if ((*left)-- <= 0) {
              sink.Done();
              return true;
            }
            return sink.Write("data: x\n\n");
          },
          [](bool) {});
      return;
    }
    std::string body;
    switch (req.ReadBody(req.head.path == "/small" ? 16 : 4096, &body)) {
      case BodyStatus::kOk:
        res.SetContent(body, "application/octet-stream");
        break;
      case BodyStatus::kTooLarge:
        res.status = 413;
        res.close = true;
        break;
      case BodyStatus::kFailed:
        res.status = 400;
        res.close = true;
        break;
      case BodyStatus::kTimedOut:
        res.status = 408;
        res.close = true;
        break;
    }
    if (auto session = QueryParam(req.head.query, "sessionId")) res.SetHeader("X-Session", *session);
  }
};

ConnectionLimits TinyLimits() {
  ConnectionLimits limits;
  limits.keep_alive_timeout = 20ms;
  limits.untrusted_idle_timeout = 20ms;
  limits.read_timeout = 20ms;
  limits.request_timeout = 50ms;
  limits.write_timeout = 20ms;
  limits.keep_alive_max_requests = 64;
  limits.head.max_head_bytes = 2048;
  limits.head.max_headers = 32;
  return limits;
}

void PureParsers(std::string_view input) {
  HeadParse parse = ParseRequestHead(input, HeadLimits{});
  // A head arriving in two pieces must parse as it does whole.
  if (input.size() > 1) {
    const size_t cut = input.size() / 2;
    HeadParse first = ParseRequestHead(input.substr(0, cut), HeadLimits{});
    if (first.state == HeadParse::State::kIncomplete) {
      HeadParse second = ParseRequestHead(input, HeadLimits{}, first.scanned);
      if (second.state != parse.state || second.consumed != parse.consumed) abort();
    }
  }
  if (parse.state == HeadParse::State::kComplete) {
    (void)QueryParam(parse.head.query, "sessionId");
    (void)parse.head.Header("content-type");
  }
  // The whole input as a chunked body, fed whole and fed in 7-byte pieces: same outcome.
  ChunkedDecoder whole(1024);
  std::string whole_body;
  const auto whole_step = whole.Feed(input, &whole_body);
  ChunkedDecoder pieces(1024);
  std::string pieces_body;
  ChunkedDecoder::Step step;
  size_t used = 0;
  for (size_t at = 0; at < input.size() && step.state == ChunkedDecoder::Step::State::kNeedMore;
       at += 7) {
    step = pieces.Feed(input.substr(at, 7), &pieces_body);
    used += step.consumed;
  }
  if (whole_step.state != step.state) abort();
  if (whole_step.state == ChunkedDecoder::Step::State::kDone &&
      (whole_body != pieces_body || whole_step.consumed != used)) {
    abort();
  }
}

void ServeBytes(std::string_view input) {
  static ScriptedHandler handler;
  static const ConnectionLimits limits = TinyLimits();
  static const int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  int fds[2];
  if (stop_fd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) abort();
  // The socket buffers hold the fuzzer's inputs and the answers (-max_len stays far below).
  const int buf = 1 << 20;
  setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  size_t done = 0;
  while (done < input.size()) {
    const ssize_t n = send(fds[0], input.data() + done, input.size() - done, MSG_NOSIGNAL);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  shutdown(fds[0], SHUT_WR);
  ServeConnection(fds[1], stop_fd, limits, handler);
  close(fds[0]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  PureParsers(input);
  ServeBytes(input);
  return 0;
}
