// The zygote's CPython extension (zygote_extension.cc), built for the rootfs's interpreter and
// embedded in the binary at build time (tools/embed-bytes). A zygote plan hands it to the
// zygote's init (PlanView::zygote_module).
#pragma once

#include <cstddef>

namespace mcpexec::sandbox {

extern const unsigned char kZygoteExtension[];
extern const size_t kZygoteExtensionSize;

}  // namespace mcpexec::sandbox
