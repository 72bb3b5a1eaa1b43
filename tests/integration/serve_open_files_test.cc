// `mcp-exec serve --transport http` under a low open-file limit (RLIMIT_NOFILE, as a container's
// `--ulimit nofile=` or systemd's LimitNOFILE= sets it), as root and as an unprivileged user:
// the connection caps leave the descriptors that the configuration's sessions, runs and engine
// may hold (cli::DescriptorReserve), so that with every session open and the connections at
// their caps a run still works, a new session is refused with the documented error and a
// connection over the cap gets a 503, and nothing meets EMFILE. Below the reserve the server
// says so at start, naming the fix, and serves.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../support/loopback_http.h"
#include "../support/sandbox_test.h"
#include "base/sys.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kBelowReserve[] = "open file limit is below what this configuration may hold";
constexpr char kCapped[] = "open file limit caps http connections";
// The descriptors the test leaves for connections above the reserve: 16 served at once (a
// socket and an eventfd each) and 32 waiting.
constexpr rlim_t kConnectionDescriptors = 64;
constexpr size_t kServed = 16, kIdle = 32;
constexpr int kMaxSessions = 8;  // MCP_EXEC_MAX_SESSIONS' default, which the test keeps

// The first line of the server's log whose "msg" is `msg`, or a discarded value.
json LogLine(const std::string& log, const std::string& msg) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    json entry = json::parse(line, nullptr, false);
    if (entry.is_object() && entry.value("msg", "") == msg) return entry;
  }
  return json(json::value_t::discarded);
}

// A connection to 127.0.0.1:port, its reads bounded by 10 s; -1 when it cannot be made.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends a GET on `fd` and reads until `until` has arrived; what was read.
std::string Get(int fd, int port, const std::string& path, const std::string& until) {
  const std::string request = "GET " + path +
                              " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                              "\r\nAccept: text/event-stream\r\n\r\n";
  std::string in;
  if (!WriteAll(fd, request).ok()) return in;
  char buf[4096];
  while (in.find(until) == std::string::npos) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  return in;
}

// The connections a test holds open; closed at its end.
class Held {
 public:
  ~Held() { CloseAll(); }
  void Add(int fd) { fds_.push_back(fd); }
  void CloseAll() {
    for (int fd : fds_) close(fd);
    fds_.clear();
  }

 private:
  std::vector<int> fds_;
};

size_t OpenDescriptors(pid_t pid) {
  std::error_code error;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++n;
  }
  return n;
}

class ServeOpenFiles : public SandboxTest {
 protected:
  // `serve` on `port` whose RLIMIT_NOFILE is `open_files` (soft and hard), with 2 runs at once
  // and the default environment only, so that its reserve does not follow the host's CPUs or
  // the images built beside the rootfs.
  BackgroundRun Serve(int port, rlim_t open_files) const {
    LaunchOptions options;
    options.open_files = open_files;
    options.env = {"MCP_EXEC_MAX_CONCURRENCY=2", "MCP_EXEC_ENVIRONMENTS=default"};
    return runner_.StartCommand({runner_.Binary(), "serve", "--transport", "http", "--addr",
                                 "127.0.0.1:" + std::to_string(port), "--rootfs", runner_.Rootfs()},
                                options);
  }

  // Polls until /healthz answers 200 (true) or the server exits or 60 s pass (false).
  static bool Serving(const BackgroundRun& server, int port) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      if (Exited(server.Pid())) return false;
      if (HttpRequest(port, "GET", "/healthz", {}, "", std::chrono::seconds(5)).status == 200) {
        return true;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
  }

  // initialize on /mcp; the Mcp-Session-Id ("" on failure).
  static std::string Initialize(int port) {
    const json init = {{"jsonrpc", "2.0"},
                       {"id", 0},
                       {"method", "initialize"},
                       {"params",
                        {{"protocolVersion", "2025-06-18"},
                         {"capabilities", json::object()},
                         {"clientInfo", {{"name", "serve-open-files-test"}, {"version", "1"}}}}}};
    const HttpReply r =
        HttpRequest(port, "POST", "/mcp", {"Accept: application/json"}, init.dump());
    return r.status == 200 ? r.Header("Mcp-Session-Id") : "";
  }

