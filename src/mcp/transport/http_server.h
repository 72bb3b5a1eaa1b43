// HttpServer: the MCP server over HTTP. Serves, on one port:
//   /mcp       Streamable HTTP (2025-11-25): POST one JSON-RPC message, answered with JSON or an
//              SSE stream (by the Accept header); DELETE ends the session; GET is answered 405
//              (this server never sends unsolicited messages, so it offers no GET stream).
//   /sse       legacy HTTP+SSE (2024-11-05): an event stream whose first event names the POST
//              endpoint, /messages?sessionId=<id>; replies arrive on the stream.
//   /healthz   200 "ok", without auth (liveness).
//   /readyz    200 when HttpServerOptions::readiness finds nothing wrong, else 503 with what is;
//              without auth.
//   /metrics   Prometheus text format: the HTTP server's own families, then those of
//              HttpServerOptions::write_metrics; needs the token unless metrics_need_token is off.
// Every other request needs the token (X-MCP-AUTH or Authorization: Bearer) when one is set,
// and an Origin, if it carries one, from the allow-list.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "http/client_address.h"
#include "mcp/server.h"
#include "mcp/transport/http_checks.h"
#include "metrics/text_format.h"

namespace mcpexec::mcp {

// A condition /readyz checks that does not hold: its name ("rootfs", "engine") and why.
struct NotReady {
  std::string check;
  std::string reason;
};

// What connections get even where the open-file limit leaves less after the reserve
// (HttpServerOptions::descriptor_reserve): two requests served at once (a socket and its reply
// queue's eventfd each) and four waiting, without which the server answers nobody.
inline constexpr size_t kMinConnectionDescriptors = 8;

struct HttpServerOptions {
  transport::ListenAddress listen;  // from transport::ParseListenAddress(MCP_EXEC_ADDR)
  std::string auth_token;      // empty = no auth (serve refuses that off loopback)
  bool metrics_need_token = true;  // false: /metrics without the token (MCP_EXEC_METRICS_AUTH)
  // Writes the /metrics families that are not the HTTP server's own, on the scrape's thread.
  // Must be thread-safe; nullptr: none.
  std::function<void(metrics::TextWriter&)> write_metrics;
  // What keeps the server from being ready (empty: ready), on the probe's thread. Must be
  // thread-safe; nullptr: always ready.
  std::function<std::vector<NotReady>()> readiness;
  // Origins allowed besides http(s)://localhost|127.0.0.1|[::1]:any; "*" allows all.
  std::vector<std::string> allowed_origins;
  size_t max_body_bytes = 8u << 20;  // a larger POST body gets 413 before it is read

  std::chrono::milliseconds read_timeout{10000};        // one read while receiving a request
  std::chrono::milliseconds request_timeout{60000};     // receiving a whole request, body included
  std::chrono::milliseconds write_timeout{10000};       // one write; a client that stops reading
                                                        // for longer is disconnected
  // Bytes per second: a body, or a write of a response, slower than this (after its read or
  // write timeout as a grace) loses its connection. 0: no minimum.
  size_t min_transfer_rate = 1024;
  std::chrono::milliseconds keep_alive_timeout{30000};  // idle connection between requests
  std::chrono::milliseconds sse_keep_alive{15000};      // comment on an idle event stream

  // Descriptors the rest of the process may hold open besides connections (`serve`: its
  // sessions, runs, warm engines and log, cli::DescriptorReserve); the connection caps below
  // are fitted into the open-file limit less this. The default is a process that holds
  // nothing but its log, listener and event loop.
  size_t descriptor_reserve = 32;
  size_t max_connections = 1024;  // requests served at once (each holds a thread); beyond: 503
  // Connections waiting for a request (a descriptor each); beyond, the one idle for longest,
  // preferring those with no admitted request, is closed to make room.
  size_t max_idle_connections = 8192;
  // Open connections from one IP address; beyond, its oldest waiting one (unproven first) is
  // closed to make room, and only when all are being served is a newcomer answered 503.
  size_t max_connections_per_peer = 256;
  // Waiting connections with no admitted request (no valid token yet); beyond, the oldest of
  // them is closed to make room.
  size_t max_unproven_connections = 4096;
  // Requests from one IP address served at once (streams and running calls); beyond: 503.
  size_t max_served_per_peer = 64;
  // Requests of one Streamable HTTP session open at once (running calls, their streams): a part of
  // its address's share, so that one session cannot take the share of every other session from
  // the same address (clients behind one NAT, agents on one host); beyond: 429.
  size_t max_open_per_session = 16;
  // Legacy SSE event streams from one IP address open at once, which live as long as their
  // client keeps them: half its share of the threads, so that streams (a flood of them from the
  // client's own address included) leave the rest of the share to requests; beyond: 503.
  size_t max_streams_per_peer = 32;
  // Streamable HTTP standalone streams (a GET on /mcp, which the official 1.x SDK opens for every
  // session, each holding a thread for the session's life) from one IP address and in all;
  // beyond: 405, which clients take for "no standalone stream" and poll instead.
  size_t max_standalone_streams_per_peer = 16;
  size_t max_standalone_streams = 256;
  // Reverse proxies whose X-Forwarded-For / Forwarded are believed (MCP_EXEC_TRUSTED_PROXIES);
  // none by default.
  ::mcpexec::http::TrustedProxies trusted_proxies;
  // Idle time, and time to send a request head, for a connection with no admitted request yet.
  std::chrono::milliseconds untrusted_idle_timeout{5000};
  size_t max_sessions = 4096;     // open sessions; beyond (after expiring idle ones): 503
  // A Streamable HTTP session unused for this long, with nothing running (its standalone stream
  // counts as running), is closed. Legacy SSE sessions live as long as their stream.
  std::chrono::milliseconds session_idle_timeout{std::chrono::hours(1)};
  size_t max_pending_notification_bytes = 4u << 20;  // per stream, for clients that stop reading
  // Everything a legacy SSE stream may hold unread; a client that falls further behind loses its
  // stream and its session.
  size_t max_sse_queued_bytes = 32u << 20;
};

class HttpServer {
 public:
  // `server` must outlive this object.
  HttpServer(Server& server, HttpServerOptions options);
  // Stops (see Stop()).
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, then serves on a background thread. Returns the bound port (the chosen one when the
  // options ask for port 0). kUnavailable when the address cannot be bound; call once.
  Result<int> Start();

  // Stops accepting, ends every open stream and connection (waiting for their threads), then
  // closes every session, which cancels the calls still running. Idempotent; thread-safe; not
  // to be called from a handler.
  void Stop();

  // The bound port, 0 before Start().
  int Port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mcpexec::mcp
