// CappedOutput: the program's stdout and stderr, with their combined size capped; DrainPipe:
// the supervisor's bounded read of one output pipe.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace mcpexec::sandbox {

enum class Stream { kStdout, kStderr };

// Keeps bytes in arrival order across both streams until `cap` bytes in total are held; after
// that every byte is dropped and Truncated() is true. Memory use never exceeds `cap` plus one
// character. Not thread-safe.
class CappedOutput {
 public:
  explicit CappedOutput(size_t cap) : cap_(cap) {}

  void Append(Stream stream, std::string_view chunk);

  const std::string& Stdout() const { return stdout_; }
  const std::string& Stderr() const { return stderr_; }
  std::string TakeStdout() { return std::move(stdout_); }
  std::string TakeStderr() { return std::move(stderr_); }
  bool Truncated() const { return truncated_; }
  size_t Held() const { return stdout_.size() + stderr_.size(); }
  // Bytes that can still be appended before the cap.
  size_t Room() const { return cap_ - Held(); }

 private:
  size_t cap_;
  std::string stdout_, stderr_;
  bool truncated_ = false;
};

// The most one DrainPipe call reads by default. A writer that grows its pipe (F_SETPIPE_SZ, up
// to /proc/sys/fs/pipe-max-size, 1 MiB by default) and keeps it full would otherwise keep the
// supervisor reading, away from its deadline and cancel checks, for as long as it likes.
inline constexpr size_t kDrainBudgetBytes = 256 * 1024;

// How a DrainPipe call ended.
enum class DrainEnd {
  kEmpty,   // the pipe has nothing more for now (EAGAIN)
  kMore,    // the budget is spent and the pipe may hold more: drain again after a poll
  kCapped,  // `output` is truncated: nothing more is wanted from either pipe
  kClosed,  // end of file (every writer is gone) or a read error: close the fd
};

// Reads what the non-blocking pipe `fd` holds into `output` as `stream`, at most `budget`
// bytes. Reads no more than one byte past the cap. Returns kCapped at once when `output` is
// already truncated: past the cap the supervisor empties the pipes with DiscardPipe instead.
// Does not close `fd`.
DrainEnd DrainPipe(int fd, Stream stream, CappedOutput& output,
                   size_t budget = kDrainBudgetBytes);

// Past the cap the supervisor empties each pipe at most this often, after growing it to
// kDiscardPipeBytes: a program that goes on writing runs on (up to ~20 MB/s a stream), to its
// own end and exit status, while the supervisor wakes 20 times a second instead of for every
// write.
inline constexpr std::chrono::milliseconds kDiscardInterval{50};
inline constexpr int kDiscardPipeBytes = 1 << 20;  // the default /proc/sys/fs/pipe-max-size

// Grows the pipe (best effort: a smaller pipe only slows the writer down).
void GrowPipeForDiscard(int fd);

// Drops what the non-blocking pipe `fd` holds, at most `budget` bytes, by splicing it to
// `null_fd` (/dev/null, opened for writing): the kernel frees the pages without copying them,
// so emptying costs the supervisor a fraction of what filling cost the program. kEmpty, kMore
// or kClosed as for DrainPipe. Does not close `fd`.
DrainEnd DiscardPipe(int fd, int null_fd, size_t budget = kDiscardPipeBytes);

}  // namespace mcpexec::sandbox
