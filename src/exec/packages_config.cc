#include "exec/packages_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "exec/environment_engines.h"

namespace mcpexec::exec {

std::string PackageCacheDefault() {
  if (geteuid() == 0) return "/var/cache/mcp-exec/packages";
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/mcp-exec/packages";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && home[0] == '/' ? home : "/tmp") +
         "/.cache/mcp-exec/packages";
}

Result<packages::StoreOptions> PackageStoreOptionsFor(const config::Config& config) {
  packages::StoreOptions options;
  options.installer.wheelhouse = config.wheelhouse;
  options.installer.max_packages = static_cast<size_t>(config.max_packages);
  options.installer.max_bytes = config.package_max_bytes;
  options.installer.timeout = std::chrono::seconds(config.package_install_timeout_s);
  options.cache_dir = config.package_cache.empty() ? PackageCacheDefault() : config.package_cache;
  options.max_cache_bytes = config.package_cache_max_bytes;
  if (!config.package_index.empty()) {
    if (!config.wheelhouse.empty()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "MCP_EXEC_WHEELHOUSE and MCP_EXEC_PACKAGE_INDEX are both set: packages "
                       "come from one source, give one");
    }
    MCPEXEC_ASSIGN_OR_RETURN(
        options.index,
        packages::ReadIndexOptions(config.package_index, config.package_index_ca,
                                   config.package_index_credentials,
                                   options.installer.timeout));
  }
  std::string list = config.package_allow;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    std::string entry = list.substr(at, comma - at);
    entry.erase(0, entry.find_first_not_of(" \t"));
    entry.erase(entry.find_last_not_of(" \t") + 1);
    at = comma + 1;
    if (entry.empty()) continue;
    auto requirement = packages::ParseRequirement(entry);
    if (!requirement.ok() || requirement->name.size() != requirement->key.size()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "MCP_EXEC_PACKAGE_ALLOW: \"" + entry + "\" is not a project name");
    }
    options.allow.push_back(requirement->name);
  }
  return options;
}

Result<std::shared_ptr<packages::PackageLayers>> OpenPackageLayers(
    const config::Config& config, std::shared_ptr<limits::LimitsBackend> backend) {
  if (config.wheelhouse.empty() && config.package_index.empty()) {
    return std::shared_ptr<packages::PackageLayers>();
  }
  MCPEXEC_ASSIGN_OR_RETURN(packages::StoreOptions options, PackageStoreOptionsFor(config));
  return packages::PackageLayers::Open(std::move(options), std::move(backend));
}

Result<packages::LayerRun> PrepareLayer(packages::PackageLayers* layers,
                                        const config::Config& config, const Environment& env,
                                        const std::vector<std::string>& requested,
                                        const packages::InstallerHooks& hooks) {
  if (layers == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "invalid arguments: packages are off on this server: its operator turns "
                     "them on by naming a package index in MCP_EXEC_PACKAGE_INDEX or a "
                     "directory of wheels in MCP_EXEC_WHEELHOUSE (docs/packages.md)");
  }
  auto requirements = layers->Check(requested);
  if (!requirements.ok()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "invalid arguments: " + requirements.error().message);
  }
  // An image without a recipe hash (a default built before images had metadata) is known by
  // its path.
  const std::string identity = env.hash.empty() ? "image " + env.image : env.hash;
  auto layer = layers->Prepare(SpecForEnvironment(config, env), identity, *requirements, hooks);
  if (!layer.ok() && layer.error().code == ErrorCode::kInvalidArgument) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "cannot install the packages: " + layer.error().message);
  }
  return layer;
}

std::string PackageLayersDir(const config::Config& config) {
  if (config.wheelhouse.empty() && config.package_index.empty()) return "";
  const std::string dir =
      (config.package_cache.empty() ? PackageCacheDefault() : config.package_cache) + "/layers";
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? dir : "";
}

std::shared_ptr<engine::Engine> EngineForLayer(std::shared_ptr<engine::Engine> environment,
                                               const packages::LayerRun& layer) {
  if (!layer.engine) return environment;
  return engine::MakeLayeredEngine(std::move(environment),
                                   {layer.key, layer.dir, layer.lease}, layer.engine);
}

nlohmann::json PackagesJson(const std::vector<packages::Installed>& installed) {
  nlohmann::json list = nlohmann::json::array();
  for (const packages::Installed& p : installed) {
    list.push_back({{"name", p.name}, {"version", p.version}, {"sha256", p.sha256}});
  }
  return list;
}

}  // namespace mcpexec::exec
