#include "cli/default_rootfs.h"

#ifndef MCPEXEC_DEFAULT_ROOTFS
#error "MCPEXEC_DEFAULT_ROOTFS must be defined by the build"
#endif

namespace mcpexec::cli {

const char* const kDefaultRootfs = MCPEXEC_DEFAULT_ROOTFS;

}  // namespace mcpexec::cli
