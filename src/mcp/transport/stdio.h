// The stdio transport: newline-delimited JSON-RPC on a pair of descriptors, one session.
#pragma once

#include <cstddef>

#include "base/result.h"
#include "mcp/server.h"

namespace mcpexec::mcp {

// Reads messages from `in_fd` until EOF, handing each to one session, and writes every message
// the server sends to `out_fd`, one per line, from a writer thread (LineWriter): while the
// client is more than 4 MiB behind, notifications are dropped, never responses. A line longer
// than `max_message_bytes` is answered with -32600 and skipped. At EOF the session's running
// calls are cancelled (the client went away), what was queued is written, and the function
// returns. Only MCP messages are ever written to `out_fd`.
Result<void> ServeStdio(Server& server, int in_fd, int out_fd, size_t max_message_bytes);

}  // namespace mcpexec::mcp
