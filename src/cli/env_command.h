// `mcp-exec env`: the environments (docs/environments.md) as an operator sees them.
//   env list         each environment a recipe or an image names: offered or not, built or not,
//                    its image, size on disk, recipe hash and package count
//   env show NAME    what a program in NAME can import (packages and versions), its preloads
//                    and variables
//   env build NAME   builds NAME's image with the rootfs tool (tools/build-rootfs, installed as
//                    mcp-exec-build-rootfs), whose progress it shows
// `list` and `show` take --json. All take the configuration flags of `serve`, so that they see
// the images and the offer a server with the same settings would.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/config_flags.h"
#include "exec/environments.h"

namespace mcpexec::cli {

struct EnvOptions {
  ConfigFlags config;
  std::string name;  // show, build
  bool json = false;
  bool force = false;  // build
  CLI::App* list = nullptr;
  CLI::App* show = nullptr;
  CLI::App* build = nullptr;
};

// Registers `env` and its three subcommands.
CLI::App* AddEnvCommand(CLI::App& app, EnvOptions& options);

// One line of `env list`.
struct EnvStatus {
  std::string name;
  std::string image;   // where the server looks for it
  bool offered = false;
  bool built = false;  // its image reads as an environment image
  std::string problem;  // why it is not offered or not usable; "" when it is fine
  std::optional<exec::Environment> environment;  // when built
  std::optional<uint64_t> disk_bytes;             // when built
};

// Every environment of `names` (recipes and images) and of the offer, by name.
std::vector<EnvStatus> GatherEnvStatus(const config::Config& config,
                                       const std::vector<std::string>& recipe_names);

// 0 on success, 1 on failure (said on stderr), 2 for an invalid configuration or name.
int EnvCommand(const std::string& default_rootfs, const std::string& build_tool,
               const EnvOptions& options);

}  // namespace mcpexec::cli
