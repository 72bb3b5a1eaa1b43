// A package layer's files on the host: written from what the installer sandbox left in its
// /tmp/outputs (sandbox::CollectOutputs), checked on the way, then made read-only; and removed.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "sandbox/workspace_files.h"

namespace mcpexec::packages {

// Writes every file of `collection` under `prefix/` (a directory of /tmp/outputs) into the new,
// empty directory `dir`, creating the directories between. Only regular files, each read whole;
// a link, a device, a FIFO or socket, a file left unread (over a cap, unreadable, changed) or an
// incomplete walk is an error naming it, as is any path that is not a plain relative one.
// Files get mode 0444 and directories 0555: nothing is executable, setuid or writable. Returns
// the bytes written.
Result<uint64_t> WriteLayerTree(const sandbox::OutputCollection& collection,
                                const std::string& prefix, const std::string& dir);

// Removes the tree `path` (making its directories writable first); no error when it is gone.
Result<void> RemoveTree(const std::string& path);

}  // namespace mcpexec::packages
