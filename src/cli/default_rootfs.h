// What a binary knows of its installation: the rootfs it uses when neither --rootfs nor
// MCP_EXEC_ROOTFS names one, and the tool that builds it and the other environments' images.
#pragma once

namespace mcpexec::cli {

// Defined in default_rootfs.cc, which meson compiles once per binary: <builddir>/rootfs (or
// -Drootfs_dir) for the build tree's mcp-exec, <localstatedir>/lib/mcp-exec/rootfs for the
// one `meson install` installs (packaging/meson.build).
extern const char* const kDefaultRootfs;
// tools/build-rootfs in the source tree for the build tree's mcp-exec,
// <bindir>/mcp-exec-build-rootfs for the installed one.
extern const char* const kBuildRootfsTool;

}  // namespace mcpexec::cli