  // A tools/call of `tool` on its own connection: the HTTP status and the call's result (or
  // the whole reply when there is none). With one thread left to serve it, the previous
  // request's may not be back yet when the next arrives: a 503 (or its loss to a reset, no
  // answer: the request was not read) is retried, as its Retry-After asks, for up to 5 s.
  static std::pair<int, json> Call(int port, const std::string& session, const std::string& tool,
                                   const json& arguments) {
    static int id = 1;
    const json call = {{"jsonrpc", "2.0"},
                       {"id", ++id},
                       {"method", "tools/call"},
                       {"params", {{"name", tool}, {"arguments", arguments}}}};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    HttpReply r;
    do {
      r = HttpRequest(port, "POST", "/mcp",
                      {"Accept: application/json", "Mcp-Session-Id: " + session}, call.dump());
      if (r.status != 503 && r.status != 0) break;
      std::this_thread::sleep_for(milliseconds(50));
    } while (std::chrono::steady_clock::now() < deadline);
    const json reply = json::parse(r.body, nullptr, false);
    if (reply.is_object() && reply.contains("result")) return {r.status, reply["result"]};
    return {r.status, reply.is_discarded() ? json(r.body) : reply};
  }
  static std::pair<int, json> Exec(int port, const std::string& session, const json& arguments) {
    return Call(port, session, "exec", arguments);
  }
};

// Below its reserve the server warns at start with the limit, the reserve and the fix, and
// still serves: the reserve is a worst case (every unit at its maximum at once).
TEST_P(ServeOpenFiles, BelowTheReserveTheServerSaysSoAtStartAndServes) {
  const int port = FreePort();
  BackgroundRun server = Serve(port, 128);
  ASSERT_TRUE(Serving(server, port)) << server.Stop().Describe();
  const json warning = LogLine(server.ErrSoFar(), kBelowReserve);
  ASSERT_TRUE(warning.is_object()) << server.ErrSoFar();
  EXPECT_EQ(warning["rlimit_nofile"], 128);
  EXPECT_GT(warning["reserve"].get<int>(), 128);
  EXPECT_THAT(warning["fix"].get<std::string>(),
              AllOf(HasSubstr("raise the hard limit to at least " +
                              std::to_string(warning["reserve"].get<int>() + 8)),
                    HasSubstr("LimitNOFILE="), HasSubstr("MCP_EXEC_MAX_SESSIONS")));
  const json capped = LogLine(server.ErrSoFar(), kCapped);
  EXPECT_EQ(capped["max_connections"], 2) << "a handful of connections, however low the limit";
  EXPECT_EQ(capped["max_idle_connections"], 4);

  const std::string session = Initialize(port);
  ASSERT_FALSE(session.empty());
  const auto [status, result] = Exec(port, session, {{"code", "print(1)"}});
  EXPECT_EQ(status, 200) << result;
  EXPECT_EQ(result["structuredContent"]["stdout"], "1\n") << result;
  const Outcome stopped = server.Stop();
  EXPECT_EQ(stopped.exit_status, 0) << stopped.Describe();
}

