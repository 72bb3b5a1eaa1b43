// CappedOutput: the program's stdout and stderr, with their combined size capped.
#pragma once

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

 private:
  size_t cap_;
  std::string stdout_, stderr_;
  bool truncated_ = false;
};

}  // namespace mcpexec::sandbox
