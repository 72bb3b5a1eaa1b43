// `mcp-exec packages`: the package cache (docs/packages.md) as an operator sees it.
//   packages list                 each layer: its packages, size, last use, whether a run holds it
//   packages prune [--max-bytes N | --all] [--downloads]
//                                 removes the least recently used layers no run holds, down to N
//                                 (MCP_EXEC_PACKAGE_CACHE_MAX_BYTES) or all of them; --downloads
//                                 an index's checked wheels too
//   packages prefetch -r FILE [--environment NAME]
//                                 installs the requirements of FILE (one a line, `#` comments) as
//                                 a call naming them would, so that the first call finds them
// All take the configuration flags of `serve`: the same cache, source and limits. `list` takes
// --json.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "cli/config_flags.h"

namespace mcpexec::cli {

struct PackagesOptions {
  ConfigFlags config;
  bool json = false;
  std::optional<std::string> max_bytes;  // prune --max-bytes
  bool all = false;                      // prune --all
  bool downloads = false;                // prune --downloads
  std::string requirements_file;         // prefetch -r
  std::optional<std::string> environment;  // prefetch --environment
  CLI::App* list = nullptr;
  CLI::App* prune = nullptr;
  CLI::App* prefetch = nullptr;
};

// Registers `packages` and its three subcommands.
CLI::App* AddPackagesCommand(CLI::App& app, PackagesOptions& options);

// 0 on success, 1 on failure (said on stderr), 2 for an invalid configuration or argument.
int PackagesCommand(const std::string& default_rootfs, const PackagesOptions& options);

}  // namespace mcpexec::cli
