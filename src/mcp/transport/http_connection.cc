#include "mcp/transport/http_connection.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "log/log.h"

namespace mcpexec::mcp::http {
namespace {

using Clock = std::chrono::steady_clock;

// Per connection thread: what handlers may ask about their connection.
struct ConnectionState {
  int sock = -1;
  bool close_after_response = false;
};
thread_local ConnectionState* tls_connection = nullptr;
// Set while the accept thread runs a connection it has no room for (see Threads::enqueue).
thread_local bool tls_reject = false;

int RemainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 24 * 3600 * 1000));
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

void AddressOf(const sockaddr_storage& addr, std::string& ip, int& port) {
  char host[NI_MAXHOST] = "";
  char serv[NI_MAXSERV] = "";
  const socklen_t len = addr.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, serv,
                  sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host;
    port = std::atoi(serv);
  }
}

// httplib::Stream over a connected socket: buffered reads with a per-read timeout and a deadline
// for the whole request, writes with a timeout and MSG_NOSIGNAL; every wait also ends on stop.
class SocketStream final : public httplib::Stream {
 public:
  SocketStream(int sock, int stop_fd, const ConnectionLimits& limits)
      : sock_(sock), stop_fd_(stop_fd), limits_(limits) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      AddressOf(addr, remote_ip_, remote_port_);
    }
    len = sizeof addr;
    if (getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      AddressOf(addr, local_ip_, local_port_);
    }
  }

  // Starts the clock of one request: reads fail once it has taken longer than request_timeout.
  void StartRequest() {
    deadline_ = Clock::now() + limits_.request_timeout;
    read_failed_ = false;
  }
  // A read of the current request timed out, failed or met EOF: httplib may still answer
  // (400), but the connection is not reusable.
  bool ReadFailed() const { return read_failed_; }
  bool HasBuffered() const { return begin_ < end_; }

  bool is_readable() const override {
    return HasBuffered() || PollWithStop(sock_, POLLIN, stop_fd_, ReadWaitMs()) > 0;
  }

  bool is_writable() const override {
    return PollWithStop(sock_, POLLOUT, stop_fd_, static_cast<int>(limits_.write_timeout.count())) >
           0;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (!HasBuffered()) {
      if (size >= sizeof buffer_) return Receive(ptr, size);
      const ssize_t n = Receive(buffer_, sizeof buffer_);
      if (n <= 0) return n;
      begin_ = 0;
      end_ = static_cast<size_t>(n);
    }
    const size_t n = std::min(size, end_ - begin_);
    std::memcpy(ptr, buffer_ + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    size_t done = 0;
    while (done < size) {
      const ssize_t n = send(sock_, ptr + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (PollWithStop(sock_, POLLOUT, stop_fd_,
                         static_cast<int>(limits_.write_timeout.count())) > 0) {
          continue;
        }
      }
      return -1;  // timed out (the client does not read), stopped, or the peer is gone
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = remote_ip_;
    port = remote_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = local_ip_;
    port = local_port_;
  }
  socket_t socket() const override { return sock_; }

 private:
  int ReadWaitMs() const {
    return std::min(static_cast<int>(limits_.read_timeout.count()), RemainingMs(deadline_));
  }

  ssize_t Receive(char* ptr, size_t size) {
    while (true) {
      const int wait = ReadWaitMs();
      if (wait <= 0 || PollWithStop(sock_, POLLIN, stop_fd_, wait) <= 0) {
        read_failed_ = true;
        return -1;
      }
      const ssize_t n = recv(sock_, ptr, size, MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (n <= 0) read_failed_ = true;
      return n;
    }
  }

  const int sock_;
  const int stop_fd_;
  const ConnectionLimits& limits_;
  Clock::time_point deadline_ = Clock::now();
  bool read_failed_ = false;
  std::string remote_ip_, local_ip_;
  int remote_port_ = -1, local_port_ = -1;
  char buffer_[8192];
  size_t begin_ = 0, end_ = 0;
};

// Closes a connection whose request body may still be arriving (an early 413, 401...). A close
// with unread bytes sends RST, which can destroy the response before the client reads it: so
// half-close, then discard what comes for a short while first.
void LingeringClose(int sock, int stop_fd) {
  shutdown(sock, SHUT_WR);
  const auto deadline = Clock::now() + std::chrono::milliseconds(500);
  char discard[16384];
  size_t total = 0;
  while (total < (8u << 20) && PollWithStop(sock, POLLIN, stop_fd, RemainingMs(deadline)) > 0) {
    const ssize_t n = recv(sock, discard, sizeof discard, MSG_DONTWAIT);
    if (n <= 0 && !(n < 0 && (errno == EINTR || errno == EAGAIN))) break;
    if (n > 0) total += static_cast<size_t>(n);
  }
  close(sock);
}

}  // namespace

// A thread per connection, up to the limit; past it the accept thread answers 503 itself.
// Threads are joined when they are done (reaped on the next accept) or at shutdown.
class ConnectionServer::Threads final : public httplib::TaskQueue {
 public:
  explicit Threads(ConnectionServer& server) : server_(server) {}
  ~Threads() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock lock(mu_);
    Reap();
    bool spawned = false;
    if (workers_.size() < server_.limits_.max_connections) {
      auto done = std::make_shared<std::atomic<bool>>(false);
      try {
        workers_.push_back({std::thread([fn, done] {
                              fn();
                              done->store(true);
                            }),
                            done});
        spawned = true;
      } catch (const std::system_error& e) {
        log::Error("cannot start a connection thread", {{"error", e.what()}});
      }
    }
    lock.unlock();
    if (!spawned) {
      // fn is process_and_close_socket(sock): with the flag set it answers 503 without reading.
      tls_reject = true;
      fn();
      tls_reject = false;
    }
  }

  void shutdown() override {
    std::list<Worker> workers;
    {
      std::lock_guard lock(mu_);
      workers.swap(workers_);
    }
    for (Worker& w : workers) {
      if (w.thread.joinable()) w.thread.join();
    }
  }

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  void Reap() {
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
  }

  ConnectionServer& server_;
  std::mutex mu_;
  std::list<Worker> workers_;
};

