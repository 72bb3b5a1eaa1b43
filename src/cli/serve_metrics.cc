#include "cli/serve_metrics.h"

namespace mcpexec::cli {

using metrics::Type;

void WriteServeMetrics(metrics::TextWriter& out, const ServeMetricsSources& s) {
  out.Family("mcp_exec_build_info", "The running mcp-exec: its version as a label, value 1",
             Type::kGauge);
  out.Sample("mcp_exec_build_info", {{"version", s.version}}, uint64_t{1});

  s.exec->Write(out);

  const mcp::WorkerPool::Stats pool = s.pool->GetStats();
  out.Family("mcp_exec_workers", "Worker threads: runs at once (MCP_EXEC_MAX_CONCURRENCY)",
             Type::kGauge);
  out.Sample("mcp_exec_workers", static_cast<uint64_t>(s.pool->Workers()));
  out.Family("mcp_exec_queue_depth", "Tool calls waiting for a worker (at most MCP_EXEC_MAX_QUEUE)",
             Type::kGauge);
  out.Sample("mcp_exec_queue_depth", static_cast<uint64_t>(pool.queued));
  out.Family("mcp_exec_runs_in_flight", "Tool calls a worker is running now", Type::kGauge);
  out.Sample("mcp_exec_runs_in_flight", static_cast<uint64_t>(pool.running));
  out.Family("mcp_exec_calls_rejected_busy_total",
             "Tool calls refused as busy: every worker running and the queue full",
             Type::kCounter);
  out.Sample("mcp_exec_calls_rejected_busy_total", pool.rejected);

  const engine::EngineState engine = s.engine->State();
  out.Family("mcp_exec_engine_info", "The engine that runs the sandboxes (cold, pool, zygote), value 1",
             Type::kGauge);
  out.Sample("mcp_exec_engine_info", {{"engine", engine.name}}, uint64_t{1});
  out.Family("mcp_exec_engine_sandboxes_ready", "Sandboxes prepared and waiting for a run",
             Type::kGauge);
  out.Sample("mcp_exec_engine_sandboxes_ready", static_cast<uint64_t>(engine.ready));
  out.Family("mcp_exec_engine_sandboxes_target",
             "Sandboxes the engine keeps ready now: MCP_EXEC_POOL_SIZE, up to MCP_EXEC_POOL_MAX "
             "after a burst (0 for cold)",
             Type::kGauge);
  out.Sample("mcp_exec_engine_sandboxes_target", static_cast<uint64_t>(engine.target));
  if (engine.zygote) {
    out.Family("mcp_exec_zygote_alive", "1 while a zygote runs and waits for forks, else 0",
               Type::kGauge);
    out.Sample("mcp_exec_zygote_alive", uint64_t{engine.zygote_alive ? 1u : 0u});
    out.Family("mcp_exec_zygote_forks_total", "Sandboxes forked from every zygote since start",
               Type::kCounter);
    out.Sample("mcp_exec_zygote_forks_total", engine.zygote_forks);
  }

  if (s.environments != nullptr) {
    using State = exec::EnvironmentEngines::EnvironmentState;
    const std::vector<State> environments = s.environments->States();
    // One gauge a family, one sample an environment.
    const auto per_environment = [&](std::string_view name, std::string_view help,
                                     uint64_t (*value)(const State&)) {
      out.Family(name, help, Type::kGauge);
      for (const State& e : environments) out.Sample(name, {{"environment", e.name}}, value(e));
    };
    per_environment("mcp_exec_environment_engine_ready",
                    "1 while the environment's own engine runs; 0 while its runs are cold (not "
                    "started yet, or released after MCP_EXEC_ENVIRONMENT_IDLE_S)",
                    [](const State& e) { return uint64_t{e.started ? 1u : 0u}; });
    per_environment("mcp_exec_environment_memory_rss_bytes",
                    "Resident memory of the environment's engine at rest, summed over its zygote "
                    "and prepared sandboxes (shared pages counted in each process)",
                    [](const State& e) { return e.memory.rss_bytes; });
    per_environment("mcp_exec_environment_memory_pss_bytes",
                    "Proportional memory of the environment's engine at rest, summed over its "
                    "zygote and prepared sandboxes (a page shared by N processes counts 1/N in "
                    "each)",
                    [](const State& e) { return e.memory.pss_bytes; });
  }

  if (s.teardown != nullptr) {
    const sandbox::Teardown::Stats teardown = s.teardown->GetStats();
    out.Family("mcp_exec_teardown_backlog",
               "Finished runs whose init's exit and cgroup removal are still pending (at most " +
                   std::to_string(sandbox::Teardown::kMaxPending) + ")",
               Type::kGauge);
    out.Sample("mcp_exec_teardown_backlog", teardown.pending);
    out.Family("mcp_exec_teardowns_total", "Finished runs torn down since start",
               Type::kCounter);
    out.Sample("mcp_exec_teardowns_total", teardown.completed);
    out.Family("mcp_exec_teardowns_inline_total",
               "Of those, torn down on the request path because the backlog was full",
               Type::kCounter);
    out.Sample("mcp_exec_teardowns_inline_total", teardown.inline_);
    out.Family("mcp_exec_teardown_failures_total",
               "Teardowns whose init could not be reaped or whose cgroup could not be removed "
               "(each one logged)",
               Type::kCounter);
    out.Sample("mcp_exec_teardown_failures_total", teardown.failed);
  }

  if (s.tasks != nullptr) {
    const mcp::TaskStore::Stats tasks = s.tasks->GetStats();
    out.Family("mcp_exec_tasks_running", "Calls run as MCP tasks that are running now",
               Type::kGauge);
    out.Sample("mcp_exec_tasks_running", tasks.running);
    out.Family("mcp_exec_tasks_kept",
               "Tasks kept, running or ended with their result (at most MCP_EXEC_MAX_TASKS)",
               Type::kGauge);
    out.Sample("mcp_exec_tasks_kept", tasks.kept);
    out.Family("mcp_exec_task_result_bytes",
               "Bytes of ended tasks' results kept (at most MCP_EXEC_TASK_RESULTS_BYTES)",
               Type::kGauge);
    out.Sample("mcp_exec_task_result_bytes", tasks.result_bytes);
    out.Family("mcp_exec_tasks_created_total", "Tasks created since start", Type::kCounter);
    out.Sample("mcp_exec_tasks_created_total", tasks.created);
    out.Family("mcp_exec_tasks_refused_total",
               "Task creations refused by a limit on running tasks", Type::kCounter);
    out.Sample("mcp_exec_tasks_refused_total", tasks.refused);
    out.Family("mcp_exec_tasks_dropped_total",
               "Ended tasks dropped before their TTL to stay within the limits", Type::kCounter);
    out.Sample("mcp_exec_tasks_dropped_total", tasks.dropped);
  }
  if (s.subscriptions != nullptr) {
    out.Family("mcp_exec_subscriptions_open",
               "subscriptions/listen streams open now (2026-07-28)", Type::kGauge);
    out.Sample("mcp_exec_subscriptions_open", s.subscriptions->OpenCount());
  }

  out.Family("mcp_exec_limits_backend_info",
             "The backend enforcing each run's limits (cgroup2, cgroup1, rlimit), value 1",
             Type::kGauge);
  out.Sample("mcp_exec_limits_backend_info", {{"backend", limits::BackendName(s.limits_backend)}},
             uint64_t{1});
}

}  // namespace mcpexec::cli
