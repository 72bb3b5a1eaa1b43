#include "mcp/transport/http_server.h"

#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <variant>

#include "base/call_steps.h"
#include "base/sys.h"
#include "base/unique_fd.h"
#include "http/connection.h"
#include "http/peer_table.h"
#include "jsonrpc/message.h"
#include "log/log.h"
#include "mcp/call_steps_log.h"
#include "mcp/protocol.h"
#include "mcp/transport/http_admission.h"
#include "mcp/transport/http_metadata.h"
#include "mcp/transport/http_sessions.h"
#include "mcp/transport/sse_stream.h"
#include "metrics/instruments.h"

namespace mcpexec::mcp {
namespace {

using http::Request;
using http::Response;
using nlohmann::json;

using transport::CloseConnection;
using transport::Header;
using transport::kSessionNotFound;
using transport::kTransportError;
using transport::SendJson;
using transport::SendRpcError;

constexpr char kSessionHeader[] = "Mcp-Session-Id";
constexpr char kVersionHeader[] = "MCP-Protocol-Version";
constexpr int kListenBacklog = 1024;

// Session ids are bearer capabilities: logs get a prefix, enough to correlate, not to use.
std::string SessionLabel(const std::string& id) { return id.substr(0, 8); }

bool IsStateless(const Request& req) {
  return IsStatelessProtocolVersion(Header(req, kVersionHeader).value_or(std::string_view()));
}

// The form of a request's reply that the Accept header asks for.
transport::ResponseMode AcceptedMode(const Request& req, bool stream_only = false) {
  return transport::ChooseResponseMode(Header(req, "Accept").value_or(std::string_view()),
                                       stream_only);
}

// False after answering 406: the Accept header allows neither JSON nor an event stream.
bool CheckAcceptable(Response& res, transport::ResponseMode mode) {
  if (mode != transport::ResponseMode::kNotAcceptable) return true;
  SendRpcError(res, 406, kTransportError,
               "Not Acceptable: Accept must allow application/json or text/event-stream");
  return false;
}

// Answers 400 for request `id`, whose body says what its headers do not.
void SendHeaderMismatch(Response& res, const jsonrpc::Id& id, const std::string& why) {
  SendJson(res, 400, jsonrpc::MakeError(id, kHeaderMismatch, "Header mismatch: " + why));
}

// Fits the connection caps into the open-file limit less `reserve`, what the rest of the
// process may hold (HttpServerOptions::descriptor_reserve), leaving at least
// kMinConnectionDescriptors. A request being served needs a socket and its reply queue's eventfd
// (a call's cancel eventfd is in the reserve); an idle connection needs its socket. More
// connections than the limit allows would make accept() fail with EMFILE instead of answering
// 503, and leave runs and sessions without their pipes. Where the limit is below the reserve
// (`serve` has warned at start, cli::RaiseOpenFileLimit), connections get the least.
void FitConnectionCaps(http::ConnectionLimits& limits, size_t reserve) {
  // `serve` has raised it already; a server embedded elsewhere has it raised here.
  const rlim_t soft = RaiseSoftOpenFileLimit();
  if (soft == 0 || soft == RLIM_INFINITY) return;
  const size_t nofile = soft;
  const size_t budget =
      nofile >= reserve + kMinConnectionDescriptors ? nofile - reserve : kMinConnectionDescriptors;
  const size_t active = std::min(limits.max_connections, std::max<size_t>(budget / 4, 1));
  const size_t idle = std::min(limits.max_idle_connections,
                               std::max<size_t>(budget - 2 * active, 1));
  if (active < limits.max_connections || idle < limits.max_idle_connections) {
    log::Warn("open file limit caps http connections",
              {{"max_connections", active},
               {"max_idle_connections", idle},
               {"rlimit_nofile", nofile},
               {"reserve", reserve},
               {"fix", "raise the hard limit (LimitNOFILE=, ulimit -Hn)"}});
  }
  limits.max_connections = active;
  limits.max_idle_connections = idle;
  limits.max_unproven_connections = std::min(limits.max_unproven_connections, idle);
}

}  // namespace

class HttpServer::Impl final : public http::Handler {
 public:
  Impl(Server& server, HttpServerOptions options)
      : server_(server),
        options_(std::move(options)),
        admission_{options_.auth_token, options_.allowed_origins, options_.max_body_bytes,
                   options_.metrics_need_token},
        sessions_(options_.max_sessions, options_.session_idle_timeout) {}
  ~Impl() override { Stop(); }

  Result<int> Start();
  void Stop();
  int Port() const { return port_.load(); }

