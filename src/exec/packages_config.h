// Packages on demand as the configuration has them (docs/packages.md): the layer store's
// options from MCP_EXEC_WHEELHOUSE and the MCP_EXEC_PACKAGE_* settings.
#pragma once

#include <memory>
#include <string>

#include "base/result.h"
#include "config/config.h"
#include "limits/limits.h"
#include "packages/layers.h"

namespace mcpexec::exec {

// /var/cache/mcp-exec/packages as root; else $XDG_CACHE_HOME/mcp-exec/packages, or
// $HOME/.cache/mcp-exec/packages.
std::string PackageCacheDefault();

// The store's options; an error for an MCP_EXEC_PACKAGE_ALLOW entry that is not a project name.
Result<packages::StoreOptions> PackageStoreOptionsFor(const config::Config& config);

// The layer store when MCP_EXEC_WHEELHOUSE is set (null when it is not), its sandboxes under
// `backend`. An error says what is missing: the wheelhouse, pip, a writable cache.
Result<std::shared_ptr<packages::PackageLayers>> OpenPackageLayers(
    const config::Config& config, std::shared_ptr<limits::LimitsBackend> backend);

}  // namespace mcpexec::exec
