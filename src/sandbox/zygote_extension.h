// The zygote's CPython extension (zygote_extension.cc), built for the rootfs's interpreter, and
// its runs' init (zygote_init.cc), a static executable: both embedded in the binary at build
// time (tools/embed-bytes). A zygote plan hands them to the zygote's init
// (PlanView::zygote_module, PlanView::zygote_init).
#pragma once

#include <cstddef>

namespace mcpexec::sandbox {

extern const unsigned char kZygoteExtension[];
extern const size_t kZygoteExtensionSize;
extern const unsigned char kZygoteInitBinary[];
extern const size_t kZygoteInitBinarySize;

}  // namespace mcpexec::sandbox