 private:
  using Kind = transport::SessionTable::Kind;

  // http::Handler
  http::Admission Admit(const Request& req, Response& res) override;
  void Handle(Request& req, Response& res) override;
  void Answered(int status) noexcept override;

  // POST /mcp: the steps both revisions share (the body read, parsed and its revision checked),
  // then the message goes to PostSession or PostStateless, as the revision says.
  void PostMcp(const Request& req, Response& res);
  void PostSession(const Request& req, Response& res, jsonrpc::Incoming incoming);
  void PostStateless(const Request& req, Response& res, jsonrpc::Incoming incoming);
  bool RefuseStateless(const Request& req, Response& res);
  // The session a message of the session revisions goes to: a new one for initialize, its id in
  // `*new_id`, or the one Mcp-Session-Id names. nullptr after answering.
  std::shared_ptr<Session> SessionFor(const Request& req, Response& res,
                                      const jsonrpc::Incoming& incoming, std::string* new_id);
  // Counts `queue` among the open requests of the session Mcp-Session-Id names; false after
  // answering 429 when the session has its maximum open.
  bool TrackReply(const Request& req, Response& res, const Session& session,
                  const std::shared_ptr<transport::MessageQueue>& queue);
  void GetMcp(const Request& req, Response& res);
  void DeleteMcp(const Request& req, Response& res);
  void GetSse(const Request& req, Response& res);
  void PostMessages(const Request& req, Response& res);
  void GetMetrics(Response& res);
  void GetReadyz(Response& res);

  bool ReadBody(const Request& req, Response& res, std::string* body);
  // False after answering 400 with -32022 (for request `id`) when the MCP-Protocol-Version
  // header names a revision this server does not speak.
  bool CheckProtocolVersion(const Request& req, Response& res,
                            const jsonrpc::Id& id = jsonrpc::Id(nullptr));
  std::shared_ptr<Session> SessionFromHeader(const Request& req, Response& res);
  // The queue a request's reply collects in, or nullptr after answering 503. An event stream
  // that outlives requests (legacy SSE, the standalone stream) is `outliving`: bounded by
  // max_sse_queued_bytes for a client that stops reading.
  std::shared_ptr<transport::MessageQueue> NewReplyQueue(Response& res, bool outliving = false);
  static std::shared_ptr<MessageSink> ReplySink(const std::shared_ptr<transport::MessageQueue>& queue,
                                                transport::ResponseMode mode);
  // Sends what `queue` collects for request `id` as JSON or as an event stream, as `mode` says.
  void Reply(const Request& req, Response& res, transport::ResponseMode mode,
             std::shared_ptr<Session> session, std::shared_ptr<transport::MessageQueue> queue,
             const jsonrpc::Id& id);
  void ReplyJson(int sock, Response& res, Session& session, transport::MessageQueue& queue,
                 const jsonrpc::Id& id);
  void ReplyStream(int sock, Response& res, std::shared_ptr<Session> session,
                   std::shared_ptr<transport::MessageQueue> queue, jsonrpc::Id id);
  bool Pump(int sock, transport::MessageQueue& queue, http::StreamSink& out, bool* finished);

  void RemoveSession(const std::string& id, std::string_view why);
  std::optional<std::string> NewSessionId(Response& res);

  Server& server_;
  const HttpServerOptions options_;
  const transport::AdmissionPolicy admission_;
  UniqueFd stop_fd_;
  std::unique_ptr<http::ConnectionServer> svr_;
  std::atomic<int> port_{0};
  std::mutex stop_mu_;
  bool stopped_ = false;
  transport::SessionTable sessions_;
  metrics::LabeledCounter responses_{"code"};
  ::mcpexec::http::PeerTable streams_;  // legacy SSE event streams open, per client address
  // Streamable HTTP standalone streams open, per client address, and in all (one key, "").
  ::mcpexec::http::PeerTable standalone_streams_, standalone_streams_all_;
  log::Throttle session_busy_log_;       // clients at a budget can cause these at will
  log::Throttle streams_busy_log_;
};

Result<int> HttpServer::Impl::Start() {
  {
    std::lock_guard lock(stop_mu_);
    if (svr_ || stopped_) {
      return MakeError(ErrorCode::kInvalidArgument, "the HTTP server was already started");
    }
  }
  stop_fd_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop_fd_.Valid()) return Errno(ErrorCode::kResourceExhausted, "eventfd");
  http::ConnectionLimits limits;
  limits.max_connections = options_.max_connections;
  limits.max_idle_connections = options_.max_idle_connections;
  limits.max_connections_per_peer = options_.max_connections_per_peer;
  limits.max_unproven_connections = options_.max_unproven_connections;
  limits.max_served_per_peer = options_.max_served_per_peer;
  limits.trusted_proxies = options_.trusted_proxies;
  FitConnectionCaps(limits, options_.descriptor_reserve);
  limits.keep_alive_timeout = options_.keep_alive_timeout;
  limits.untrusted_idle_timeout = options_.untrusted_idle_timeout;
  limits.read_timeout = options_.read_timeout;
  limits.request_timeout = options_.request_timeout;
  limits.write_timeout = options_.write_timeout;
  limits.min_transfer_rate = options_.min_transfer_rate;
  limits.max_loop_body_bytes = options_.max_body_bytes;
  svr_ = std::make_unique<http::ConnectionServer>(limits, stop_fd_.Get(), *this);