ConnectionServer::ConnectionServer(ConnectionLimits limits, int stop_fd)
    : limits_(limits), stop_fd_(stop_fd) {
  new_task_queue = [this] { return new Threads(*this); };
}

bool ConnectionServer::SetBacklog(int backlog) {
  // listen() on a listening socket only updates its backlog (Linux).
  return svr_sock_ != INVALID_SOCKET && ::listen(svr_sock_, backlog) == 0;
}

int ConnectionServer::CurrentSocket() { return tls_connection ? tls_connection->sock : -1; }

void ConnectionServer::CloseAfterResponse() {
  if (tls_connection) tls_connection->close_after_response = true;
}

void ConnectionServer::Reject(int sock) {
  // One log line per 10 s of refusals at most: a flood must not flood the log too.
  const uint64_t refused = refused_.fetch_add(1) + 1;
  const int64_t now_s =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
  int64_t last = last_refusal_log_s_.load();
  if (now_s - last >= 10 && last_refusal_log_s_.compare_exchange_strong(last, now_s)) {
    log::Warn("too many connections: refusing new ones with 503",
              {{"max_connections", limits_.max_connections}, {"refused_so_far", refused}});
  }
  static constexpr std::string_view kBody = "{\"error\":\"too many connections\"}";
  const std::string response =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json"
      "\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
      std::to_string(kBody.size()) + "\r\n\r\n" + std::string(kBody);
  // Never block the accept thread: what does not fit in the socket buffer is lost.
  (void)!send(sock, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(sock, SHUT_WR);
  // Closing with unread request bytes would send RST, which can destroy the 503 in flight.
  char drain[4096];
  for (int i = 0; i < 16 && recv(sock, drain, sizeof drain, MSG_DONTWAIT) > 0; ++i) {
  }
  close(sock);
}

bool ConnectionServer::process_and_close_socket(socket_t sock) {
  if (tls_reject) {
    Reject(sock);
    return false;
  }
  // Responses go out in several writes (headers, then each event): without TCP_NODELAY, Nagle
  // holds the second one back until the client's delayed ACK, ~40 ms per reply.
  const int one = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ConnectionState state;
  state.sock = sock;
  tls_connection = &state;
  SocketStream stream(sock, stop_fd_, limits_);
  // Compression would buffer event streams, and a loopback server gains nothing from it.
  const std::function<void(httplib::Request&)> setup = [](httplib::Request& req) {
    req.headers.erase("Accept-Encoding");
  };
  bool ok = true;
  for (size_t served = 0; served < limits_.keep_alive_max_requests; ++served) {
    if (!stream.HasBuffered() &&
        PollWithStop(sock, POLLIN, stop_fd_,
                     static_cast<int>(limits_.keep_alive_timeout.count())) <= 0) {
      break;  // idle too long, stopping, or the socket failed
    }
    stream.StartRequest();
    state.close_after_response = false;
    bool connection_closed = false;
    const bool last = served + 1 == limits_.keep_alive_max_requests;
    ok = process_request(stream, last, connection_closed, setup);
    if (!ok || connection_closed || state.close_after_response || stream.ReadFailed()) break;
  }
  tls_connection = nullptr;
  if (state.close_after_response) {
    LingeringClose(sock, stop_fd_);
  } else {
    shutdown(sock, SHUT_RDWR);
    close(sock);
  }
  return ok;
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

}  // namespace mcpexec::mcp::http
