// Turns set-up failures (clone refused, a child step's errno) into an Error whose message names
// the cause and whose fixes (Error::fixes) say what to do about it.
#pragma once

#include <optional>
#include <string>
#include <vector>

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

// Why user namespaces are unavailable, and the ways to allow them.
struct UsernsHint {
  std::string why;                 // "user namespaces are disabled: ..."
  std::vector<std::string> fixes;  // commands or steps, as Error::fixes
};
UsernsHint ExplainUserns(const UsernsFacts& facts);

// The ways to let a fresh /proc be mounted when parts of the host's are mounted over (systemd's
// Protect* options, a container's masked paths).
std::vector<std::string> HiddenProcFixes();

Error CloneError(int err, const UsernsFacts& facts);
Error IdMapError(const Error& cause, const UsernsFacts& facts);
Error ChildError(const LaunchPlan& plan, const ChildReport& report, const UsernsFacts& facts);

// "mount a fresh /proc" for kMountOp, "drop capabilities" and so on.
std::string StepName(const LaunchPlan& plan, const ChildReport& report);

}  // namespace mcpexec::sandbox
