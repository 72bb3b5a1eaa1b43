// Configuration from the environment: the input is an environment, one NAME=VALUE per line,
// overlaid on the defaults (ApplyEnv) and validated (Validate), then the values derived from a
// valid configuration. The parsers of numbers and byte counts also get every value directly.
// Nothing is read from files (LoadAuthToken is left out: a fuzzed path could name a FIFO).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"

namespace {

using namespace mcpexec::config;

std::map<std::string, std::string> ParseEnv(std::string_view text) {
  std::map<std::string, std::string> env;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    // The environment cannot hold NUL bytes; the first definition wins, as getenv's does.
    const std::string_view value = line.substr(eq + 1);
    env.emplace(std::string(line.substr(0, eq)), std::string(value.substr(0, value.find('\0'))));
  }
  return env;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto env = ParseEnv(std::string_view(reinterpret_cast<const char*>(data), size));
  Config config = Defaults("/opt/mcp-exec/rootfs");
  const EnvLookup lookup = [&env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  if (auto applied = ApplyEnv(lookup, config); applied.ok()) {
    if (Validate(config).ok()) {
      const uint64_t max_message = MaxMessageBytes(config);
      if (max_message < config.max_stdin_bytes) abort();
      for (std::optional<long long> requested :
           {std::optional<long long>(), std::optional<long long>(0),
            std::optional<long long>(-5), std::optional<long long>(1LL << 40)}) {
        const int t = EffectiveTimeoutSeconds(config, requested);
        if (t < 1 || t > config.max_timeout_s) abort();
      }
    }
  } else if (applied.error().message.empty()) {
    abort();  // a refusal names the variable and what it accepts
  }
  for (const auto& [name, value] : env) {
    (void)ParseBytes(value);
    (void)ParseDecimal(value, 0.01, 1024);
    (void)ParseInt(value, -1000, 1000000);
  }
  if (size >= 8) {
    uint32_t mode = 0, owner = 0;
    __builtin_memcpy(&mode, data, 4);
    __builtin_memcpy(&owner, data + 4, 4);
    (void)TokenFileModeProblem(static_cast<mode_t>(mode), static_cast<uid_t>(owner));
  }
  return 0;
}
