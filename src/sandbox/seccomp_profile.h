// SeccompProfile: a seccomp profile in Docker's JSON format (moby's profiles/seccomp), as plain
// data. Parsing checks the shape and every name the format defines (actions, operators,
// architectures), so that a malformed profile fails at start-up with the place of the mistake;
// whether a syscall name exists is decided later, per architecture, by CompileSeccompFilter()
// (seccomp_filter.h). No libseccomp calls here.
#pragma once

#include <compare>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace mcpexec::sandbox {

// What the filter does with a matching call. SCMP_ACT_KILL is the old name of KILL_THREAD.
// SCMP_ACT_TRACE and SCMP_ACT_NOTIFY are rejected when parsing: the sandbox has neither a
// tracer nor a seccomp agent, so the calls would fail in ways the profile does not say.
enum class SeccompAction { kAllow, kErrno, kKillThread, kKillProcess, kTrap, kLog };

// Argument comparisons, as in seccomp_rule_add(3). For kMaskedEq, `value` is the mask and
// `value_two` the datum: (arg & value) == value_two.
enum class SeccompOp { kNe, kLt, kLe, kEq, kGe, kGt, kMaskedEq };

struct SeccompArg {
  unsigned index = 0;  // 0..5
  uint64_t value = 0;
  uint64_t value_two = 0;
  SeccompOp op = SeccompOp::kEq;
};

// "<kernel version>.<major revision>", e.g. "4.8"; further parts are ignored, as Docker does.
struct KernelVersion {
  int major = 0;
  int minor = 0;
  auto operator<=>(const KernelVersion&) const = default;
};

// Docker's `includes` / `excludes`. Empty members do not constrain.
struct SeccompCondition {
  std::vector<std::string> caps;    // "CAP_SYS_ADMIN"
  std::vector<std::string> arches;  // Go names of the host architecture: "amd64", "arm64"
  std::optional<KernelVersion> min_kernel;
};

struct SeccompSyscall {
  std::vector<std::string> names;  // `names`, or the single `name`
  SeccompAction action = SeccompAction::kAllow;
  std::optional<uint32_t> errno_ret;  // kErrno only; absent: EPERM
  // Conditions on distinct argument indexes must all hold (one rule). When an index repeats,
  // each condition becomes a rule of its own, so they are alternatives: runc's rule, which
  // lets a profile list several allowed values of one argument in one entry.
  std::vector<SeccompArg> args;
  std::string comment;
  SeccompCondition includes;
  SeccompCondition excludes;
  std::string where;  // "syscalls[12]", for messages about this entry
};

struct SeccompArchMapEntry {
  std::string architecture;                    // "SCMP_ARCH_X86_64"
  std::vector<std::string> sub_architectures;  // "SCMP_ARCH_X86", "SCMP_ARCH_X32"
};

struct SeccompProfile {
  SeccompAction default_action = SeccompAction::kErrno;
  std::optional<uint32_t> default_errno_ret;  // absent: EPERM
  std::vector<std::string> architectures;     // the old form of arch_map; not both
  std::vector<SeccompArchMapEntry> arch_map;
  std::vector<SeccompSyscall> syscalls;
};

// Builds a profile from parsed JSON. Fields the format does not define are ignored, as Docker
// ignores them; `null` counts as absent (profiles written by Go have "args": null). A field of
// the wrong type, an unknown action, operator or architecture, an argument index above 5, an
// errno above 4095, `name` together with `names`, an entry without any name, or a feature the
// sandbox cannot honour (SCMP_ACT_TRACE, SCMP_ACT_NOTIFY, `listenerPath`, filter `flags`) is a
// kInvalidArgument error whose message starts with the place in the document:
//   syscalls[12].args[0].op: unknown operator "SCMP_CMP_FOO"
// Never throws.
Result<SeccompProfile> ParseSeccompProfile(const nlohmann::json& document);

// Reads and parses the profile at `path`. Errors are prefixed with the path: a missing file is
// kNotFound, invalid JSON (with its line and column) or a malformed profile kInvalidArgument.
Result<SeccompProfile> LoadSeccompProfile(const std::string& path);

// The profile spelling of an action or operator ("SCMP_ACT_ERRNO"), for messages.
const char* SeccompActionName(SeccompAction action);
const char* SeccompOpName(SeccompOp op);

}  // namespace mcpexec::sandbox
