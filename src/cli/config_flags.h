// The command-line flags that mirror configuration variables: each flag sets the same value
// its MCP_EXEC_* variable does, and flags win over the environment.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>

#include "base/result.h"
#include "config/config.h"

namespace mcpexec::cli {

// Flag values by the variable they stand for ("MCP_EXEC_ROOTFS" -> "/srv/rootfs").
struct ConfigFlags {
  std::map<std::string, std::string> values;
};

enum class Command { kRun, kServe };

// Adds the flags that `command` takes.
void AddConfigFlags(CLI::App* app, Command command, ConfigFlags& flags);

// Defaults, then the environment, then the flags; validated. Sets the process's log level to
// the configuration's (MCP_EXEC_LOG_LEVEL), so that every command logs as configured.
Result<config::Config> ResolveConfig(const std::string& default_rootfs,
                                     const config::EnvLookup& env, const ConfigFlags& flags);

}  // namespace mcpexec::cli