  const Result<int> port = svr_->Listen(options_.listen.host, options_.listen.port, kListenBacklog);
  if (!port.ok()) {
    std::string why = "cannot listen on " + options_.listen.ToString();
    if (port.error().sys_errno != 0) {
      why += std::string(": ") + strerrorname_np(port.error().sys_errno);
    }
    svr_.reset();
    return MakeError(ErrorCode::kUnavailable,
                     why + " (is the port in use, or the address not one of this host?)");
  }
  if (Result<void> started = svr_->Start(); !started.ok()) {
    svr_.reset();
    return std::move(started).error();
  }
  port_ = *port;

  transport::ListenAddress bound = options_.listen;
  bound.port = *port;
  log::Info("http server listening", {{"address", bound.ToString()},
                                      {"endpoints", {"/mcp", "/sse", "/healthz", "/readyz",
                                                     "/metrics"}},
                                      {"auth", !options_.auth_token.empty()},
                                      {"metrics_auth", !options_.auth_token.empty() &&
                                                           options_.metrics_need_token}});
  return *port;
}

void HttpServer::Impl::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  // Each open subscriptions/listen stream gets its response before it ends: Pump writes what
  // its queue holds when it sees the stop.
  server_.Listening().EndAll();
  if (stop_fd_.Valid()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_.Get(), &one, sizeof one);
  }
  if (svr_) svr_->Join();
  const size_t closed = sessions_.CloseAll();
  if (port_.load() > 0) log::Info("http server stopped", {{"sessions_closed", closed}});
}

http::Admission HttpServer::Impl::Admit(const Request& req, Response& res) {
  return transport::Admit(admission_, req, res);
}

void HttpServer::Impl::Handle(Request& req, Response& res) {
  // Admission has matched the path and method against the routes.
  const std::string& path = req.head.path;
  const std::string& method = req.head.method;
  if (path == "/mcp" && method == "POST") {
    PostMcp(req, res);
  } else if (path == "/mcp" && method == "GET") {
    GetMcp(req, res);
  } else if (path == "/mcp" && method == "DELETE") {
    DeleteMcp(req, res);
  } else if (path == "/sse" && method == "GET") {
    GetSse(req, res);
  } else if (path == "/messages" && method == "POST") {
    PostMessages(req, res);
  } else if (path == "/metrics") {
    GetMetrics(res);
  } else if (path == "/readyz") {
    GetReadyz(res);
  } else {
    SendJson(res, 404, {{"error", "not found"}});
  }
}

void HttpServer::Impl::Answered(int status) noexcept {
  try {
    responses_.Add(std::to_string(status));
  } catch (...) {  // out of memory: the count is lost, the response was not
  }
}

void HttpServer::Impl::GetMetrics(Response& res) {
  metrics::TextWriter out;
  if (options_.write_metrics) options_.write_metrics(out);
  out.Family("mcp_exec_http_requests_total",
             "HTTP requests answered, by status code (the transport's own refusals included)",
             metrics::Type::kCounter);
  responses_.Write(out, "mcp_exec_http_requests_total");
  out.Family("mcp_exec_sessions_open",
             "Open MCP sessions: Streamable HTTP sessions and legacy SSE streams",
             metrics::Type::kGauge);
  out.Sample("mcp_exec_sessions_open", {{"transport", "streamable_http"}},
             static_cast<uint64_t>(sessions_.Count(Kind::kStreamable)));
  out.Sample("mcp_exec_sessions_open", {{"transport", "sse"}},
             static_cast<uint64_t>(sessions_.Count(Kind::kLegacy)));
  res.status = 200;
  res.SetContent(out.Take(), metrics::kContentType);
}

