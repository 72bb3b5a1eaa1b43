#include "sandbox/output.h"

#include "base/utf8.h"

namespace mcpexec::sandbox {

void CappedOutput::Append(Stream stream, std::string_view chunk) {
  if (chunk.empty()) return;
  if (truncated_) return;
  std::string& out = stream == Stream::kStdout ? stdout_ : stderr_;
  const size_t room = cap_ - Held();
  if (chunk.size() <= room) {
    out.append(chunk);
    return;
  }
  // Cut on a character boundary so that truncation itself adds no replacement character.
  out.append(chunk.substr(0, Utf8SafeCut(chunk, room)));
  truncated_ = true;
}

}  // namespace mcpexec::sandbox
