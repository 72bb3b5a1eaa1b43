// UTF-8 repair for program output on its way into JSON.
#pragma once

#include <string>
#include <string_view>

namespace mcpexec {

// Returns `bytes` with every ill-formed sequence replaced by U+FFFD, following the
// "maximal subpart" practice of Unicode 15 section 3.9 (the one WHATWG and Python use):
// overlongs, surrogates, code points above U+10FFFF and truncated sequences are all replaced.
// Valid input is returned unchanged.
std::string RepairUtf8(std::string_view bytes);

// Length of the longest prefix of `bytes` that does not end inside a multi-byte sequence
// that could still be completed. Used to cut output at a byte limit without splitting a
// character.
size_t Utf8SafeCut(std::string_view bytes, size_t limit);

// Length of `bytes` without a multi-byte sequence at its end that more bytes could still
// complete (0 to 3 bytes shorter). Used to hold the end of one chunk of a stream back until the
// next arrives, so that repairing chunk by chunk gives what repairing the whole stream would.
size_t Utf8CompleteLength(std::string_view bytes);

}  // namespace mcpexec
