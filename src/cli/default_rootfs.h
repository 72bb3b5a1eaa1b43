// The rootfs a binary uses when neither --rootfs nor MCP_EXEC_ROOTFS names one.
#pragma once

namespace mcpexec::cli {

// Defined in default_rootfs.cc, which meson compiles once per binary: <builddir>/rootfs (or
// -Drootfs_dir) for the build tree's mcp-exec, <localstatedir>/lib/mcp-exec/rootfs for the
// one `meson install` installs (packaging/meson.build).
extern const char* const kDefaultRootfs;

}  // namespace mcpexec::cli
