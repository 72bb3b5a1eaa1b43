// Base64 (RFC 4648 section 4, the standard alphabet with padding): files in and out of a run.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mcpexec {

std::string Base64Encode(std::string_view bytes);

// The bytes `text` encodes, or nullopt when it is not canonical base64: a character outside the
// alphabet (whitespace included), a length that is not a multiple of 4, padding anywhere but at
// the end, or padding bits that are not zero.
std::optional<std::string> Base64Decode(std::string_view text);

// The length of Base64Encode's result for `n` bytes.
constexpr size_t Base64Length(size_t n) { return (n + 2) / 3 * 4; }

}  // namespace mcpexec
