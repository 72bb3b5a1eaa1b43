#include "cli/default_rootfs.h"

#ifndef MCPEXEC_DEFAULT_ROOTFS
#error "MCPEXEC_DEFAULT_ROOTFS must be defined by the build"
#endif
#ifndef MCPEXEC_BUILD_ROOTFS_TOOL
#error "MCPEXEC_BUILD_ROOTFS_TOOL must be defined by the build"
#endif

namespace mcpexec::cli {

const char* const kDefaultRootfs = MCPEXEC_DEFAULT_ROOTFS;
const char* const kBuildRootfsTool = MCPEXEC_BUILD_ROOTFS_TOOL;

}  // namespace mcpexec::cli
