#include "http/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <optional>
#include <string_view>

#include "log/log.h"

namespace mcpexec::http {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReadChunk = 16 * 1024;
constexpr size_t kBodyReadChunk = 256 * 1024;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// A lingering close discards what the client still sends for this long, or this much, at most.
constexpr auto kLingerTime = std::chrono::milliseconds(500);
constexpr size_t kLingerBytes = 8u << 20;
// The event loop sends the answers it gives in batches of about this size.
constexpr size_t kOutBatch = 64 * 1024;

int RemainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 24 * 3600 * 1000));
}

int ToMs(std::chrono::milliseconds d) {
  return static_cast<int>(std::clamp<int64_t>(d.count(), 0, 24 * 3600 * 1000));
}

// When a transfer of `bytes` begun at `start` must be done: its timeout, as a grace for the first
// byte, plus its size at the minimum rate (none: never).
Clock::time_point TransferDeadline(Clock::time_point start, std::chrono::milliseconds grace,
                                   size_t bytes, size_t min_rate) {
  if (min_rate == 0) return Clock::time_point::max();
  const auto at_rate = std::chrono::milliseconds(static_cast<int64_t>(
      std::min<uint64_t>(bytes, uint64_t{1} << 40) * 1000 / min_rate));
  return start + grace + at_rate;
}

// Polls `fd` for `events` and `stop_fd` for readability. 1 when `fd` is ready, 0 on timeout,
// -1 on stop or error.
int PollWithStop(int fd, short events, int stop_fd, int timeout_ms) {
  pollfd fds[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
  while (true) {
    const int n = poll(fds, 2, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) return 0;
    if (fds[1].revents != 0) return -1;
    return 1;
  }
}

std::string PeerAddress(int sock) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return {};
  char text[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, text, sizeof text);
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, text,
              sizeof text);
  }
  return text;
}

// Closes a connection whose request may still be arriving (a refused body, a malformed head). A
// close with unread bytes sends RST, which can destroy the response before the client reads it:
// so half-close, then discard what comes for a short while first.
void LingeringClose(int sock, int stop_fd) {
  shutdown(sock, SHUT_WR);
  const auto deadline = Clock::now() + kLingerTime;
  char discard[16384];
  size_t total = 0;
  while (total < kLingerBytes && PollWithStop(sock, POLLIN, stop_fd, RemainingMs(deadline)) > 0) {
    const ssize_t n = recv(sock, discard, sizeof discard, MSG_DONTWAIT);
    if (n <= 0 && !(n < 0 && (errno == EINTR || errno == EAGAIN))) break;
    if (n > 0) total += static_cast<size_t>(n);
  }
  close(sock);
}

bool IsHeadRequest(const RequestHead& head) { return head.method == "HEAD"; }

}  // namespace

// One connection's request loop. Also the StreamSink of the response being streamed.
class Connection::Impl final : public StreamSink {
 public:
  Impl(int sock, int stop_fd, const ConnectionLimits& limits, Handler& handler)
      : sock_(sock),
        stop_fd_(stop_fd),
        limits_(limits),
        handler_(handler),
        peer_(PeerAddress(sock)),
        remote_(peer_),
        keep_alive_s_(static_cast<int>(std::max<int64_t>(
            1,
            std::chrono::duration_cast<std::chrono::seconds>(limits.keep_alive_timeout).count()))) {
  }

  ~Impl() override {
    if (linger_) {
      LingeringClose(sock_, stop_fd_);
    } else {
      shutdown(sock_, SHUT_RDWR);
      close(sock_);
    }
  }

  // Serves requests until the connection should end.
  void Serve() {
    while (served_ < limits_.keep_alive_max_requests) {
      if (in_.empty() &&
          PollWithStop(sock_, POLLIN, stop_fd_, ToMs(limits_.keep_alive_timeout)) <= 0) {
        return;  // idle too long, stopping, or the socket failed
      }
      if (!ServeNext()) return;
    }
  }

