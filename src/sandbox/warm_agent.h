// The agent: the Python a warm sandbox's interpreter starts with. Init writes it to /tmp/main.py
// and starts `python3 /tmp/main.py`, the program's own command line. It removes that file,
// imports the preloads with fd 1 and 2 on /dev/null, says "R" on the start socket (kFdStart),
// waits for "G", closes the socket, and runs the program the supervisor wrote to /tmp/main.py the
// way `python3 /tmp/main.py` would: same __main__ namespace, traceback text and exit status. A
// preload that fails to import is reported as "E<text>" and the agent exits 1. docs/engine.md
// lists what a program can still tell apart.
#pragma once

#include <string>
#include <vector>

namespace mcpexec::sandbox {

// The agent's source, importing `preload` (valid dotted module names: config::ParseModuleList).
std::string WarmAgentSource(const std::vector<std::string>& preload);

// The messages on the start socket: ready (agent), "E" + why a preload failed (agent), go
// (supervisor).
inline constexpr char kAgentReady = 'R';
inline constexpr char kAgentFailed = 'E';
inline constexpr char kAgentGo = 'G';

}  // namespace mcpexec::sandbox
