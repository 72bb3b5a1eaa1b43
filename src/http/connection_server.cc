// ConnectionServer: the listening socket and the event loop that holds idle connections.
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "http/connection.h"
#include "http/peer_table.h"
#include "log/log.h"

namespace mcpexec::http {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kAcceptsPerWake = 64;  // then the loop serves its other events
constexpr auto kSweepInterval = std::chrono::milliseconds(100);
constexpr auto kAcceptBackoff = std::chrono::milliseconds(50);

int RemainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 24 * 3600 * 1000));
}

// Answers 503 without blocking, for a connection refused before any of its requests is read.
// The caller closes the socket.
void Refuse(int sock) {
  static const std::string kResponse = ClosingErrorResponse(503, "too many connections", 1);
  (void)!send(sock, kResponse.data(), kResponse.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(sock, SHUT_WR);
  // Closing with unread request bytes would send RST, which can destroy the 503 in flight.
  char drain[4096];
  for (int i = 0; i < 16 && recv(sock, drain, sizeof drain, MSG_DONTWAIT) > 0; ++i) {
  }
}

// A thread per request being served, up to the limit. Finished threads are joined on the next
// spawn or at shutdown.
class Threads {
 public:
  explicit Threads(size_t max) : max_(max) {}
  ~Threads() { JoinAll(); }

  // Runs fn on a new thread. False when the limit is reached or no thread can be started. fn
  // may call its argument to give its slot back before it returns: a thread that hands its
  // connection back to the loop must free the slot first, or the connection's next request,
  // read at once, finds every slot taken (with a limit of 1, always a race).
  bool Spawn(std::function<void(const std::function<void()>& release)> fn) {
    std::lock_guard lock(mu_);
    Reap();
    if (workers_.size() >= max_) return false;
    auto done = std::make_shared<std::atomic<bool>>(false);
    try {
      workers_.push_back({std::thread([fn = std::move(fn), done] {
                            fn([&done] { done->store(true); });
                            done->store(true);
                          }),
                          done});
    } catch (const std::system_error& e) {
      log::Error("cannot start a connection thread", {{"error", e.what()}});
      return false;
    }
    return true;
  }

  void JoinAll() {
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

  const size_t max_;
  std::mutex mu_;
  std::list<Worker> workers_;
};

}  // namespace

// The event loop: accepts, reads request heads of idle connections without blocking, enforces
// their deadlines and the caps, and hands a connection with a whole head to a thread, which
// gives it back once its requests are served and it is idle again.
class ConnectionServer::Loop {
 public:
  Loop(const ConnectionLimits& limits, int stop_fd, Handler& handler, int listen_fd)
      : limits_(limits),
        stop_fd_(stop_fd),
        handler_(handler),
        listen_fd_(listen_fd),
        threads_(limits.max_connections) {}

  ~Loop() {
    idle_.clear();
    threads_.JoinAll();
  }

  Result<void> Init() {
    epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
    wake_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!epoll_.Valid() || !wake_.Valid()) {
      return Errno(ErrorCode::kResourceExhausted, "epoll_create1/eventfd");
    }
    for (const int fd : {stop_fd_, listen_fd_, wake_.Get()}) {
      if (!Watch(fd, EPOLL_CTL_ADD, EPOLLIN)) return Errno(ErrorCode::kInternal, "epoll_ctl");
    }
    return Ok();
  }

  void Run() {
    std::vector<epoll_event> events(256);
    auto next_sweep = Clock::now() + kSweepInterval;
    bool stop = false;
    while (!stop) {
      const bool timed = !idle_.empty() || accept_paused_;
      const int n = epoll_wait(epoll_.Get(), events.data(), static_cast<int>(events.size()),
                               timed ? RemainingMs(next_sweep) : -1);
      if (n < 0 && errno != EINTR) {
        log::Error("http event loop: epoll_wait failed", {{"errno", strerrorname_np(errno)}});
        break;
      }
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == stop_fd_) {
          stop = true;
        } else if (fd == listen_fd_) {
          AcceptSome();
        } else if (fd == wake_.Get()) {
          TakeReturned();
        } else {
          OnEvent(fd);
        }
      }
      if (Clock::now() >= next_sweep) {
        Sweep();
        next_sweep = Clock::now() + kSweepInterval;
      }
    }
    {
      std::lock_guard lock(returned_mu_);
      stopping_ = true;
      returned_.clear();
    }
    idle_.clear();
  }

  void JoinThreads() { threads_.JoinAll(); }

 private:
  // A connection and its slot among its peer's: destroying it closes the connection.
  struct Tracked {
    std::unique_ptr<Connection> conn;
    std::optional<PeerTable::Slot> slot;
  };
  struct Idle {
    std::shared_ptr<Tracked> tracked;
    Clock::time_point since;       // idle since (accepted, or given back after a request)
    Clock::time_point last_byte;   // of the head being received
    Clock::time_point head_start;  // when its first byte arrived
    bool head_started = false;
    bool writing = false;  // watched for EPOLLOUT: answers wait for the client to take them
    size_t served = 0;     // the connection's count when `since` was set
    bool unproven = false;                  // in unproven_, at unproven_at
    std::list<int>::iterator unproven_at;
    std::string peer;                       // its address, as counted in peers_
    std::list<int>::iterator peer_at;       // in by_peer_[peer]
  };

  bool Watch(int fd, int op, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    return epoll_ctl(epoll_.Get(), op, fd, &ev) == 0;
  }

  void AcceptSome() {
    for (int i = 0; i < kAcceptsPerWake; ++i) {
      const int sock = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (sock >= 0) {
        Admit(sock);
        continue;
      }
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      if (err == EINTR || err == ECONNABORTED) continue;
      // Out of descriptors (or memory): an idle connection gives its descriptor up; with none,
      // the pending connection stays queued and accepting pauses instead of spinning on it.
      if (err == EMFILE || err == ENFILE) {
        if (EvictOne(err)) continue;
      }
      if (auto held = accept_error_log_.Allow()) {
        log::Error("http accept failed", {{"errno", strerrorname_np(err)}, {"held_back", *held}});
      }
      Watch(listen_fd_, EPOLL_CTL_MOD, 0);
      accept_paused_ = true;
      accept_resume_ = Clock::now() + kAcceptBackoff;
      return;
    }
  }

  void Admit(int sock) {
    auto conn = std::make_unique<Connection>(sock, stop_fd_, limits_, handler_);
    // A trusted proxy's connections are counted under their clients' addresses once their first
    // request names one (Rekey), not against the proxy's.
    const size_t cap = limits_.trusted_proxies.Contains(conn->Remote())
                           ? SIZE_MAX
                           : limits_.max_connections_per_peer;
    std::optional<PeerTable::Slot> slot = peers_.Acquire(conn->Remote(), cap);
    // The newcomer may be the legitimate client of an address a flood comes from too: the
    // address's oldest waiting connection makes room for it.
    if (!slot && EvictOldestOf(conn->Remote())) {
      if (auto again = peers_.Acquire(conn->Remote(), limits_.max_connections_per_peer)) {
        slot.emplace(std::move(*again));
      }
    }
    if (!slot) {
      if (auto held = peer_refusal_log_.Allow()) {
        log::Warn("too many connections from one address, all being served: refusing with 503",
                  {{"remote", conn->Remote()},
                   {"max_connections_per_peer", limits_.max_connections_per_peer},
                   {"held_back", *held}});
      }
      Refuse(conn->Socket());
      handler_.Answered(503);
      return;
    }
    if (unproven_.size() >= limits_.max_unproven_connections) EvictUnproven();
    AddIdle(std::make_shared<Tracked>(Tracked{std::move(conn), std::move(*slot)}));
  }

  // False when it could not be watched (it is closed).
  bool AddIdle(std::shared_ptr<Tracked> tracked) {
    if (idle_.size() >= limits_.max_idle_connections) EvictOne();
    const int fd = tracked->conn->Socket();
    if (!Watch(fd, EPOLL_CTL_ADD, EPOLLIN | EPOLLRDHUP)) {
      log::Error("http event loop: cannot watch a connection", {{"errno", strerrorname_np(errno)}});
      return false;  // closed with `tracked`
    }
    const auto now = Clock::now();
    Idle& idle = idle_[fd];
    idle.tracked = std::move(tracked);
    idle.since = idle.last_byte = idle.head_start = now;
    idle.head_started = idle.tracked->conn->HeadStarted();
    idle.served = idle.tracked->conn->Served();
    idle.peer = idle.tracked->conn->Remote();
    std::list<int>& of_peer = by_peer_[idle.peer];
    idle.peer_at = of_peer.insert(of_peer.end(), fd);
    if (!idle.tracked->conn->Trusted()) {
      idle.unproven = true;
      idle.unproven_at = unproven_.insert(unproven_.end(), fd);
    }
    return true;
  }

  void Drop(std::unordered_map<int, Idle>::iterator it) {
    Watch(it->first, EPOLL_CTL_DEL, 0);
    Idle& idle = it->second;
    Proven(idle);
    if (auto peer = by_peer_.find(idle.peer); peer != by_peer_.end()) {
      peer->second.erase(idle.peer_at);
      if (peer->second.empty()) by_peer_.erase(peer);
    }
    idle_.erase(it);
  }

  // Takes a connection off the unproven list (it had a request admitted, or it goes).
  void Proven(Idle& idle) {
    if (!idle.unproven) return;
    unproven_.erase(idle.unproven_at);
    idle.unproven = false;
  }

  // Watches for what the connection waits for: its client's bytes, or room for its answers.
  void SetWriting(std::unordered_map<int, Idle>::iterator it, bool writing) {
    if (it->second.writing == writing) return;
    it->second.writing = writing;
    // No EPOLLRDHUP while writing: nothing is read then, so a half-close would wake the loop
    // again and again; a failed send tells a client that is gone.
    Watch(it->first, EPOLL_CTL_MOD, writing ? EPOLLOUT : (EPOLLIN | EPOLLRDHUP));
  }

  void OnEvent(int fd) {
    auto it = idle_.find(fd);
    if (it == idle_.end()) return;
    Idle& idle = it->second;
    const Connection::Intake intake = idle.tracked->conn->Progress();
    if (intake != Connection::Intake::kGone && idle.tracked->conn->Remote() != idle.peer) {
      OnRekeyed(fd, intake);
      return;
    }
    const auto now = Clock::now();
    if (idle.tracked->conn->Trusted()) Proven(idle);
    if (idle.tracked->conn->Served() != idle.served) {
      // It answered requests in the loop: idle (or at its next head) from now.
      idle.served = idle.tracked->conn->Served();
      idle.since = idle.last_byte = idle.head_start = now;
      idle.head_started = false;
    }
    switch (intake) {
      case Connection::Intake::kGone:
        Drop(it);
        return;
      case Connection::Intake::kWriting:
        SetWriting(it, true);
        return;
      case Connection::Intake::kWaiting:
        SetWriting(it, false);
        idle.last_byte = now;
        if (!idle.head_started && idle.tracked->conn->HeadStarted()) {
          idle.head_started = true;
          idle.head_start = now;
        }
        return;
      case Connection::Intake::kReady:
        break;
    }
    std::shared_ptr<Tracked> tracked = idle.tracked;  // Drop() still reads it
    // Streams and running calls count against their address's share of the threads, so that
    // one address's long-lived requests cannot take every thread.
    std::optional<PeerTable::Slot> share = served_.Acquire(idle.peer, limits_.max_served_per_peer);
    Drop(it);
    if (!share) {
      if (auto held = peer_busy_log_.Allow()) {
        log::Warn("too many requests at once from one address: refusing with 503",
                  {{"remote", tracked->conn->Remote()},
                   {"max_served_per_peer", limits_.max_served_per_peer},
                   {"held_back", *held}});
      }
      Refuse(tracked->conn->Socket());
      handler_.Answered(503);
      return;
    }
    auto held_share = std::make_shared<PeerTable::Slot>(std::move(*share));
    const bool spawned = threads_.Spawn(
        [this, tracked, held_share](const std::function<void()>& release) mutable {
          std::shared_ptr<Tracked> mine = std::move(tracked);
          if (!mine->conn->ServeReady()) return;
          held_share.reset();
          release();
          GiveBack(std::move(mine));
        });
    if (!spawned) {
      if (auto held = busy_log_.Allow()) {
        log::Warn("too many requests at once: refusing with 503",
                  {{"max_connections", limits_.max_connections}, {"held_back", *held}});
      }
      Refuse(tracked->conn->Socket());
      handler_.Answered(503);
    }
  }

  // From a serving thread: the connection waits for its next request again.
  void GiveBack(std::shared_ptr<Tracked> tracked) {
    {
      std::lock_guard lock(returned_mu_);
      if (stopping_) return;  // closed here, with `tracked`
      returned_.push_back(std::move(tracked));
    }
    const uint64_t one = 1;
    (void)!write(wake_.Get(), &one, sizeof one);
  }

  void TakeReturned() {
    uint64_t count = 0;
    (void)!read(wake_.Get(), &count, sizeof count);
    std::vector<std::shared_ptr<Tracked>> returned;
    {
      std::lock_guard lock(returned_mu_);
      returned.swap(returned_);
    }
    for (auto& tracked : returned) {
      const int fd = tracked->conn->Socket();
      // Requests may be buffered behind the one served: the loop admits them now.
      if (AddIdle(std::move(tracked))) OnEvent(fd);
    }
  }

  Clock::time_point Deadline(const Idle& idle) const {
    const Connection& conn = *idle.tracked->conn;
    const bool trusted = conn.Trusted();
    const Clock::time_point transfer = conn.LoopDeadline().value_or(Clock::time_point::max());
    if (!idle.head_started) {
      return std::min(transfer, idle.since + (trusted ? limits_.keep_alive_timeout
                                                      : limits_.untrusted_idle_timeout));
    }
    return std::min({transfer, idle.last_byte + limits_.read_timeout,
                     idle.head_start + (trusted ? limits_.request_timeout
                                                : limits_.untrusted_idle_timeout)});
  }

  void Sweep() {
    const auto now = Clock::now();
    for (auto it = idle_.begin(); it != idle_.end();) {
      auto next = std::next(it);
      if (now >= Deadline(it->second)) {
        // A client that started a request and then stalled (slowloris) hears why it is cut off;
        // one that sent nothing does not.
        if (it->second.head_started && !it->second.writing) {
          it->second.tracked->conn->RefuseSlowHead();
        }
        Drop(it);
      }
      it = next;
    }
    if (accept_paused_ && now >= accept_resume_) {
      accept_paused_ = false;
      Watch(listen_fd_, EPOLL_CTL_MOD, EPOLLIN);
    }
  }

  // A trusted proxy's connection now serves another client: it moves to that address's count,
  // under its cap (making room as a newcomer does), then carries on with `intake`.
  void OnRekeyed(int fd, Connection::Intake intake) {
    auto it = idle_.find(fd);
    std::shared_ptr<Tracked> tracked = it->second.tracked;
    Drop(it);
    tracked->slot.reset();
    const std::string& peer = tracked->conn->Remote();
    std::optional<PeerTable::Slot> slot = peers_.Acquire(peer, limits_.max_connections_per_peer);
    if (!slot && EvictOldestOf(peer)) {
      if (auto again = peers_.Acquire(peer, limits_.max_connections_per_peer)) {
        slot.emplace(std::move(*again));
      }
    }
    if (!slot) {
      Refuse(tracked->conn->Socket());
      handler_.Answered(503);
      return;
    }
    tracked->slot.emplace(std::move(*slot));
    if (!AddIdle(std::move(tracked))) return;
    if (intake == Connection::Intake::kWriting) SetWriting(idle_.find(fd), true);
    if (intake == Connection::Intake::kReady) OnEvent(fd);
  }

  // Closes the oldest connection that has not proven a token, to make room for a new one.
  bool EvictUnproven() {
    if (unproven_.empty()) return false;
    if (auto held = unproven_log_.Allow()) {
      log::Warn("unproven connections at their budget: closing the oldest",
                {{"max_unproven_connections", limits_.max_unproven_connections},
                 {"held_back", *held}});
    }
    Drop(idle_.find(unproven_.front()));
    return true;
  }

  // Closes the oldest of `peer`'s connections in the loop, preferring an unproven one. False
  // when it has none there (all are being served).
  bool EvictOldestOf(const std::string& peer) {
    auto of_peer = by_peer_.find(peer);
    if (of_peer == by_peer_.end()) return false;
    auto victim = idle_.end();
    for (const int fd : of_peer->second) {
      auto it = idle_.find(fd);
      if (victim == idle_.end()) victim = it;
      if (it->second.unproven) {
        victim = it;
        break;
      }
    }
    if (victim == idle_.end()) return false;
    if (auto held = peer_eviction_log_.Allow()) {
      log::Warn("connections from one address at the cap: closing its oldest waiting one",
                {{"remote", peer},
                 {"max_connections_per_peer", limits_.max_connections_per_peer},
                 {"held_back", *held}});
    }
    Drop(victim);
    return true;
  }

  // Closes the connection idle for longest, preferring one none of whose requests was admitted:
  // at the idle cap, or, with `accept_errno` (EMFILE, ENFILE), to free a descriptor for a
  // connection accept() could not take. False when there is none.
  bool EvictOne(int accept_errno = 0) {
    auto victim = unproven_.empty() ? idle_.end() : idle_.find(unproven_.front());
    if (victim == idle_.end()) {
      for (auto it = idle_.begin(); it != idle_.end(); ++it) {
        if (victim == idle_.end() || it->second.since < victim->second.since) victim = it;
      }
    }
    if (victim == idle_.end()) return false;
    if (accept_errno != 0) {
      if (auto held = descriptor_eviction_log_.Allow()) {
        log::Warn("out of open files: closing the connection idle for longest to accept one",
                  {{"errno", strerrorname_np(accept_errno)},
                   {"idle_connections", idle_.size()},
                   {"held_back", *held},
                   {"fix", "raise the hard open file limit (LimitNOFILE=, ulimit -Hn)"}});
      }
    } else if (auto held = eviction_log_.Allow()) {
      log::Warn("idle connections at the cap: closing the one idle for longest",
                {{"max_idle_connections", limits_.max_idle_connections}, {"held_back", *held}});
    }
    Drop(victim);
    return true;
  }

  const ConnectionLimits& limits_;
  const int stop_fd_;
  Handler& handler_;
  const int listen_fd_;
  UniqueFd epoll_;
  UniqueFd wake_;
  // Destroyed after threads_ (declared before it): a serving thread's connection gives its slot
  // back when it closes.
  PeerTable peers_;
  PeerTable served_;  // requests being served (on a thread), per address
  Threads threads_;
  std::unordered_map<int, Idle> idle_;  // by socket
  std::list<int> unproven_;             // sockets of idle_'s unproven connections, oldest first
  std::unordered_map<std::string, std::list<int>> by_peer_;  // idle_'s sockets by address
  bool accept_paused_ = false;
  Clock::time_point accept_resume_;
  std::mutex returned_mu_;
  bool stopping_ = false;
  std::vector<std::shared_ptr<Tracked>> returned_;
  log::Throttle accept_error_log_;
  log::Throttle peer_refusal_log_;
  log::Throttle busy_log_;
  log::Throttle eviction_log_;
  log::Throttle descriptor_eviction_log_;
  log::Throttle unproven_log_;
  log::Throttle peer_eviction_log_;
  log::Throttle peer_busy_log_;
};

