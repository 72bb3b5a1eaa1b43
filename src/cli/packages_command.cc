#include "cli/packages_command.h"

#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/run_command.h"
#include "exec/exec.h"
#include "exec/packages_config.h"
#include "limits/limits.h"
#include "log/log.h"

namespace mcpexec::cli {
namespace {

using nlohmann::json;

std::string Packages(const packages::LayerInfo& layer) {
  std::string out;
  for (const packages::Installed& p : layer.packages) {
    out += (out.empty() ? "" : " ") + p.name + "==" + p.version;
  }
  return out;
}

json LayerJson(const packages::LayerInfo& layer) {
  return {{"key", layer.key},
          {"environment", layer.environment},
          {"bytes", layer.bytes},
          {"last_used", log::IsoTime(layer.last_used)},
          {"in_use", layer.in_use},
          {"packages", exec::PackagesJson(layer.packages)}};
}

// Requirements, one a line; blank lines and `#` comments ignored. Options (`-r`, `-e`,
// `--index-url`) are refused by the requirements' own check.
Result<std::vector<std::string>> ReadRequirements(const std::string& path) {
  std::ifstream in(path);
  if (!in) return MakeError(ErrorCode::kNotFound, "cannot read the requirements file " + path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (const size_t hash = line.find(" #"); hash != std::string::npos) line.resize(hash);
    line.erase(0, line.find_first_not_of(" \t\r"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty() || line[0] == '#') continue;
    out.push_back(line);
  }
  if (out.empty()) return MakeError(ErrorCode::kInvalidArgument, path + " names no requirement");
  return out;
}

int Prefetch(const config::Config& config, const PackagesOptions& options,
             packages::PackageLayers& layers) {
  auto requested = ReadRequirements(options.requirements_file);
  if (!requested.ok()) {
    std::cerr << "mcp-exec: " << requested.error().message << "\n";
    return 2;
  }
  RunOptions run;
  run.environment = options.environment;
  run.config = options.config;
  auto environment = ChooseRunEnvironment(config, run);
  if (!environment.ok()) {
    std::cerr << "mcp-exec: " << ErrorText(environment.error()) << "\n";
    return 1;
  }
  packages::InstallerHooks hooks;
  hooks.on_progress = [](std::chrono::milliseconds elapsed) {
    std::cerr << "mcp-exec: installing, " << elapsed.count() / 1000 << " s\n";
  };
  auto layer = exec::PrepareLayer(&layers, config, *environment, *requested, hooks);
  if (!layer.ok()) {
    std::cerr << "mcp-exec: " << ErrorText(layer.error()) << "\n";
    return layer.error().code == ErrorCode::kInvalidArgument ? 2 : 1;
  }
  std::cout << json{{"environment", environment->name},
                    {"layer", layer->key},
                    {"installed_now", layer->installed_now},
                    {"packages", exec::PackagesJson(layer->packages)}}
                   .dump()
            << std::endl;
  return 0;
}

}  // namespace

CLI::App* AddPackagesCommand(CLI::App& app, PackagesOptions& options) {
  CLI::App* packages = app.add_subcommand(
      "packages", "The package cache of the packages argument (docs/packages.md)");
  packages->require_subcommand(1);
  packages->fallthrough();
  AddConfigFlags(packages, Command::kServe, options.config);
  options.list = packages->add_subcommand(
      "list", "Each installed layer: its packages, size, last use, whether a run holds it");
  options.list->add_flag("--json", options.json, "one JSON array, an object per layer");
  options.prune = packages->add_subcommand(
      "prune", "Remove the least recently used layers that no run holds");
  auto* max = options.prune->add_option(
      "--max-bytes", options.max_bytes,
      "down to this size, all layers together (default MCP_EXEC_PACKAGE_CACHE_MAX_BYTES)");
  options.prune->add_flag("--all", options.all, "every layer no run holds")->excludes(max);
  options.prune->add_flag("--downloads", options.downloads,
                          "an index's checked wheels too (fetched again when needed)");
  options.prefetch = packages->add_subcommand(
      "prefetch", "Install a requirements file's packages now, as a call naming them would");
  options.prefetch->add_option("-r,--requirements", options.requirements_file,
                               "one requirement a line; `#` starts a comment")
      ->required();
  options.prefetch->add_option("--environment", options.environment,
                               "the environment they are for (default "
                               "MCP_EXEC_DEFAULT_ENVIRONMENT's)")
      ->type_name("NAME");
  packages->footer("The configuration flags and MCP_EXEC_* variables are those of `serve`: the "
                   "same cache, package source and limits.");
  return packages;
}

int PackagesCommand(const std::string& default_rootfs, const PackagesOptions& options) {
  auto config = ResolveConfig(default_rootfs, config::ProcessEnv(), options.config);
  if (!config.ok()) {
    std::cerr << "mcp-exec: " << config.error().message << "\n";
    return 2;
  }
  if (config->wheelhouse.empty() && config->package_index.empty()) {
    std::cerr << "mcp-exec: packages are off: name a package index in MCP_EXEC_PACKAGE_INDEX "
                 "or a directory of wheels in MCP_EXEC_WHEELHOUSE (docs/packages.md)\n";
    return 2;
  }
  std::optional<uint64_t> max_bytes;
  if (options.max_bytes) {
    auto parsed = config::ParseBytes(*options.max_bytes);
    if (!parsed.ok()) {
      std::cerr << "mcp-exec: --max-bytes: " << parsed.error().message << "\n";
      return 2;
    }
    max_bytes = *parsed;
  }
  // Only prefetch runs a sandbox; list and prune need no limits backend, which as root would
  // set up cgroups for nothing.
  std::shared_ptr<limits::LimitsBackend> backend;
  if (options.prefetch->parsed()) {
    auto opened = limits::OpenBackend(exec::BackendOptionsFor(*config));
    if (!opened.ok()) {
      std::cerr << "mcp-exec: " << ErrorText(opened.error()) << "\n";
      return 1;
    }
    backend = *opened;
  }
  auto layers = exec::OpenPackageLayers(*config, backend);
  if (!layers.ok()) {
    std::cerr << "mcp-exec: " << ErrorText(layers.error()) << "\n";
    return 1;
  }
  if (options.prefetch->parsed()) return Prefetch(*config, options, **layers);
  if (options.prune->parsed()) {
    const uint64_t down_to = options.all ? 0 : max_bytes.value_or(config->package_cache_max_bytes);
    auto removed = (*layers)->Evict(down_to, "", options.downloads);
    if (!removed.ok()) {
      std::cerr << "mcp-exec: " << ErrorText(removed.error()) << "\n";
      return 1;
    }
    uint64_t bytes = 0;
    for (const packages::LayerInfo& layer : *removed) {
      bytes += layer.bytes;
      std::cout << "removed " << layer.key.substr(0, 12) << " (" << layer.bytes << " bytes): "
                << Packages(layer) << "\n";
    }
    std::cout << removed->size() << " layers removed, " << bytes << " bytes"
              << (options.downloads ? "; the downloads too" : "") << std::endl;
    return 0;
  }
  auto listed = (*layers)->List();
  if (!listed.ok()) {
    std::cerr << "mcp-exec: " << ErrorText(listed.error()) << "\n";
    return 1;
  }
  if (options.json) {
    json out = json::array();
    for (const packages::LayerInfo& layer : *listed) out.push_back(LayerJson(layer));
    std::cout << out.dump(1) << std::endl;
    return 0;
  }
  uint64_t total = 0;
  for (const packages::LayerInfo& layer : *listed) {
    total += layer.bytes;
    std::cout << layer.key.substr(0, 12) << "  " << log::IsoTime(layer.last_used) << "  "
              << layer.bytes << " bytes" << (layer.in_use ? "  in use" : "") << "  "
              << Packages(layer) << "\n";
  }
  std::cout << listed->size() << " layers, " << total << " bytes (at most "
            << config->package_cache_max_bytes << ")" << std::endl;
  return 0;
}

}  // namespace mcpexec::cli