void HttpServer::Impl::GetReadyz(Response& res) {
  const std::vector<NotReady> failing =
      options_.readiness ? options_.readiness() : std::vector<NotReady>();
  if (failing.empty()) {
    SendJson(res, 200, {{"ready", true}});
    return;
  }
  json list = json::array();
  for (const NotReady& f : failing) list.push_back({{"check", f.check}, {"reason", f.reason}});
  SendJson(res, 503, {{"ready", false}, {"failing", std::move(list)}});
}

bool HttpServer::Impl::ReadBody(const Request& req, Response& res, std::string* body) {
  switch (req.ReadBody(options_.max_body_bytes, body)) {
    case http::BodyStatus::kOk:
      return true;
    case http::BodyStatus::kTooLarge:
      SendRpcError(res, 413, kTransportError,
                   "Payload Too Large: the body is larger than " +
                       std::to_string(options_.max_body_bytes) + " bytes");
      break;
    case http::BodyStatus::kFailed:
      SendRpcError(res, 400, kTransportError, "Bad Request: could not read the body");
      break;
    case http::BodyStatus::kTimedOut:
      SendRpcError(res, 408, kTransportError, "Request Timeout: the body came too slowly");
      break;
  }
  CloseConnection(res);
  return false;
}

bool HttpServer::Impl::CheckProtocolVersion(const Request& req, Response& res,
                                            const jsonrpc::Id& id) {
  auto version = Header(req, kVersionHeader);
  if (!version || IsSupportedProtocolVersion(*version) || IsStatelessProtocolVersion(*version)) {
    return true;
  }
  // The stateless revision's UnsupportedProtocolVersionError, which a client of either era
  // reads as "retry with one of these".
  SendJson(res, 400,
           jsonrpc::MakeError(id, kUnsupportedProtocolVersion,
                              "Unsupported protocol version: MCP-Protocol-Version \"" +
                                  std::string(*version) + "\"",
                              json{{"supported", AllProtocolVersions()},
                                   {"requested", std::string(*version)}}));
  return false;
}

std::shared_ptr<Session> HttpServer::Impl::SessionFromHeader(const Request& req, Response& res) {
  auto id = Header(req, kSessionHeader);
  if (!id) {
    SendRpcError(res, 400, kTransportError, "Bad Request: Mcp-Session-Id header is required");
    return nullptr;
  }
  auto session = sessions_.Find(std::string(*id), Kind::kStreamable);
  if (!session) SendRpcError(res, 404, kSessionNotFound, "Session not found");
  return session;
}

void HttpServer::Impl::PostMcp(const Request& req, Response& res) {
  std::string body;
  if (!ReadBody(req, res, &body)) return;
  std::optional<CallSteps> steps = StartCallSteps();
  const CallStepsScope in_call(steps);
  jsonrpc::Incoming incoming = jsonrpc::Parse(body);
  MarkStep(Step::kParsed);
  body = std::string();  // a large body (code, stdin) need not live as long as the reply
  const auto* parsed = std::get_if<jsonrpc::Request>(&incoming);
  if (!CheckProtocolVersion(req, res, parsed ? parsed->id : jsonrpc::Id(nullptr))) return;
  if (IsStateless(req)) {
    PostStateless(req, res, std::move(incoming));
  } else {
    PostSession(req, res, std::move(incoming));
  }
}

std::shared_ptr<Session> HttpServer::Impl::SessionFor(const Request& req, Response& res,
                                                     const jsonrpc::Incoming& incoming,
                                                     std::string* new_id) {
  const auto* request = std::get_if<jsonrpc::Request>(&incoming);
  const auto* invalid = std::get_if<jsonrpc::Invalid>(&incoming);
  if (!req.head.HasHeader(kSessionHeader)) {
    if (invalid) {
      SendJson(res, 400, invalid->error_response);
      return nullptr;
    }
    if (!request || request->method != "initialize") {
      SendRpcError(res, 400, kTransportError, "Bad Request: Mcp-Session-Id header is required");
      return nullptr;
    }
    std::optional<std::string> id = NewSessionId(res);
    if (!id) return nullptr;
    *new_id = std::move(*id);
    return server_.NewSession(SessionLabel(*new_id));
  }
  std::shared_ptr<Session> session = SessionFromHeader(req, res);
  if (!session) return nullptr;
  // Not a JSON-RPC message: refused at the HTTP level too (as the TypeScript SDK's server
  // does), with the JSON-RPC error (-32700, or -32600) as the body.
  if (invalid) {
    log::Warn("invalid message",
              {{"session", session->Id()}, {"error", invalid->error_response["error"]}});
    SendJson(res, 400, invalid->error_response);
    return nullptr;
  }
  return session;
}

