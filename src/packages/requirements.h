// The `packages` argument's requirements (docs/packages.md): PEP 508 requirements by name, with
// extras, version specifiers and markers, and nothing that makes pip fetch or build from
// elsewhere: no URL (`name @ url`), no path or archive, no option (`-e`, `--index-url`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace mcpexec::packages {

// The longest requirement accepted, in bytes.
inline constexpr size_t kMaxRequirementBytes = 256;

struct Requirement {
  std::string name;  // PEP 503-normalised: "python-dateutil"
  std::string text;  // as pip is given it: trimmed, with the caller's spelling of the name
  // The same requirement however it was spelt: the normalised name, then the rest without blanks.
  std::string key;
};

// "python-dateutil" for "Python_DateUtil": lower case, every run of '-', '_' and '.' one '-'.
std::string NormalizeName(std::string_view name);

// One requirement; kInvalidArgument with a message that says what is wrong and what is allowed.
Result<Requirement> ParseRequirement(std::string_view text);

}  // namespace mcpexec::packages
