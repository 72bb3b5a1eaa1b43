// The `exec` tool's arguments as one table: the tool's input schema, the reading of a call's
// arguments, the checks against the configuration and the limits the tool description states
// all come from it, so that an argument is added, bounded or renamed in one place.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "config/config.h"
#include "exec/environments.h"
#include "sandbox/workspace_files.h"

namespace mcpexec::exec {

// A program and its inputs, as a caller (the tool or `mcp-exec run`) gives them.
struct ExecRequest {
  std::string code;
  std::string stdin_data;
  std::optional<long long> timeout_s;          // nullopt: the configured default
  std::vector<sandbox::InputFile> files = {};  // written under /tmp before the program starts
};

// What the call's `session` argument asks for.
struct SessionArgument {
  bool present = false;
  bool open = false;   // "new"
  std::string handle;  // otherwise
};

// A call's arguments, read but not yet checked against the configuration.
struct ExecArguments {
  ExecRequest request;
  SessionArgument session;
  std::string environment;  // "": the default environment (or a session's own)
  std::vector<std::string> packages;  // requirements to add (docs/packages.md); unchecked
};

// One argument of `exec`.
struct ArgumentSpec {
  const char* name;
  bool required;
  // What a value of the wrong type is told, after the name: "must be a string".
  const char* must;
  // The property's JSON schema under this configuration and the environments offered.
  nlohmann::json (*schema)(const config::Config& config, const Offer& offer);
  // Reads a value that is present and not null into `out`; errors are for the client.
  Result<void> (*read)(const ArgumentSpec& self, const nlohmann::json& value, ExecArguments& out);
  // Checks what was read against the configuration's bounds; nullptr when there are none.
  Result<void> (*check)(const config::Config& config, const ExecRequest& request);
  // The bound in words, for the tool description ("at most 300 s"); nullptr when none.
  std::string (*bound)(const config::Config& config);
};

// Every argument, in the order messages list them.
std::span<const ArgumentSpec> Arguments();

// The bound of the argument `name` in words (ArgumentSpec::bound), "" when it has none.
std::string ArgumentBound(const char* name, const config::Config& config);

// The tool's inputSchema under this configuration; `environment` is an enum of `offer`'s names
// (of "default" alone when it has none).
nlohmann::json InputSchema(const config::Config& config, const Offer& offer = {});

// Reads a call's arguments (a JSON object) by the table: types, required and unknown
// arguments. Bounds are ValidateRequest's.
Result<ExecArguments> ReadArguments(const nlohmann::json& arguments);

// A request that passed ValidateRequest: what running takes, so that nothing runs unchecked and
// nothing is checked twice.
class ValidRequest {
 public:
  const ExecRequest& Get() const { return request_; }
  const ExecRequest* operator->() const { return &request_; }

 private:
  friend Result<ValidRequest> ValidateRequest(const config::Config& config, ExecRequest request);
  explicit ValidRequest(ExecRequest request) : request_(std::move(request)) {}

  ExecRequest request_;
};

// Each argument's check (ArgumentSpec::check), in table order: empty code, stdin over
// MCP_EXEC_MAX_STDIN_BYTES, input files past their limits or with bad paths
// (ValidateInputFiles) are invalid input.
Result<ValidRequest> ValidateRequest(const config::Config& config, ExecRequest request);

// "16 MiB", "4 KiB" or "1000 bytes": whole units only.
std::string ByteCount(uint64_t n);

}  // namespace mcpexec::exec
