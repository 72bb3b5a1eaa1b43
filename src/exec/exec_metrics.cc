#include "exec/exec_metrics.h"

#include <iterator>
#include <string>
#include <vector>

namespace mcpexec::exec {
namespace {

constexpr CallOutcome kOutcomes[] = {CallOutcome::kOk,        CallOutcome::kExitNonZero, CallOutcome::kTimeout,
                                 CallOutcome::kOomKilled, CallOutcome::kCancelled,   CallOutcome::kSetupError,
                                 CallOutcome::kInvalid};

std::vector<std::string> CallOutcomeNames() {
  std::vector<std::string> names;
  for (const CallOutcome o : kOutcomes) names.emplace_back(CallOutcomeName(o));
  return names;
}

}  // namespace

const char* CallOutcomeName(CallOutcome outcome) {
  switch (outcome) {
    case CallOutcome::kOk:
      return "ok";
    case CallOutcome::kExitNonZero:
      return "exit_nonzero";
    case CallOutcome::kTimeout:
      return "timeout";
    case CallOutcome::kOomKilled:
      return "oom";
    case CallOutcome::kCancelled:
      return "cancelled";
    case CallOutcome::kSetupError:
      return "setup_error";
    case CallOutcome::kInvalid:
      return "invalid";
  }
  return "unknown";
}

CallOutcome ClassifyRun(const sandbox::RunResult& run) {
  if (run.outcome == sandbox::Outcome::kCancelled) return CallOutcome::kCancelled;
  if (run.outcome == sandbox::Outcome::kTimedOut) return CallOutcome::kTimeout;
  if (run.oom_killed) return CallOutcome::kOomKilled;
  return run.exit_code == 0 ? CallOutcome::kOk : CallOutcome::kExitNonZero;
}

ExecMetrics::ExecMetrics()
    : calls_("outcome", CallOutcomeNames()),
      durations_(std::vector<double>(std::begin(kDurationBuckets), std::end(kDurationBuckets))) {}

void ExecMetrics::Record(CallOutcome outcome, std::optional<std::chrono::nanoseconds> duration,
                         uint64_t output_bytes) {
  calls_.Add(CallOutcomeName(outcome));
  if (duration) durations_.Observe(std::chrono::duration<double>(*duration).count());
  output_bytes_.Add(output_bytes);
}

uint64_t ExecMetrics::Calls(CallOutcome outcome) const { return calls_.Value(CallOutcomeName(outcome)); }

void ExecMetrics::Write(metrics::TextWriter& out) const {
  out.Family("mcp_exec_exec_calls_total",
             "exec tool calls by outcome: ok, exit_nonzero (or a signal), timeout, oom, "
             "cancelled, setup_error (no run), invalid (arguments refused)",
             metrics::Type::kCounter);
  calls_.Write(out, "mcp_exec_exec_calls_total");
  out.Family("mcp_exec_exec_duration_seconds",
             "Time from an exec call to its run's end, for calls that reached the engine",
             metrics::Type::kHistogram);
  durations_.Write(out, "mcp_exec_exec_duration_seconds");
  out.Family("mcp_exec_output_bytes_total", "Bytes of stdout and stderr returned by exec calls",
             metrics::Type::kCounter);
  out.Sample("mcp_exec_output_bytes_total", output_bytes_.Value());
}

}  // namespace mcpexec::exec
