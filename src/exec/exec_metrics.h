// ExecMetrics: what the exec tool's calls came to, for /metrics. Metadata only: outcomes,
// durations and byte counts, never code, stdin or output.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "metrics/instruments.h"
#include "metrics/text_format.h"
#include "sandbox/run_result.h"

namespace mcpexec::exec {

enum class CallOutcome {
  kOk,           // ran and exited 0
  kExitNonZero,  // ran and exited non-zero, or died of a signal
  kTimeout,      // killed at its wall-clock limit
  kOomKilled,    // killed by the memory limit
  kCancelled,    // cancelled by the client (or its disconnection) before or while it ran
  kSetupError,   // no run: the sandbox could not be made or the program started
  kInvalid,      // no run: the arguments were refused
};

// The `outcome` label: ok, exit_nonzero, timeout, oom, cancelled, setup_error, invalid.
const char* CallOutcomeName(CallOutcome outcome);

// A finished run's outcome; the first that holds of cancelled, timeout, oom, then the exit code.
CallOutcome ClassifyRun(const sandbox::RunResult& run);

// Buckets of mcp_exec_exec_duration_seconds: 5 ms to 300 s (the longest timeout by default).
inline constexpr double kDurationBuckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                              2.5,   5,    10,    30,   60,  120, 300};

// Thread-safe.
class ExecMetrics {
 public:
  ExecMetrics();

  // One call. `duration`: from the request to the run's end, for calls that reached the engine
  // (nullopt for kInvalid, and calls cancelled before they started). `output_bytes`: the
  // stdout and stderr returned.
  void Record(CallOutcome outcome, std::optional<std::chrono::nanoseconds> duration,
              uint64_t output_bytes = 0);

  uint64_t Calls(CallOutcome outcome) const;
  uint64_t OutputBytes() const { return output_bytes_.Value(); }
  metrics::Histogram::Snapshot Durations() const { return durations_.Take(); }

  // mcp_exec_exec_calls_total, mcp_exec_exec_duration_seconds, mcp_exec_output_bytes_total.
  void Write(metrics::TextWriter& out) const;

 private:
  metrics::LabeledCounter calls_;
  metrics::Histogram durations_;
  metrics::Counter output_bytes_;
};

}  // namespace mcpexec::exec
