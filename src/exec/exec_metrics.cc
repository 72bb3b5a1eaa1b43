#include "exec/exec_metrics.h"

#include <iterator>
#include <string>
#include <vector>

namespace mcpexec::exec {
namespace {

constexpr Outcome kOutcomes[] = {Outcome::kOk,        Outcome::kExitNonZero, Outcome::kTimeout,
                                 Outcome::kOomKilled, Outcome::kCancelled,   Outcome::kSetupError,
                                 Outcome::kInvalid};

std::vector<std::string> OutcomeNames() {
  std::vector<std::string> names;
  for (const Outcome o : kOutcomes) names.emplace_back(OutcomeName(o));
  return names;
}

}  // namespace

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kExitNonZero:
      return "exit_nonzero";
    case Outcome::kTimeout:
      return "timeout";
    case Outcome::kOomKilled:
      return "oom";
    case Outcome::kCancelled:
      return "cancelled";
    case Outcome::kSetupError:
      return "setup_error";
    case Outcome::kInvalid:
      return "invalid";
  }
  return "unknown";
}

Outcome ClassifyRun(const sandbox::RunResult& run) {
  if (run.outcome == sandbox::Outcome::kCancelled) return Outcome::kCancelled;
  if (run.outcome == sandbox::Outcome::kTimedOut) return Outcome::kTimeout;
  if (run.oom_killed) return Outcome::kOomKilled;
  return run.exit_code == 0 ? Outcome::kOk : Outcome::kExitNonZero;
}

ExecMetrics::ExecMetrics()
    : calls_("outcome", OutcomeNames()),
      durations_(std::vector<double>(std::begin(kDurationBuckets), std::end(kDurationBuckets))) {}

void ExecMetrics::Record(Outcome outcome, std::optional<std::chrono::nanoseconds> duration,
                         uint64_t output_bytes) {
  calls_.Add(OutcomeName(outcome));
  if (duration) durations_.Observe(std::chrono::duration<double>(*duration).count());
  output_bytes_.Add(output_bytes);
}

uint64_t ExecMetrics::Calls(Outcome outcome) const { return calls_.Value(OutcomeName(outcome)); }

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
