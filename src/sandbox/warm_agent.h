// The agent: the Python a warm sandbox's interpreter starts with. Init writes it to /tmp/main.py
// and starts `python3 /tmp/main.py`, the program's own command line. It removes that file,
// imports the preloads with fd 1 and 2 on /dev/null, says "R" on the start socket (kFdStart),
// waits for "G", closes the socket, and runs the program the supervisor wrote to /tmp/main.py the
// way `python3 /tmp/main.py` would: same __main__ namespace, traceback text and exit status. A
// preload that fails to import is reported as "E<text>" and the agent exits 1. docs/engine.md
// lists what a program can still tell apart.
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "sandbox/child/start_messages.h"
#include "sandbox/plan.h"

namespace mcpexec::sandbox {

// The agent's source, importing `preload` (valid dotted module names: config::ParseModuleList).
std::string WarmAgentSource(const std::vector<std::string>& preload);

// What each run a zygote forks sets up itself, from the plan: the mounts of BuildZygoteRunMountOps
// (paths inside the rootfs), the id maps of its own user namespace, and what a cold init
// applies to the program (rlimits, seccomp filter).
struct ZygoteRunSetup {
  std::vector<MountOp> mounts;
  std::string uid_map, gid_map;
  std::string hostname;
  std::string workdir;    // the workspace, where the program starts
  std::string init_name;  // a cold init's name (/proc/1/comm): the supervisor's
  int last_cap = 0;
  std::vector<RlimitView> rlimits;
  std::vector<sock_filter> seccomp;  // empty: none
  // Package layers (ZygoteRunView): layers_dir empty when the zygote has none.
  std::string layers_dir, layer_target;
  size_t layer_at = 0;
  unsigned long layer_remount_flags = 0;
};

// What the zygote's runs set up, as the blob the zygote's extension reads (zygote_run.h).
std::string PackZygoteRun(const ZygoteRunSetup& setup);

// The zygote's agent: imports `preload`, says "R", then forks a sandbox per "F" (zygote.h).
std::string ZygoteAgentSource(const std::vector<std::string>& preload,
                              const ZygoteRunSetup& setup);

}  // namespace mcpexec::sandbox