bool HttpServer::Impl::TrackReply(const Request& req, Response& res, const Session& session,
                                  const std::shared_ptr<transport::MessageQueue>& queue) {
  if (sessions_.TrackReply(std::string(*Header(req, kSessionHeader)), queue,
                           options_.max_open_per_session)) {
    return true;
  }
  if (auto held = session_busy_log_.Allow()) {
    log::Warn("too many requests open in one session: refusing with 429",
              {{"session", session.Id()},
               {"max_open_per_session", options_.max_open_per_session},
               {"held_back", *held}});
  }
  SendRpcError(res, 429, kTransportError,
               "Too Many Requests: this session has " +
                   std::to_string(options_.max_open_per_session) +
                   " requests open; send more once one has its answer");
  return false;
}

// A message of the session revisions: initialize opens a session, every other message names one
// in Mcp-Session-Id.
void HttpServer::Impl::PostSession(const Request& req, Response& res,
                                   jsonrpc::Incoming incoming) {
  const auto* request = std::get_if<jsonrpc::Request>(&incoming);
  const jsonrpc::Id id = request ? request->id : jsonrpc::Id(nullptr);
  const transport::ResponseMode mode = AcceptedMode(req);
  if (request && !CheckAcceptable(res, mode)) return;
  // A body that names a revision the header does not: the server core would take it for a
  // stateless request, while a proxy routes it by the header.
  if (request) {
    if (auto why = transport::VersionMismatch(Header(req, kVersionHeader), *request, false)) {
      SendHeaderMismatch(res, request->id, *why);
      return;
    }
  }

  std::string new_id;
  std::shared_ptr<Session> session = SessionFor(req, res, incoming, &new_id);
  if (!session) return;
  std::shared_ptr<transport::MessageQueue> queue = NewReplyQueue(res);
  if (!queue) return;
  // Counted before the request runs, so that a session at its budget starts nothing more.
  if (new_id.empty() && !TrackReply(req, res, *session, queue)) return;
  const Handled handled = session->Handle(std::move(incoming), ReplySink(queue, mode));

  if (!new_id.empty()) {
    // initialize answers synchronously; only a successful one opens a session.
    if (session->Initialized() && sessions_.Add(new_id, session)) {
      res.SetHeader(kSessionHeader, new_id);
      log::Info("http session opened", {{"session", SessionLabel(new_id)},
                                        {"transport", "streamable-http"},
                                        {"remote", req.remote_addr}});
    } else {
      session->Close();
      if (session->Initialized()) {
        SendRpcError(res, 503, kTransportError, "Service Unavailable: too many sessions");
        return;
      }
    }
  }
  if (handled == Handled::kNoResponse) {
    res.status = 202;
    return;
  }
  Reply(req, res, mode, std::move(session), std::move(queue), id);
}

// A request of the stateless revision: checked against its metadata headers, then answered by a
// session of its own, which ends with the reply. Mcp-Session-Id and Last-Event-ID are ignored.
void HttpServer::Impl::PostStateless(const Request& req, Response& res,
                                     jsonrpc::Incoming incoming) {
  if (const auto* invalid = std::get_if<jsonrpc::Invalid>(&incoming)) {
    SendJson(res, 400, invalid->error_response);
    return;
  }
  if (std::holds_alternative<jsonrpc::Notification>(incoming)) {
    res.status = 202;  // the revision defines none a server acts on over HTTP
    return;
  }
  const auto* request = std::get_if<jsonrpc::Request>(&incoming);
  if (request == nullptr) {
    SendRpcError(res, 400, jsonrpc::kInvalidRequest,
                 "Bad Request: a client POSTs requests and notifications, not responses");
    return;
  }
  // A request that does not name its revision is malformed (-32602), whatever its headers say;
  // server/discover without one is answered only where there are no headers, on stdio.
  const json* meta_version = MetaField(request->params, kMetaProtocolVersion);
  if (meta_version == nullptr || !meta_version->is_string()) {
    SendJson(res, 400,
             jsonrpc::MakeError(request->id, jsonrpc::kInvalidParams,
                                "params._meta needs \"" + std::string(kMetaProtocolVersion) +
                                    "\" (a string) in revision " +
                                    std::string(*Header(req, kVersionHeader))));
    return;
  }
  const transport::MetadataHeaders headers{Header(req, kVersionHeader), Header(req, "Mcp-Method"),
                                      Header(req, "Mcp-Name")};
  if (auto why = transport::MetadataMismatch(headers, *request)) {
    SendHeaderMismatch(res, request->id, *why);
    return;
  }
  const transport::ResponseMode mode = AcceptedMode(req, request->method == "subscriptions/listen");
  if (!CheckAcceptable(res, mode)) return;
  std::shared_ptr<transport::MessageQueue> queue = NewReplyQueue(res);
  if (!queue) return;
  const jsonrpc::Id id = request->id;
  // Stateless requests have no protocol session: what they share is the credential, which is
  // the server's one token (or none), so they are one caller.
  auto session = server_.NewSession("", "stateless-http");
  session->Handle(std::move(incoming), ReplySink(queue, mode));
  // An error answered at once goes out as JSON whatever the Accept, with an HTTP status that
  // says what it is (404 for an unknown method), which an event stream, 200 from its first
  // byte, could not.
  int status = 200;
  std::optional<std::string> error = queue->TakeLoneFinal([&status](std::string_view reply) {
    status = transport::StatelessReplyStatus(reply);
    return status != 200;
  });
  if (error) {
    res.status = status;
    res.SetContent(std::move(*error), "application/json");
    return;
  }
  Reply(req, res, mode, std::move(session), std::move(queue), id);
}