// With the reserve and 64 descriptors for connections, every session open and held, and the
// connections at their caps (16 served, 32 waiting): a run and a session's call work, a new
// session gets the open limit's error, one connection more gets a 503, and no accept, run or
// session meets EMFILE.
TEST_P(ServeOpenFiles, AtTheCapsRunsWorkAndConnectionsOverThemGet503) {
  // The reserve of this configuration, as the server counts it for this mode's limits backend.
  rlim_t reserve = 0;
  {
    const int port = FreePort();
    BackgroundRun probe = Serve(port, 128);
    ASSERT_TRUE(Serving(probe, port)) << probe.Stop().Describe();
    const json warning = LogLine(probe.ErrSoFar(), kBelowReserve);
    ASSERT_TRUE(warning.is_object()) << probe.ErrSoFar();
    reserve = warning["reserve"].get<rlim_t>();
    probe.Stop();
  }
  const rlim_t limit = reserve + kConnectionDescriptors;
  const int port = FreePort();
  BackgroundRun server = Serve(port, limit);
  ASSERT_TRUE(Serving(server, port)) << server.Stop().Describe();
  EXPECT_FALSE(LogLine(server.ErrSoFar(), kBelowReserve).is_object()) << server.ErrSoFar();
  const json capped = LogLine(server.ErrSoFar(), kCapped);
  ASSERT_TRUE(capped.is_object()) << server.ErrSoFar();
  EXPECT_EQ(capped["reserve"], reserve);
  EXPECT_EQ(capped["rlimit_nofile"], limit);
  ASSERT_EQ(capped["max_connections"], kServed) << capped;
  ASSERT_EQ(capped["max_idle_connections"], kIdle) << capped;

  const std::string mcp = Initialize(port);
  ASSERT_FALSE(mcp.empty());
  std::vector<std::string> sessions;
  for (int i = 0; i < kMaxSessions; ++i) {
    const auto [status, opened] = Exec(port, mcp, {{"code", "x = 41"}, {"session", "new"}});
    ASSERT_EQ(status, 200) << opened;
    ASSERT_FALSE(opened.value("isError", false)) << "session " << i << ": " << opened;
    sessions.push_back(opened["structuredContent"]["session"].get<std::string>());
  }

  // Every thread but one taken by an event stream, then the waiting connections at their cap,
  // each proven by a request of its own.
  Held streams, idle;
  for (size_t i = 0; i + 1 < kServed; ++i) {
    const int fd = Connect(port);
    ASSERT_GE(fd, 0);
    streams.Add(fd);
    ASSERT_THAT(Get(fd, port, "/sse", "event: endpoint"), HasSubstr("event: endpoint"))
        << "stream " << i;
  }
  for (size_t i = 0; i < kIdle; ++i) {
    const int fd = Connect(port);
    ASSERT_GE(fd, 0);
    idle.Add(fd);
    ASSERT_THAT(Get(fd, port, "/readyz", "\r\n\r\n"), HasSubstr("HTTP/1.1 ")) << "connection " << i;
  }

  // The last thread: a run, a call in a held session, and a new session, which is refused.
  const auto [run_status, run] = Exec(port, mcp, {{"code", "print(1)"}});
  EXPECT_EQ(run_status, 200) << run;
  EXPECT_EQ(run["structuredContent"]["stdout"], "1\n") << run;
  const auto [call_status, call] = Exec(port, mcp, {{"code", "x + 1"}, {"session", sessions[0]}});
  EXPECT_EQ(call_status, 200) << call;
  EXPECT_EQ(call["structuredContent"]["result"], "42") << call;
  const auto [new_status, refused] = Exec(port, mcp, {{"code", "1"}, {"session", "new"}});
  EXPECT_EQ(new_status, 200) << refused;
  EXPECT_TRUE(refused.value("isError", false)) << refused;
  EXPECT_THAT(refused.dump(),
              AllOf(HasSubstr("too many sessions"), HasSubstr("MCP_EXEC_MAX_SESSIONS=8"),
                    Not(HasSubstr("EMFILE"))));

  // Every thread taken (the last once the calls above have let it go): one connection more is
  // answered 503 at once.
  const auto last = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (bool taken = false; !taken;) {
    const int fd = Connect(port);
    ASSERT_GE(fd, 0);
    streams.Add(fd);
    taken = Get(fd, port, "/sse", "event: endpoint").find("event: endpoint") != std::string::npos;
    ASSERT_TRUE(taken || std::chrono::steady_clock::now() < last) << "no thread for a stream";
    if (!taken) std::this_thread::sleep_for(milliseconds(50));
  }
  const auto before = std::chrono::steady_clock::now();
  const HttpReply over = HttpRequest(port, "GET", "/readyz", {}, "", std::chrono::seconds(10));
  const auto waited = std::chrono::steady_clock::now() - before;
  EXPECT_EQ(over.status, 503) << over.head << over.body;
  EXPECT_THAT(over.body, HasSubstr("too many connections"));
  EXPECT_LT(waited, std::chrono::seconds(5)) << "a connection over the cap waited";
  const size_t open = OpenDescriptors(server.Pid());
  EXPECT_LT(open, limit) << "the server at its caps with every session open";

  // Let go of the connections and a session: a new one opens, and runs go on.
  streams.CloseAll();
  idle.CloseAll();
  const auto [closed_status, closed] = Call(port, mcp, "session_close", {{"session", sessions[1]}});
  EXPECT_EQ(closed_status, 200) << closed;
  EXPECT_FALSE(closed.value("isError", false)) << closed;
  const auto [reopened_status, reopened] = Exec(port, mcp, {{"code", "y = 1"}, {"session", "new"}});
  EXPECT_EQ(reopened_status, 200) << reopened;
  EXPECT_FALSE(reopened.value("isError", false)) << reopened;

  const Outcome stopped = server.Stop();
  EXPECT_EQ(stopped.exit_status, 0) << stopped.Describe();
  EXPECT_THAT(stopped.err, AllOf(Not(HasSubstr("EMFILE")), Not(HasSubstr("http accept failed"))))
      << stopped.Describe();
}

