// The sandbox's init is a clone of this process, so its /proc/1/exe is this process's
// executable. When that file is writable by anyone but root (a rootless install in the user's
// home, say, which the sandbox's uid may own), a program that reached /proc/1/exe could
// overwrite the host's mcp-exec (the runc CVE-2019-5736 family). Init is non-dumpable, which
// already denies that open; as a second wall, mcp-exec then runs from a sealed memfd copy of
// itself, which nothing can write.
#pragma once

#include "base/result.h"

namespace mcpexec::sandbox {

// Re-executes the process from a sealed in-memory copy of its executable when that file is
// writable by anyone but root and the process does not already run from one. Returns only
// when no re-exec was needed (ok) or it failed (an error to warn about: init's non-dumpable
// state still guards /proc/1/exe). Call first thing in main(), before any thread exists.
Result<void> ReexecFromSealedCopyIfWritable(char** argv, char** envp);

}  // namespace mcpexec::sandbox
