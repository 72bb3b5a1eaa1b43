// The descriptors `serve` may hold open besides its HTTP connections, from its configuration:
// what mcp::HttpServer keeps out of the open-file limit when it fits its connection caps into
// it (HttpServerOptions::descriptor_reserve), and what every transport checks its open-file
// limit against at start (RaiseOpenFileLimit). Pure: no system call.
#pragma once

#include <cstddef>

#include "config/config.h"
#include "limits/limits.h"

namespace mcpexec::cli {

// The most descriptors the server process holds at once for everything but HTTP connections:
// its base (log, listener, event loop), MCP_EXEC_MAX_CONCURRENCY runs or session calls being
// set up, running or walking their outputs, the calls running or queued (MCP_EXEC_MAX_QUEUE),
// MCP_EXEC_MAX_SESSIONS open sessions (with the zygote each keeps), the warm engine of each of
// the `environments` offered (its zygotes and up to MCP_EXEC_POOL_MAX ready sandboxes) and the
// teardown's backlog, each sandbox with the cgroup files `backend` keeps open. `config` is
// resolved (ResolveConfig: the CPU count as MCP_EXEC_MAX_CONCURRENCY). A sum of maxima: the
// worst case, not the usual load.
// The per-unit counts, measured, are in descriptor_reserve.cc.
size_t DescriptorReserve(const config::Config& config, size_t environments,
                         limits::Backend backend);

}  // namespace mcpexec::cli
