// LiveOutput: what a running program wrote since the last notification, shaped for the client:
// bounded, valid UTF-8, and labelled by stream.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/output.h"

namespace mcpexec::exec {

// The most text one update carries: its progress message, and each of its per-stream texts.
inline constexpr size_t kLiveOutputMaxBytes = 4096;

// What one notification round sends.
struct LiveUpdate {
  // Seconds since the run started; strictly greater than in the previous update.
  double progress = 0;
  // For notifications/progress: the output since the previous update, each run of one stream
  // introduced by "[stdout] " or "[stderr] " at the start of a line, after a
  // "[N bytes skipped]" line when there was more than fits; or, when there was no output,
  // "running for 1.5 s, N bytes of output so far".
  std::string message;
  // For notifications/message: the output since the previous update, one entry per stream that
  // wrote (stdout first), each after its own "[N bytes skipped]" line when needed. Empty when
  // there was no output.
  struct StreamText {
    sandbox::Stream stream;
    std::string text;
  };
  std::vector<StreamText> streams;
};

// Collects a program's output as it arrives and hands out what is new. Keeps only the newest
// `max_bytes` of it (less the room for the skip marker) between two updates, so memory and
// message size are bounded whatever the program writes. Output is made valid UTF-8 (U+FFFD for
// ill-formed bytes, as in the result), and a character split between two pieces of output is
// held back until it is complete: it is never split between two updates. Not thread-safe.
class LiveOutput {
 public:
  explicit LiveOutput(size_t max_bytes = kLiveOutputMaxBytes);

  // Adds raw bytes the program wrote to `stream`.
  void Add(sandbox::Stream stream, std::string_view bytes);

  // Takes everything added since the previous Take. `elapsed` is the time since the run
  // started, `output_bytes` the output held so far (for the message when there is nothing new).
  LiveUpdate Take(std::chrono::milliseconds elapsed, size_t output_bytes);

 private:
  struct Run {
    sandbox::Stream stream;
    std::string text;  // valid UTF-8
  };
  static size_t Index(sandbox::Stream stream) { return stream == sandbox::Stream::kStdout ? 0 : 1; }
  void Trim();

  const size_t budget_;  // for the runs, their labels included
  std::deque<Run> runs_;
  size_t used_ = 0;            // the runs' text plus their labels
  uint64_t skipped_[2] = {};   // bytes dropped from each stream since the previous Take
  std::string incomplete_[2];  // the unfinished character at the end of each stream
  double progress_ = 0;
};

}  // namespace mcpexec::exec
