// Packages on demand as the configuration has them (docs/packages.md): the layer store's
// options from MCP_EXEC_WHEELHOUSE and the MCP_EXEC_PACKAGE_* settings.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "config/config.h"
#include "exec/environments.h"
#include "limits/limits.h"
#include "packages/layers.h"

namespace mcpexec::exec {

// /var/cache/mcp-exec/packages as root; else $XDG_CACHE_HOME/mcp-exec/packages, or
// $HOME/.cache/mcp-exec/packages.
std::string PackageCacheDefault();

// The store's options; an error for an MCP_EXEC_PACKAGE_ALLOW entry that is not a project name.
Result<packages::StoreOptions> PackageStoreOptionsFor(const config::Config& config);

// The layer store when MCP_EXEC_WHEELHOUSE or MCP_EXEC_PACKAGE_INDEX is set (null when neither
// is), its sandboxes under `backend`. An error says what is missing: the wheelhouse, pip, a
// writable cache, a valid index URL, CA or credentials file.
Result<std::shared_ptr<packages::PackageLayers>> OpenPackageLayers(
    const config::Config& config, std::shared_ptr<limits::LimitsBackend> backend);

// The layer of `requested` (the `packages` argument, or `run --packages`) in `env`: checked
// (kInvalidArgument, "invalid arguments: ..."), then from the cache or installed now. An
// installation the packages make impossible is kInvalidArgument ("cannot install the packages:
// ..."); `layers` null (no MCP_EXEC_WHEELHOUSE) is kInvalidArgument naming it.
Result<packages::LayerRun> PrepareLayer(packages::PackageLayers* layers,
                                        const config::Config& config, const Environment& env,
                                        const std::vector<std::string>& requested,
                                        const packages::InstallerHooks& hooks);

// The package cache's layers directory when packages are on (MCP_EXEC_WHEELHOUSE or
// MCP_EXEC_PACKAGE_INDEX) and it exists (OpenPackageLayers made it); "" otherwise. A zygote
// binds it (SandboxSpec::zygote_layers) so that its runs can mount their layers.
std::string PackageLayersDir(const config::Config& config);

// The engine a run with `layer` takes: `environment`'s (its zygote's sandboxes with the layer
// mounted) where it can, else the layer's own cold engine; `environment` itself when there is no
// layer (the environment has every requirement).
std::shared_ptr<engine::Engine> EngineForLayer(std::shared_ptr<engine::Engine> environment,
                                               const packages::LayerRun& layer);

// [{"name", "version", "sha256"}]: what a result and a log line say a run got.
nlohmann::json PackagesJson(const std::vector<packages::Installed>& installed);

}  // namespace mcpexec::exec
