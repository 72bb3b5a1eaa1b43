// Random identifiers from the kernel's generator.
#pragma once

#include <cstddef>
#include <string>

#include "base/result.h"

namespace mcpexec {

// `bytes` bytes of getrandom(2).
Result<std::string> RandomBytes(size_t bytes);

// `bytes` bytes of getrandom(2) as 2 * `bytes` lowercase hex digits.
Result<std::string> RandomHex(size_t bytes);

}  // namespace mcpexec