std::shared_ptr<transport::MessageQueue> HttpServer::Impl::NewReplyQueue(Response& res,
                                                                         bool outliving) {
  auto queue = transport::MessageQueue::Create(options_.max_pending_notification_bytes,
                                               outliving ? options_.max_sse_queued_bytes : SIZE_MAX);
  if (queue.ok()) return *queue;
  log::Error("cannot answer a request", {{"error", queue.error().message}});
  SendRpcError(res, 503, kTransportError, "Service Unavailable: out of resources");
  return nullptr;
}

std::shared_ptr<MessageSink> HttpServer::Impl::ReplySink(
    const std::shared_ptr<transport::MessageQueue>& queue, transport::ResponseMode mode) {
  return std::make_shared<transport::QueueSink>(queue, mode == transport::ResponseMode::kJson
                                                      ? transport::SinkMode::kRequestJson
                                                      : transport::SinkMode::kRequestStream);
}

void HttpServer::Impl::Reply(const Request& req, Response& res, transport::ResponseMode mode,
                             std::shared_ptr<Session> session,
                             std::shared_ptr<transport::MessageQueue> queue, const jsonrpc::Id& id) {
  if (mode == transport::ResponseMode::kJson) {
    ReplyJson(req.socket, res, *session, *queue, id);
  } else {
    ReplyStream(req.socket, res, std::move(session), std::move(queue), id);
  }
}

void HttpServer::Impl::ReplyJson(int sock, Response& res, Session& session,
                                 transport::MessageQueue& queue, const jsonrpc::Id& id) {
  while (true) {
    switch (http::WaitForMessages(queue.WaitFd(), sock, stop_fd_.Get(), options_.sse_keep_alive)) {
      case http::WaitResult::kTimeout:
        continue;
      case http::WaitResult::kPeerClosed:
        session.Cancel(id);
        CloseConnection(res);
        res.status = 400;  // never seen: the client is gone
        return;
      case http::WaitResult::kStopped:
        session.Cancel(id);
        CloseConnection(res);
        SendRpcError(res, 503, kTransportError, "Service Unavailable: the server is stopping");
        return;
      case http::WaitResult::kReady:
        break;
    }
    transport::MessageQueue::Batch batch = queue.Take();
    if (batch.final) {
      res.status = 200;
      res.SetContent(std::move(batch.messages.back()), "application/json");
      return;
    }
    if (batch.aborted) {
      SendRpcError(res, 404, kSessionNotFound, "Session not found");
      return;
    }
  }
}

void HttpServer::Impl::ReplyStream(int sock, Response& res, std::shared_ptr<Session> session,
                                   std::shared_ptr<transport::MessageQueue> queue, jsonrpc::Id id) {
  res.status = 200;
  res.SetHeader("Cache-Control", "no-cache");
  res.SetHeader("X-Accel-Buffering", "no");
  auto finished = std::make_shared<bool>(false);
  res.SetStream(
      "text/event-stream",
      [this, sock, queue, finished](http::StreamSink& out) {
        return Pump(sock, *queue, out, finished.get());
      },
      [session = std::move(session), finished, id = std::move(id)](bool) {
        // The stream ended before its response: the client hung up (or the server is
        // stopping), so nobody will read the result of the run.
        if (!*finished) session->Cancel(id);
      });
}

