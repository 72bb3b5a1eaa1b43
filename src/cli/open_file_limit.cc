#include "cli/open_file_limit.h"

#include <sys/resource.h>

#include <string>

#include "base/sys.h"
#include "log/log.h"

namespace mcpexec::cli {

void RaiseOpenFileLimit(size_t reserve, size_t connections) {
  const size_t needed = reserve + connections;
  const rlim_t nofile = RaiseSoftOpenFileLimit();
  if (nofile == 0 || nofile == RLIM_INFINITY || nofile >= needed) return;
  log::Warn("open file limit is below what this configuration may hold",
            {{"rlimit_nofile", nofile},
             {"reserve", reserve},
             {"fix", "raise the hard limit to at least " + std::to_string(needed) +
                         (connections > 0 ? ", more for more connections" : "") +
                         " (LimitNOFILE=, ulimit -Hn, --ulimit nofile=), or lower "
                         "MCP_EXEC_MAX_SESSIONS, "
                         "MCP_EXEC_MAX_CONCURRENCY, MCP_EXEC_POOL_MAX or the environments "
                         "offered (MCP_EXEC_ENVIRONMENTS)"}});
}

}  // namespace mcpexec::cli
