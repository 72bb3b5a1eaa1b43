// `mcp-exec run --output-dir DIR`: the files a run left in /tmp/outputs, written on the host.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "exec/files.h"
#include "sandbox/workspace_files.h"

namespace mcpexec::cli {

// Writes every output that was read under `dir` (created when missing; existing files of the
// same name are replaced), at its path relative to /tmp/outputs. Never follows a link below
// `dir` nor writes outside it: a link, a hard link (another name of the file elsewhere), a FIFO
// or any other non-file where a file goes is left alone, never opened to wait on. Marks what was written as returned in `reports`; a file that
// cannot be written keeps returned false and gets the reason. Errors only for `dir` itself.
Result<void> WriteOutputDir(const std::string& dir, const sandbox::OutputCollection& outputs,
                            std::vector<exec::FileReport>& reports);

}  // namespace mcpexec::cli
