// SandboxSpec: what a sandbox is, as plain data. No syscalls here; Compile() (plan.h) turns a
// spec into the prepared state a launch needs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mcpexec::sandbox {

inline constexpr uid_t kSandboxUid = 65532;
inline constexpr gid_t kSandboxGid = 65532;
inline constexpr uint64_t kDefaultWorkspaceBytes = 64ull << 20;
inline constexpr uint64_t kDefaultShmBytes = 64ull << 20;
// The long edge of a captured figure: Claude's image input scales longer ones down (Anthropic's
// vision documentation), so more pixels would only cost bytes.
inline constexpr uint32_t kDefaultFigureMaxPx = 1568;

struct SandboxSpec {
  // Host directory holding the Python root filesystem; mounted read-only as "/".
  std::string rootfs;
  // Interpreter: a bare name looked up in the rootfs's PATH, or an absolute path in the rootfs.
  std::string python = "python3";

  // The tmpfs mounted at /tmp: the program's cwd and HOME, and the only writable directory
  // besides /dev/shm.
  uint64_t workspace_bytes = kDefaultWorkspaceBytes;
  uint64_t shm_bytes = kDefaultShmBytes;

  // Ids inside the sandbox, and the host ids they map to. Outside ids come from
  // ResolveHostIds(): the caller's own when rootless, a configured unprivileged pair when root.
  uid_t inside_uid = kSandboxUid;
  gid_t inside_gid = kSandboxGid;
  uid_t outside_uid = 0;
  gid_t outside_gid = 0;
  // True when the launcher has CAP_SETUID/CAP_SETGID over the host ids (runs as root). Every
  // sandbox denies setgroups(2) either way (a zygote's runs must: sandbox.cc, WriteIdMaps), so
  // it keeps the supplementary groups it inherits: as root the launcher drops its own first
  // (DropSupplementaryGroups), and Compile refuses a privileged spec while it has any.
  bool privileged_id_mapping = false;

  std::string hostname = "sandbox";

  // The longest edge, in pixels, of the figures the rootfs's matplotlib backend saves into
  // /tmp/outputs (MCP_EXEC_FIGURE_MAX_PX); unused by a rootfs without that backend.
  uint32_t figure_max_px = kDefaultFigureMaxPx;

  // Warm start (the pool engine): the interpreter starts with the agent (warm_agent.h) as soon
  // as the sandbox is set up, imports `preload` and waits for its program. Cold: the
  // interpreter starts with the program.
  bool warm = false;
  std::vector<std::string> preload;
  // The zygote engine (zygote.h; needs `warm`): the interpreter never runs a program. It forks
  // each run's sandbox, whose init makes the run's namespaces, mounts and limits itself. Its own
  // interpreter runs without the program's seccomp filter and rlimits, as an init does, and its
  // /proc is unmasked so that each run's init may mount a fresh one (docs/engine.md).
  bool zygote = false;

  // Docker-format seccomp profile the program runs under (seccomp_profile.h): kSeccompDefault,
  // a file, or kSeccompUnconfined. Empty is an error: running without a filter is a choice, never a default.
  std::string seccomp_profile;

  // Variables added to the program's environment (an environment image's env.txt), KEY=VALUE
  // each. Compile refuses a key the sandbox sets itself (PATH, HOME, LANG, MPLBACKEND, PYTHON*,
  // MCP_EXEC_*), a malformed one, and NUL or a line break anywhere.
  std::vector<std::string> extra_env;

  // Host directories bound read-only, nosuid and nodev onto empty directories of the rootfs,
  // before /proc and the workspace: a run's package layer, the package installer's pip and
  // wheelhouse (docs/packages.md). Cold and pool sandboxes only: a zygote's runs are built on
  // the zygote's own view of the rootfs, so Compile refuses binds in a zygote plan.
  struct ReadOnlyBind {
    std::string source;  // absolute host path of a directory
    std::string target;  // absolute path inside the sandbox of a directory the rootfs has
  };
  std::vector<ReadOnlyBind> read_only_binds;

  // Zygote plans only: the host directory of package layers (the package cache's layers/, one
  // <key>/site directory per layer), bound read-only, nosuid and nodev at kPackageLayerMount in
  // the zygote, which runs no program. A run forked with a layer (Zygote::Fork) binds its own
  // <key>/site from there onto its kPackageLayerMount, as a cold run's read_only_binds do, before
  // the pivot takes the zygote's view away. Empty: the zygote's runs take no layer.
  std::string zygote_layers;
};

// Where a run's package layer is mounted (docs/packages.md): an empty directory of every image.
inline constexpr const char* kPackageLayerMount = "/usr/lib/mcp-exec/packages";

inline constexpr const char* kSeccompUnconfined = "unconfined";
// The profile compiled into the binary, from seccomp-profiles/default.json.
inline constexpr const char* kSeccompDefault = "default";

// Why `var` (KEY=VALUE) cannot be one of SandboxSpec::extra_env, or "" when it can.
std::string ExtraEnvProblem(const std::string& var);

// Host-side identity of the sandbox's uid/gid 65532.
struct HostIds {
  uid_t uid;
  gid_t gid;
  bool privileged;
};

// When the process is root, returns {root_uid, root_gid, privileged=true}; the caller passes the
// configured unprivileged pair (never 0). Otherwise the caller's own effective ids.
HostIds ResolveHostIds(uid_t root_uid, gid_t root_gid);

}  // namespace mcpexec::sandbox
