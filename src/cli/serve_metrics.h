// The /metrics families of `serve` beyond the HTTP server's own: build, exec calls, the worker
// pool, the engine and the limits backend.
#pragma once

#include <string>

#include "engine/engine.h"
#include "exec/exec_metrics.h"
#include "limits/limits.h"
#include "mcp/worker_pool.h"
#include "metrics/text_format.h"

namespace mcpexec::cli {

// What the families are read from; all must outlive the server. Reading them is thread-safe.
struct ServeMetricsSources {
  std::string version;
  const exec::ExecMetrics* exec = nullptr;
  const mcp::WorkerPool* pool = nullptr;
  const engine::Engine* engine = nullptr;
  limits::Backend limits_backend = limits::Backend::kRlimit;
};

void WriteServeMetrics(metrics::TextWriter& out, const ServeMetricsSources& sources);

}  // namespace mcpexec::cli
