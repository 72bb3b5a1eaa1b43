// The server's own open-file limit (RLIMIT_NOFILE), checked once at start on every transport.
#pragma once

#include <cstddef>

namespace mcpexec::cli {

// Raises the soft open-file limit to the hard one (sandboxes get their own, lower, limit), and
// warns, naming the fix, when the hard one is below `reserve`, the descriptors the
// configuration may hold (DescriptorReserve), plus `connections`, the fewest HTTP connections
// get (0 on stdio). A warning, not a refusal: the reserve is a sum of maxima that a server
// seldom reaches, and one that does fails only what does not fit (a run or session without its
// descriptors is a tool error; an HTTP accept() that meets EMFILE closes an idle connection).
void RaiseOpenFileLimit(size_t reserve, size_t connections);

}  // namespace mcpexec::cli
