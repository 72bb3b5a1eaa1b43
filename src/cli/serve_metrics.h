// The /metrics families of `serve` beyond the HTTP server's own: build, exec calls, the worker
// pool, the engine, each environment's engine and its memory, the teardown of finished runs,
// and the limits backend.
#pragma once

#include <string>

#include "engine/engine.h"
#include "exec/environment_engines.h"
#include "exec/exec_metrics.h"
#include "limits/limits.h"
#include "mcp/subscriptions.h"
#include "mcp/tasks.h"
#include "mcp/worker_pool.h"
#include "metrics/text_format.h"
#include "sandbox/teardown.h"

namespace mcpexec::cli {

// What the families are read from; all must outlive the server. Reading them is thread-safe.
struct ServeMetricsSources {
  std::string version;
  const exec::ExecMetrics* exec = nullptr;
  const mcp::WorkerPool* pool = nullptr;
  const engine::Engine* engine = nullptr;
  limits::Backend limits_backend = limits::Backend::kRlimit;
  // Each offered environment's engine and its memory at rest; none when null.
  const exec::EnvironmentEngines* environments = nullptr;
  // The teardown of runs after their answer; none when null.
  const sandbox::Teardown* teardown = nullptr;
  // Calls run as MCP tasks; none when null.
  const mcp::TaskStore* tasks = nullptr;
  // The open subscriptions/listen streams; none when null.
  const mcp::Subscriptions* subscriptions = nullptr;
};

void WriteServeMetrics(metrics::TextWriter& out, const ServeMetricsSources& sources);

}  // namespace mcpexec::cli
