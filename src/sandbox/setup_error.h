// Turns set-up failures (clone refused, a child step's errno) into one message that names the
// cause and the fix.
#pragma once

#include <optional>

#include "base/result.h"
#include "sandbox/child/plan_view.h"
#include "sandbox/plan.h"

namespace mcpexec::sandbox {

// Host settings that decide whether user namespaces work, read from /proc/sys.
struct UsernsFacts {
  std::optional<long> max_user_namespaces;        // user.max_user_namespaces
  std::optional<long> unprivileged_userns_clone;  // kernel.unprivileged_userns_clone (Debian)
  std::optional<long> apparmor_restrict;  // kernel.apparmor_restrict_unprivileged_userns
  bool root = false;
};

UsernsFacts ReadUsernsFacts();

// The sentence that says why user namespaces are unavailable and how to allow them.
std::string UsernsHint(const UsernsFacts& facts);

Error CloneError(int err, const UsernsFacts& facts);
Error IdMapError(const Error& cause, const UsernsFacts& facts);
Error ChildError(const LaunchPlan& plan, const ChildReport& report, const UsernsFacts& facts);

// "mount a fresh /proc" for kMountOp, "drop capabilities" and so on.
std::string StepName(const LaunchPlan& plan, const ChildReport& report);

}  // namespace mcpexec::sandbox