  Intake Progress() {
    if (!out_.empty()) {
      if (!Flush()) return Intake::kGone;
      if (!out_.empty()) return Intake::kWriting;
    }
    if (close_after_out_) return draining_ ? Drain() : Intake::kGone;
    const size_t cap = LoopBodyWanted() ? in_limit_ : limits_.head.max_head_bytes + kReadChunk;
    while (in_.size() < cap) {
      const size_t old = in_.size();
      in_.resize(old + kReadChunk);
      const ssize_t n = recv(sock_, in_.data() + old, kReadChunk, MSG_DONTWAIT);
      in_.resize(old + static_cast<size_t>(std::max<ssize_t>(n, 0)));
      if (n == 0) return Intake::kGone;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0) return Intake::kGone;
      last_read_ = Clock::now();
      if (LoopBodyWanted()) transferred_ += static_cast<size_t>(n);
      if (static_cast<size_t>(n) < kReadChunk) break;
    }
    return Advance();
  }

  std::optional<Clock::time_point> LoopDeadline() const {
    if (drain_started_) return drain_deadline_;
    if (!out_.empty()) {
      return std::min(out_progress_ + limits_.write_timeout,
                      TransferDeadline(out_start_, limits_.write_timeout, out_bytes_,
                                       limits_.min_transfer_rate));
    }
    if (LoopBodyWanted()) {
      return std::min(last_read_ + limits_.read_timeout,
                      TransferDeadline(transfer_start_, limits_.read_timeout, transferred_,
                                       limits_.min_transfer_rate));
    }
    return std::nullopt;
  }

  size_t Served() const { return served_; }

  // One request: the event loop admits the next, so that a pipelined request's body is read
  // there too.
  bool ServeReady() { return served_ < limits_.keep_alive_max_requests && ServeNext(); }

  void RefuseSlowHead() {
    if (close_after_out_) return;  // answered already
    const std::string response = ClosingErrorResponse(408, "request not received in time");
    // The event loop never waits for a client: what does not fit in the socket buffer is lost.
    (void)!send(sock_, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    handler_.Answered(408);
  }

  bool HeadStarted() const {
    return prepared_ || in_.find_first_not_of("\r\n") != std::string::npos;
  }
  bool Trusted() const { return trusted_; }
  const std::string& Remote() const { return remote_; }
  int Socket() const { return sock_; }

  bool Write(std::string_view data) override {
    if (data.empty()) return !write_failed_;  // an empty chunk would end the body
    if (write_failed_) return false;
    const bool ok = chunked_ ? WriteAll(ChunkHeader(data.size()), data, "\r\n") : WriteAll(data);
    if (!ok) write_failed_ = true;
    return ok;
  }

  void Done() override { stream_done_ = true; }

 private:
  enum class Next { kContinue, kClose, kLingeringClose };

  // A request head parsed and admitted (or answered) by the event loop, for its thread.
  struct Prepared {
    RequestHead head;
    Response res;
    Admission admission = Admission::kAnswered;
  };

  // The event loop waits for the body of an admitted request before it takes a thread.
  bool LoopBodyWanted() const {
    return prepared_ && prepared_->admission == Admission::kAdmitted &&
           prepared_->head.framing == BodyFraming::kContentLength &&
           prepared_->head.content_length <= limits_.max_loop_body_bytes &&
           in_.size() < prepared_->head.content_length;
  }

  // Event loop side: admits the heads buffered, answering in place what admission answers with a
  // fixed response and no body to skip, until one needs a thread or more bytes.
  Intake Advance() {
    while (true) {
      if (prepared_) return Settle(LoopBodyWanted() ? Intake::kWaiting : Intake::kReady);
      const HeadParse parse = ParseRequestHead(in_, limits_.head, head_scanned_);
      if (parse.state == HeadParse::State::kIncomplete) {
        head_scanned_ = parse.scanned;
        return Settle(Intake::kWaiting);
      }
      if (parse.state == HeadParse::State::kError) {
        return Settle(Intake::kReady);  // the thread refuses it
      }
      Request req;
      req.head = parse.head;
      remote_ = ClientAddress(req.head, peer_, limits_.trusted_proxies);
      in_.erase(0, parse.consumed);
      head_scanned_ = 0;
      Prepared p;
      req.remote_addr = remote_;
      req.socket = sock_;
      try {
        p.admission = handler_.Admit(req, p.res);
      } catch (const std::exception& e) {
        p.res = InternalError(req, std::move(p.res), e.what());
        p.admission = Admission::kAnswered;
      }
      p.head = std::move(req.head);
      if (p.admission == Admission::kAdmitted) trusted_ = true;
      if (p.admission == Admission::kAnswered && !p.res.stream) {
        AnswerHere(p.head, p.res);
        // Answers go out in batches (a send per batch, not per answer); a full batch waits for
        // the client to take it before more requests are read.
        if (close_after_out_ || out_.size() >= kOutBatch) {
          const Intake settled = Settle(Intake::kWaiting);
          if (settled != Intake::kWaiting) return settled;
          if (close_after_out_) return draining_ ? Drain() : Intake::kGone;
        }
        continue;
      }
      prepared_ = std::move(p);
      if (LoopBodyWanted()) {
        transfer_start_ = last_read_ = Clock::now();
        transferred_ = 0;
        in_limit_ = static_cast<size_t>(prepared_->head.content_length) + kReadChunk;
        if (prepared_->head.expect_continue) {
          continue_sent_ = true;
          Queue(kContinue);
        }
      }
    }
  }

  // Sends what is queued, then: kGone when the socket failed, kWriting while answers wait for
  // the client, else `next`.
  Intake Settle(Intake next) {
    if (!Flush()) return Intake::kGone;
    return out_.empty() ? next : Intake::kWriting;
  }

  // Event loop side: queues a fixed response.
  void AnswerHere(const RequestHead& head, const Response& res) {
    ++served_;
    // A connection that never proved a token gets a few answers: past them, a client
    // pipelining /healthz makes the loop parse and answer no more, but reconnect.
    const bool keep_alive = head.keep_alive && served_ < limits_.keep_alive_max_requests &&
                            (trusted_ || served_ < limits_.max_unproven_answers) && !res.close;
    ResponseHeadOptions options = HeadOptions(head, keep_alive);
    options.content_length = res.body.size();
    Queue(SerializeResponseHead(res, options));
    if (!IsHeadRequest(head)) Queue(res.body);
    if (!keep_alive) close_after_out_ = true;
    // Its body is never read: a lingering close, so that the answer is not lost to a reset.
    if (head.HasBody()) close_after_out_ = draining_ = true;
    handler_.Answered(res.status);
    // Built only when written: the loop answers floods of these.
    if (log::Enabled(log::Level::kDebug)) {
      log::Debug("http request",
                 {{"method", head.method}, {"path", head.path}, {"status", res.status},
                  {"remote", remote_}});
    }
  }

  // Event loop side, once the answer is sent: half-closes and discards what the client still
  // sends, until it closes, for a short while, or up to a bound (as LingeringClose).
  Intake Drain() {
    if (!drain_started_) {
      drain_started_ = true;
      shutdown(sock_, SHUT_WR);
      drain_deadline_ = Clock::now() + kLingerTime;
    }
    char discard[16384];
    while (drained_ < kLingerBytes) {
      const ssize_t n = recv(sock_, discard, sizeof discard, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Intake::kWaiting;
      if (n <= 0) return Intake::kGone;
      drained_ += static_cast<size_t>(n);
    }
    return Intake::kGone;
  }

  void Queue(std::string_view data) {
    if (out_.empty()) {
      out_start_ = out_progress_ = Clock::now();
      out_bytes_ = 0;
    }
    out_.append(data);
    out_bytes_ += data.size();
  }

  // Sends what out_ holds as far as the socket takes it, without blocking. False when the socket
  // failed (out_ is then dropped).
  bool Flush() {
    while (!out_.empty()) {
      const ssize_t n = send(sock_, out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (n <= 0) {
        out_.clear();
        return false;
      }
      out_.erase(0, static_cast<size_t>(n));
      out_progress_ = Clock::now();
    }
    return true;
  }

  ResponseHeadOptions HeadOptions(const RequestHead& head, bool keep_alive) const {
    ResponseHeadOptions options;
    options.keep_alive = keep_alive;
    options.request_minor_version = head.minor_version;
    options.keep_alive_timeout_s = keep_alive_s_;
    return options;
  }

  // Serves one request. False when the connection is finished.
  bool ServeNext() {
    const Next next = ServeOne(++served_ == limits_.keep_alive_max_requests);
    if (next == Next::kLingeringClose) linger_ = true;
    return next == Next::kContinue;
  }

  // The read timeout, the request's deadline, and the minimum rate of what was received since
  // the transfer began: a client that sends a byte just before each read timeout is still cut.
  int ReadWaitMs() const {
    const auto rate_deadline = TransferDeadline(transfer_start_, limits_.read_timeout,
                                                transferred_, limits_.min_transfer_rate);
    return std::min({ToMs(limits_.read_timeout), RemainingMs(deadline_),
                     RemainingMs(rate_deadline)});
  }

  // The transfer whose rate ReadWaitMs() checks starts now (a request, then its body).
  void StartTransfer() {
    transfer_start_ = Clock::now();
    transferred_ = 0;
  }

  // Waits (read timeout, request deadline, minimum rate, stop) and receives into `buf`. > 0
  // bytes read; 0 on EOF; -1 on timeout, stop or error (`timed_out_` tells a timeout apart).
  ssize_t Receive(char* buf, size_t size) {
    while (true) {
      const int wait = ReadWaitMs();
      const int ready = wait > 0 ? PollWithStop(sock_, POLLIN, stop_fd_, wait) : 0;
      if (ready == 0) timed_out_ = true;
      if (ready <= 0) return -1;
      const ssize_t n = recv(sock_, buf, size, MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (n > 0) transferred_ += static_cast<size_t>(n);
      return n < 0 ? -1 : n;
    }
  }

  // Appends what arrives next to in_. False on EOF, timeout, stop or error.
  bool Fill() {
    const size_t old = in_.size();
    in_.resize(old + kReadChunk);
    const ssize_t n = Receive(in_.data() + old, kReadChunk);
    in_.resize(old + static_cast<size_t>(std::max<ssize_t>(n, 0)));
    return n > 0;
  }

  // Sends the pieces in order, as one writev where the socket allows. False when the client does
  // not read for longer than the write timeout, takes the pieces slower than the minimum rate,
  // the server stops, or the peer is gone.
  bool WriteAll(std::string_view a, std::string_view b = {}, std::string_view c = {}) {
    iovec iov[3] = {{const_cast<char*>(a.data()), a.size()},
                    {const_cast<char*>(b.data()), b.size()},
                    {const_cast<char*>(c.data()), c.size()}};
    const auto deadline = TransferDeadline(Clock::now(), limits_.write_timeout,
                                           a.size() + b.size() + c.size(),
                                           limits_.min_transfer_rate);
    size_t first = 0;
    while (first < 3) {
      if (iov[first].iov_len == 0) {
        ++first;
        continue;
      }
      msghdr msg{};
      msg.msg_iov = iov + first;
      msg.msg_iovlen = 3 - first;
      const ssize_t n = sendmsg(sock_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        const int wait = std::min(ToMs(limits_.write_timeout), RemainingMs(deadline));
        if (wait > 0 && PollWithStop(sock_, POLLOUT, stop_fd_, wait) > 0) continue;
        return false;
      }
      if (n < 0) return false;
      auto sent = static_cast<size_t>(n);
      while (sent > 0 && first < 3) {
        const size_t step = std::min(sent, iov[first].iov_len);
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + step;
        iov[first].iov_len -= step;
        sent -= step;
        if (iov[first].iov_len == 0) ++first;
      }
    }
    return true;
  }

  // A response to a request that could not be parsed or was not received in time; the
  // connection closes after it.
  void SendError(int status, std::string_view reason) {
    WriteAll(ClosingErrorResponse(status, reason));
    handler_.Answered(status);
    log::Debug("http request refused",
               {{"status", status}, {"reason", reason}, {"remote", remote_}});
  }

  Next ServeOne(bool last) {
    deadline_ = Clock::now() + limits_.request_timeout;
    timed_out_ = false;
    StartTransfer();
    Request req;
    req.remote_addr = remote_;
    req.socket = sock_;
    Response res;
    std::optional<Admission> admission;
    if (prepared_) {
      req.head = std::move(prepared_->head);
      res = std::move(prepared_->res);
      admission = prepared_->admission;
      prepared_.reset();
    } else {
      std::optional<Next> refused = ReceiveHead(req.head);
      if (refused) return *refused;
    }
    body_pending_ = req.head.HasBody();
    continue_due_ = req.head.expect_continue && body_pending_ && !continue_sent_;
    continue_sent_ = false;
    req.read_body = [this, &req](size_t max_bytes, std::string* body) {
      return ReadBody(req.head, max_bytes, body);
    };

    try {
      if (!admission) admission = handler_.Admit(req, res);
      if (*admission == Admission::kAdmitted) {
        trusted_ = true;
        handler_.Handle(req, res);
      }
    } catch (const std::exception& e) {
      res = InternalError(req, std::move(res), e.what());
    } catch (...) {
      res = InternalError(req, std::move(res), "unknown exception");
    }
    const bool keep_alive = req.head.keep_alive && !last && !res.close && !body_pending_;
    const bool clean = Send(req, res, keep_alive);
    handler_.Answered(res.status);
    log::Debug("http request", {{"method", req.head.method},
                                {"path", req.head.path},
                                {"status", res.status},
                                {"remote", remote_}});
    if (body_pending_) return Next::kLingeringClose;
    if (!clean || !keep_alive) return Next::kClose;
    return Next::kContinue;
  }

  // Receives and parses the next request head into `head`. A Next when the connection ends
  // instead: the client stalled or went away, or the head is malformed (answered).
  std::optional<Next> ReceiveHead(RequestHead& head) {
    HeadParse parse;
    size_t scanned = 0;
    while (true) {
      parse = ParseRequestHead(in_, limits_.head, scanned);
      if (parse.state != HeadParse::State::kIncomplete) break;
      scanned = parse.scanned;
      if (!Fill()) {
        // A client that started a request and then stalled (slowloris) hears why it is cut off;
        // one that sent nothing, or hung up, does not.
        if (timed_out_ && in_.find_first_not_of("\r\n") != std::string::npos) {
          SendError(408, "request not received in time");
          return Next::kLingeringClose;
        }
        return Next::kClose;
      }
    }
    if (parse.state == HeadParse::State::kError) {
      SendError(parse.error.status, parse.error.reason);
      return Next::kLingeringClose;
    }
    in_.erase(0, parse.consumed);
    head_scanned_ = 0;
    head = std::move(parse.head);
    remote_ = ClientAddress(head, peer_, limits_.trusted_proxies);
    return std::nullopt;
  }

  Response InternalError(const Request& req, Response old, const char* what) {
    log::Error("http handler failed",
               {{"method", req.head.method}, {"path", req.head.path}, {"error", what}});
    if (old.stream_ended) old.stream_ended(false);
    Response res;
    res.status = 500;
    res.SetContent("{\"error\":\"internal error\"}", "application/json");
    res.close = true;
    return res;
  }

  BodyStatus ReadBody(const RequestHead& head, size_t max_bytes, std::string* body) {
    if (!body_pending_) return BodyStatus::kOk;
    if (head.framing == BodyFraming::kContentLength && head.content_length > max_bytes) {
      return BodyStatus::kTooLarge;
    }
    if (continue_due_) {
      continue_due_ = false;
      if (!WriteAll(kContinue)) return BodyStatus::kFailed;
    }
    StartTransfer();
    timed_out_ = false;
    const BodyStatus status = head.framing == BodyFraming::kChunked
                                  ? ReadChunked(max_bytes, body)
                                  : ReadLength(static_cast<size_t>(head.content_length), body);
    if (status == BodyStatus::kOk) body_pending_ = false;
    if (status == BodyStatus::kFailed && timed_out_) return BodyStatus::kTimedOut;
    return status;
  }

  BodyStatus ReadLength(size_t length, std::string* body) {
    const size_t buffered = std::min(length, in_.size());
    body->append(in_, 0, buffered);
    in_.erase(0, buffered);
    size_t left = length - buffered;
    // Grows with what arrives, not with what the client announced.
    while (left > 0) {
      const size_t old = body->size();
      const size_t want = std::min(left, kBodyReadChunk);
      body->resize(old + want);
      const ssize_t n = Receive(body->data() + old, want);
      body->resize(old + static_cast<size_t>(std::max<ssize_t>(n, 0)));
      if (n <= 0) return BodyStatus::kFailed;
      left -= static_cast<size_t>(n);
    }
    return BodyStatus::kOk;
  }

  BodyStatus ReadChunked(size_t max_bytes, std::string* body) {
    ChunkedDecoder decoder(max_bytes);
    while (true) {
      const ChunkedDecoder::Step step = decoder.Feed(in_, body);
      in_.erase(0, step.consumed);
      switch (step.state) {
        case ChunkedDecoder::Step::State::kDone:
          return BodyStatus::kOk;
        case ChunkedDecoder::Step::State::kError:
          return step.error.status == 413 ? BodyStatus::kTooLarge : BodyStatus::kFailed;
        case ChunkedDecoder::Step::State::kNeedMore:
          if (!Fill()) return BodyStatus::kFailed;
          break;
      }
    }
  }

  // Writes the response. True when the connection is still usable afterwards.
  bool Send(const Request& req, Response& res, bool keep_alive) {
    ResponseHeadOptions options = HeadOptions(req.head, keep_alive);
    if (!res.stream) {
      options.content_length = res.body.size();
      const std::string head = SerializeResponseHead(res, options);
      return WriteAll(head, IsHeadRequest(req.head) ? std::string_view() : res.body);
    }
    // An HTTP/1.0 client knows no chunked coding: its stream ends with the connection.
    chunked_ = req.head.minor_version >= 1;
    options.framing = chunked_ ? ResponseFraming::kChunked : ResponseFraming::kUntilClose;
    if (!chunked_) options.keep_alive = false;
    stream_done_ = false;
    write_failed_ = false;
    bool ok = WriteAll(SerializeResponseHead(res, options));
    try {
      while (ok && !stream_done_) ok = res.stream(*this) && !write_failed_;
    } catch (const std::exception& e) {
      log::Error("http stream failed", {{"path", req.head.path}, {"error", e.what()}});
      ok = false;
    }
    if (ok && chunked_) ok = WriteAll(kLastChunk);
    if (res.stream_ended) res.stream_ended(stream_done_);
    return ok && chunked_;
  }

  const int sock_;
  const int stop_fd_;
  const ConnectionLimits& limits_;
  Handler& handler_;
  const std::string peer_;  // the socket's peer
  std::string remote_;      // the client's address: peer_, or whom a trusted proxy forwarded
  const int keep_alive_s_;
  std::string in_;  // received and not yet used: the next head, or body bytes
  Clock::time_point deadline_ = Clock::now();
  Clock::time_point transfer_start_ = Clock::now();  // of the request, then of its body
  size_t transferred_ = 0;                           // bytes received since transfer_start_
  bool timed_out_ = false;
  bool body_pending_ = false;  // the current request's body has not been read (all of it)
  bool continue_due_ = false;  // the client waits for "100 Continue" before sending it
  bool chunked_ = true;
  bool stream_done_ = false;
  bool write_failed_ = false;
  size_t head_scanned_ = 0;  // of in_, by an incomplete ParseRequestHead
  size_t served_ = 0;        // requests served (or refused) on this connection
  bool trusted_ = false;
  bool linger_ = false;  // close with a lingering close: a request was left unread
  // Event loop side.
  std::optional<Prepared> prepared_;  // the next request, admitted (or answered) by the loop
  bool continue_sent_ = false;        // the loop sent prepared_'s "100 Continue"
  size_t in_limit_ = 0;               // what the loop buffers of an admitted body and beyond
  Clock::time_point last_read_ = Clock::now();
  std::string out_;                   // answers the loop has yet to send
  Clock::time_point out_start_ = Clock::now();     // out_ became non-empty
  Clock::time_point out_progress_ = Clock::now();  // out_ last shrank
  size_t out_bytes_ = 0;                           // queued since out_start_
  bool close_after_out_ = false;      // the connection ends once out_ is sent
  bool draining_ = false;             // ... with a lingering close (Drain)
  bool drain_started_ = false;
  Clock::time_point drain_deadline_;
  size_t drained_ = 0;
};

Connection::Connection(int sock, int stop_fd, const ConnectionLimits& limits, Handler& handler) {
  // Responses go out in several writes (headers, then each event): without TCP_NODELAY, Nagle
  // holds the second one back until the client's delayed ACK, ~40 ms per reply.
  const int one = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  impl_ = std::make_unique<Impl>(sock, stop_fd, limits, handler);
}

Connection::~Connection() = default;

void Connection::ServeUntilClosed() { impl_->Serve(); }
Connection::Intake Connection::Progress() { return impl_->Progress(); }
std::optional<std::chrono::steady_clock::time_point> Connection::LoopDeadline() const {
  return impl_->LoopDeadline();
}
size_t Connection::Served() const { return impl_->Served(); }
bool Connection::ServeReady() { return impl_->ServeReady(); }
void Connection::RefuseSlowHead() { impl_->RefuseSlowHead(); }
bool Connection::HeadStarted() const { return impl_->HeadStarted(); }
bool Connection::Trusted() const { return impl_->Trusted(); }
const std::string& Connection::Remote() const { return impl_->Remote(); }
int Connection::Socket() const { return impl_->Socket(); }

void ServeConnection(int sock, int stop_fd, const ConnectionLimits& limits, Handler& handler) {
  Connection(sock, stop_fd, limits, handler).ServeUntilClosed();
}

WaitResult WaitForMessages(int queue_fd, int sock, int stop_fd, std::chrono::milliseconds timeout) {
  pollfd fds[3] = {{stop_fd, POLLIN, 0}, {queue_fd, POLLIN, 0}, {sock, POLLRDHUP, 0}};
  const nfds_t count = sock >= 0 ? 3 : 2;
  const auto deadline = Clock::now() + timeout;
  while (true) {
    const int n = poll(fds, count, RemainingMs(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return WaitResult::kStopped;
    if (n == 0) return WaitResult::kTimeout;
    if (fds[0].revents != 0) return WaitResult::kStopped;
    // A hang-up ends the wait even when messages are pending: nobody is left to read them.
    if (count == 3 && (fds[2].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      return WaitResult::kPeerClosed;
    }
    if (fds[1].revents != 0) return WaitResult::kReady;
  }
}

}  // namespace mcpexec::http
