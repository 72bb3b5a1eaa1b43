// The seccomp profile parser (Docker's JSON format), and libseccomp compilation of every profile
// it accepts, as `MCP_EXEC_SECCOMP_PROFILE=/path` would at start-up. Nothing is installed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "sandbox/seccomp_filter.h"
#include "sandbox/seccomp_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // What LoadSeccompProfile does with a file's text: parse without exceptions.
  const auto document = nlohmann::json::parse(data, data + size, nullptr, false);
  if (document.is_discarded()) return 0;
  auto profile = mcpexec::sandbox::ParseSeccompProfile(document);
  if (!profile.ok()) {
    if (profile.error().message.empty()) abort();  // every refusal says where and why
    return 0;
  }
  auto filter = mcpexec::sandbox::CompileSeccompFilter(*profile);
  if (!filter.ok() && filter.error().message.empty()) abort();
  return 0;
}