ConnectionServer::ConnectionServer(ConnectionLimits limits, int stop_fd, Handler& handler)
    : limits_(limits), stop_fd_(stop_fd), handler_(handler) {}

ConnectionServer::~ConnectionServer() { Join(); }

Result<int> ConnectionServer::Listen(const std::string& host, int port, int backlog) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof *v4;
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof *v6;
  } else {
    errno = EINVAL;
    return Errno(ErrorCode::kUnavailable, "inet_pton(" + host + ")");
  }
  UniqueFd fd(socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.Valid()) return Errno(ErrorCode::kUnavailable, "socket");
  const int one = 1;
  const int zero = 0;
  setsockopt(fd.Get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (addr.ss_family == AF_INET6) {
    setsockopt(fd.Get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  }
  if (bind(fd.Get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    return Errno(ErrorCode::kUnavailable, "bind");
  }
  if (listen(fd.Get(), backlog) != 0) return Errno(ErrorCode::kUnavailable, "listen");
  len = sizeof addr;
  if (getsockname(fd.Get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Errno(ErrorCode::kUnavailable, "getsockname");
  }
  listen_fd_ = std::move(fd);
  return ntohs(addr.ss_family == AF_INET6 ? v6->sin6_port : v4->sin_port);
}

Result<void> ConnectionServer::Start() {
  if (!listen_fd_.Valid() || loop_) {
    return MakeError(ErrorCode::kInvalidArgument, "Start() needs a Listen() and runs once");
  }
  auto loop = std::make_unique<Loop>(limits_, stop_fd_, handler_, listen_fd_.Get());
  MCPEXEC_RETURN_IF_ERROR(loop->Init());
  try {
    loop_thread_ = std::thread([loop = loop.get()] { loop->Run(); });
  } catch (const std::system_error& e) {
    return MakeError(ErrorCode::kResourceExhausted,
                     std::string("cannot start the event loop thread: ") + e.what());
  }
  loop_ = std::move(loop);
  return Ok();
}

void ConnectionServer::Join() {
  if (loop_thread_.joinable()) loop_thread_.join();
  if (loop_) loop_->JoinThreads();
  listen_fd_.Reset();
}

}  // namespace mcpexec::http
