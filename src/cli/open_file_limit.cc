#include "cli/open_file_limit.h"

#include <sys/resource.h>

#include <string>

#include "log/log.h"

namespace mcpexec::cli {

void RaiseOpenFileLimit(size_t reserve, size_t connections) {
  const size_t needed = reserve + connections;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= needed) return;
  log::Warn("open file limit is below what this configuration may hold",
            {{"rlimit_nofile", limit.rlim_cur},
             {"reserve", reserve},
             {"fix", "raise the hard limit to at least " + std::to_string(needed) +
                         (connections > 0 ? ", more for more connections" : "") +
                         " (LimitNOFILE=, ulimit -Hn, --ulimit nofile=), or lower "
                         "MCP_EXEC_MAX_SESSIONS, "
                         "MCP_EXEC_MAX_CONCURRENCY, MCP_EXEC_POOL_MAX or the environments "
                         "offered (MCP_EXEC_ENVIRONMENTS)"}});
}

}  // namespace mcpexec::cli