// One step of an event stream: waits for messages and writes them, or writes a keep-alive.
// False ends the connection. `finished` (Streamable HTTP only) is set after the final response.
bool HttpServer::Impl::Pump(int sock, transport::MessageQueue& queue, http::StreamSink& out,
                            bool* finished) {
  switch (http::WaitForMessages(queue.WaitFd(), sock, stop_fd_.Get(), options_.sse_keep_alive)) {
    case http::WaitResult::kStopped: {
      // What was sent before the stop still goes out: a subscription's closing response ends
      // its stream as any final response does.
      transport::MessageQueue::Batch batch = queue.Take();
      for (const std::string& message : batch.messages) {
        if (!out.Write(transport::SseEvent("message", message))) return false;
      }
      if (!batch.final) return false;
      if (finished) *finished = true;
      out.Done();
      return true;
    }
    case http::WaitResult::kPeerClosed:
      return false;
    case http::WaitResult::kTimeout:
      return out.Write(transport::kSseKeepAlive);
    case http::WaitResult::kReady:
      break;
  }
  transport::MessageQueue::Batch batch = queue.Take();
  for (const std::string& message : batch.messages) {
    if (!out.Write(transport::SseEvent("message", message))) return false;
  }
  if (batch.final || batch.aborted) {
    if (finished) *finished = batch.final;
    out.Done();
  }
  return true;
}

// GET and DELETE have no meaning in the stateless revision, whose requests are all POSTs.
bool HttpServer::Impl::RefuseStateless(const Request& req, Response& res) {
  if (!IsStateless(req)) return false;
  res.SetHeader("Allow", "POST");
  SendRpcError(res, 405, kTransportError,
               "Method Not Allowed: revision " + std::string(*Header(req, kVersionHeader)) +
                   " has no " + req.head.method + " on the MCP endpoint");
  return true;
}

// The session's standalone stream: the notifications of its tasks once their creating request
// has its answer (Session::AttachStandaloneStream); never a request or a response.
void HttpServer::Impl::GetMcp(const Request& req, Response& res) {
  if (RefuseStateless(req, res)) return;
  if (!CheckProtocolVersion(req, res)) return;
  std::shared_ptr<Session> session = SessionFromHeader(req, res);
  if (!session) return;
  if (AcceptedMode(req, true) != transport::ResponseMode::kEventStream) {
    SendRpcError(res, 406, kTransportError,
                 "Not Acceptable: the stream a GET opens is text/event-stream");
    return;
  }
  // Each holds a thread for as long as its session lives: past the caps, the client polls. A
  // session that has one already (its client reconnects) gives that one's places up first; its
  // stream ends at once (the connection thread serving it wakes for the end).
  using Slots = std::pair<::mcpexec::http::PeerTable::Slot, ::mcpexec::http::PeerTable::Slot>;
  auto acquire = [&]() -> std::optional<Slots> {
    auto peer = standalone_streams_.Acquire(req.remote_addr, options_.max_standalone_streams_per_peer);
    if (!peer) return std::nullopt;
    auto all = standalone_streams_all_.Acquire("", options_.max_standalone_streams);
    if (!all) return std::nullopt;
    return Slots(std::move(*peer), std::move(*all));
  };
  std::optional<Slots> slots = acquire();
  if (!slots && session->EndStandaloneStream()) {
    for (int i = 0; i < 100 && !slots; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      if (std::optional<Slots> now = acquire()) slots.emplace(std::move(*now));
    }
  }
  if (!slots) {
    res.SetHeader("Allow", "POST, DELETE");
    SendRpcError(res, 405, kTransportError,
                 "Method Not Allowed: no standalone stream now (too many are open); poll "
                 "tasks/get for a task's status");
    return;
  }
  std::shared_ptr<transport::MessageQueue> queue = NewReplyQueue(res, true);
  if (!queue) return;
  auto sink = std::make_shared<transport::QueueSink>(queue, transport::SinkMode::kSessionStream);
  // Ended with the session (DELETE, the server's stop); a session with it open does not expire.
  sessions_.TrackReply(std::string(*Header(req, kSessionHeader)), queue);
  log::Info("http standalone stream opened", {{"session", session->Id()}});
  res.status = 200;
  res.SetHeader("Cache-Control", "no-cache");
  res.SetHeader("X-Accel-Buffering", "no");
  res.SetStream(
      "text/event-stream",
      [this, sock = req.socket, queue](http::StreamSink& out) {
        return Pump(sock, *queue, out, nullptr);
      },
      [session, sink, held = std::make_shared<Slots>(std::move(*slots))](bool) {
        session->DetachStandaloneStream(sink.get());
        log::Info("http standalone stream closed", {{"session", session->Id()}});
      });
  // Last, once the stream's end is sure to detach it. The newest wins: a stream the client
  // left (a dropped connection not noticed yet) is ended, not kept in its way.
  session->AttachStandaloneStream(sink, [queue] { queue->Abort(); });
}