// The soft open-file limit at `pid` (/proc/PID/limits), or 0.
rlim_t SoftOpenFiles(pid_t pid) {
  std::ifstream limits("/proc/" + std::to_string(pid) + "/limits");
  for (std::string line; std::getline(limits, line);) {
    if (line.rfind("Max open files", 0) == 0) return std::stoull(line.substr(26));
  }
  return 0;
}

// Over stdio too, the server raises its soft open-file limit to the hard one (a shell's soft
// 1,024 is below what a configuration with more sessions or environments may hold), and says
// so at start, naming the fix, where the hard one is below the reserve.
TEST_P(ServeOpenFiles, AStdioServerRaisesItsSoftLimitToTheHardOne) {
  const std::string input =
      json({{"jsonrpc", "2.0"},
            {"id", 1},
            {"method", "initialize"},
            {"params",
             {{"protocolVersion", "2025-06-18"},
              {"capabilities", json::object()},
              {"clientInfo", {{"name", "serve-open-files-test"}, {"version", "1"}}}}}})
          .dump() +
      "\n" + json({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}).dump() + "\n" +
      json({{"jsonrpc", "2.0"},
            {"id", 2},
            {"method", "tools/call"},
            {"params", {{"name", "exec"}, {"arguments", {{"code", "print(1)"}}}}}})
          .dump() +
      "\n";
  for (const rlim_t hard : {rlim_t{4096}, rlim_t{128}}) {
    LaunchOptions options;
    options.open_files = hard;
    options.open_files_soft = 64;
    options.input = input;
    options.hold_stdin_open = true;
    options.env = {"MCP_EXEC_MAX_CONCURRENCY=2", "MCP_EXEC_ENVIRONMENTS=default"};
    BackgroundRun server =
        runner_.StartCommand({runner_.Binary(), "serve", "--rootfs", runner_.Rootfs()}, options);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!LogLine(server.ErrSoFar(), "exec").is_object() && !Exited(server.Pid()) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(50));
    }
    ASSERT_TRUE(LogLine(server.ErrSoFar(), "exec").is_object()) << server.Stop().Describe();
    EXPECT_EQ(SoftOpenFiles(server.Pid()), hard) << "hard limit " << hard;
    const json warning = LogLine(server.ErrSoFar(), kBelowReserve);
    if (hard == 4096) {
      EXPECT_FALSE(warning.is_object()) << server.ErrSoFar();
    } else {
      ASSERT_TRUE(warning.is_object()) << server.ErrSoFar();
      EXPECT_EQ(warning["rlimit_nofile"], hard);
      EXPECT_THAT(warning["fix"].get<std::string>(),
                  AllOf(HasSubstr("raise the hard limit to at least " +
                                  std::to_string(warning["reserve"].get<int>())),
                        Not(HasSubstr("connections"))));
    }
    const Outcome stopped = server.Stop();
    EXPECT_THAT(stopped.out, HasSubstr(R"(\"stdout\":\"1\\n\")")) << stopped.Describe();
  }
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(ServeOpenFiles);

}  // namespace
}  // namespace mcpexec::testing
