// `mcp-exec serve`: the MCP server, over stdio (default, as the seed) or HTTP.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "cli/config_flags.h"

namespace mcpexec::cli {

struct ServeOptions {
  ConfigFlags config;
};

CLI::App* AddServeCommand(CLI::App& app, ServeOptions& options);

// Runs the server until the client goes away (stdio) or SIGINT/SIGTERM (HTTP). Returns the
// process exit status: 0 after a clean stop, 1 when the server could not start.
int ServeCommand(const std::string& default_rootfs, const std::string& version,
                 const ServeOptions& options);

}  // namespace mcpexec::cli