void HttpServer::Impl::DeleteMcp(const Request& req, Response& res) {
  if (RefuseStateless(req, res)) return;
  if (!CheckProtocolVersion(req, res) || !SessionFromHeader(req, res)) return;
  RemoveSession(std::string(*Header(req, kSessionHeader)), "deleted by the client");
  res.status = 200;
}

void HttpServer::Impl::GetSse(const Request& req, Response& res) {
  std::optional<::mcpexec::http::PeerTable::Slot> stream_slot =
      streams_.Acquire(req.remote_addr, options_.max_streams_per_peer);
  if (!stream_slot) {
    if (auto held = streams_busy_log_.Allow()) {
      log::Warn("too many event streams from one address: refusing with 503",
                {{"remote", req.remote_addr},
                 {"max_streams_per_peer", options_.max_streams_per_peer},
                 {"held_back", *held}});
    }
    SendRpcError(res, 503, kTransportError,
                 "Service Unavailable: this address has " +
                     std::to_string(options_.max_streams_per_peer) + " event streams open");
    return;
  }
  std::optional<std::string> id = NewSessionId(res);
  if (!id) return;
  std::shared_ptr<transport::MessageQueue> queue = NewReplyQueue(res, true);
  if (!queue) return;
  auto session = server_.NewSession(SessionLabel(*id));
  if (!sessions_.Add(*id, session, queue)) {
    session->Close();
    SendRpcError(res, 503, kTransportError, "Service Unavailable: too many sessions");
    return;
  }
  log::Info("http session opened",
            {{"session", SessionLabel(*id)}, {"transport", "sse"}, {"remote", req.remote_addr}});
  res.status = 200;
  res.SetHeader("Cache-Control", "no-cache");
  res.SetHeader("X-Accel-Buffering", "no");
  auto endpoint_sent = std::make_shared<bool>(false);
  res.SetStream(
      "text/event-stream",
      [this, sock = req.socket, queue, endpoint_sent,
       endpoint = "/messages?sessionId=" + *id](http::StreamSink& out) {
        if (!*endpoint_sent) {
          *endpoint_sent = true;
          return out.Write(transport::SseEvent("endpoint", endpoint));
        }
        return Pump(sock, *queue, out, nullptr);
      },
      [this, id = *id, queue,
       slot = std::make_shared<::mcpexec::http::PeerTable::Slot>(std::move(*stream_slot))](bool) {
        RemoveSession(id, queue->Overflowed()
                              ? "the client fell behind its event stream by more than " +
                                    std::to_string(options_.max_sse_queued_bytes) + " bytes"
                              : std::string("event stream closed"));
      });
}

void HttpServer::Impl::PostMessages(const Request& req, Response& res) {
  std::string body;
  if (!ReadBody(req, res, &body)) return;
  const std::optional<std::string> session_id = http::QueryParam(req.head.query, "sessionId");
  if (!session_id) {
    SendRpcError(res, 400, kTransportError, "Bad Request: the sessionId parameter is required");
    return;
  }
  std::shared_ptr<transport::MessageQueue> stream;
  auto session = sessions_.Find(*session_id, Kind::kLegacy, &stream);
  if (!session) {
    SendRpcError(res, 404, kSessionNotFound, "Session not found");
    return;
  }
  std::optional<CallSteps> steps = StartCallSteps();
  const CallStepsScope in_call(steps);
  session->Handle(body, std::make_shared<transport::QueueSink>(stream, transport::SinkMode::kSessionStream));
  res.status = 202;
  res.SetContent("Accepted", "text/plain");
}

std::optional<std::string> HttpServer::Impl::NewSessionId(Response& res) {
  Result<std::string> id = transport::NewSessionId();
  if (id.ok()) return std::move(id).value();
  log::Error("cannot create a session id", {{"error", id.error().message}});
  SendRpcError(res, 503, kTransportError, "Service Unavailable: cannot create a session");
  return std::nullopt;
}

void HttpServer::Impl::RemoveSession(const std::string& id, std::string_view why) {
  if (sessions_.Remove(id)) {
    log::Info("http session closed", {{"session", SessionLabel(id)}, {"why", why}});
  }
}

HttpServer::HttpServer(Server& server, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(server, std::move(options))) {}

HttpServer::~HttpServer() = default;

Result<int> HttpServer::Start() { return impl_->Start(); }

void HttpServer::Stop() { impl_->Stop(); }

int HttpServer::Port() const { return impl_->Port(); }

}  // namespace mcpexec::mcp
