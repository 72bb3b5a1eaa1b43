// `mcp-exec serve`: the MCP server, over stdio (default, as the seed) or HTTP.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "cli/config_flags.h"
#include "mcp/tool.h"

namespace mcpexec::cli {

struct ServeOptions {
  ConfigFlags config;
  // Tools served beside exec's: none in mcp-exec; the conformance suite's fixture tools in its
  // test server (tests/conformance/fixture_server.cc).
  std::vector<std::shared_ptr<mcp::Tool>> extra_tools;
};

CLI::App* AddServeCommand(CLI::App& app, ServeOptions& options);

// Who can reach the server, judged from a resolved configuration.
enum class Exposure {
  kStdio,          // only the parent process
  kLoopback,       // HTTP on 127.0.0.0/8 or ::1: this machine's users
  kAuthenticated,  // HTTP off loopback, with a token
  kOpenByChoice,   // HTTP off loopback, no token, MCP_EXEC_ALLOW_UNAUTHENTICATED=1
};

// kInvalidArgument for an MCP_EXEC_ADDR that does not parse, and for HTTP off loopback without
// a token unless MCP_EXEC_ALLOW_UNAUTHENTICATED is set: the message names the token variables
// and the opt-out.
Result<Exposure> CheckExposure(const config::Config& config);

// ResolveConfig, then what only `serve` needs: the token read from MCP_EXEC_AUTH_TOKEN_FILE
// (config::LoadAuthToken) and CheckExposure.
Result<config::Config> ResolveServeConfig(const std::string& default_rootfs,
                                          const config::EnvLookup& env, const ConfigFlags& flags);

// Runs the server until the client goes away (stdio) or SIGINT/SIGTERM (HTTP). Returns the
// process exit status: 0 after a clean stop, 1 when the server could not start.
int ServeCommand(const std::string& default_rootfs, const std::string& version,
                 const ServeOptions& options);

}  // namespace mcpexec::cli
