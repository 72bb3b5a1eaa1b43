// The installer sandbox (docs/packages.md): pip resolves and installs a call's requirements in a
// sandbox of the call's environment, with no network, pip and the wheelhouse bound read-only,
// and the layer it makes left in its workspace for the supervisor to check and copy out. Nothing
// from a package runs outside a sandbox.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "limits/limits.h"
#include "packages/requirements.h"
#include "sandbox/spec.h"

namespace mcpexec::packages {

// Inside every image built since packages on demand (rootfs/finalize): empty directories.
inline constexpr const char* kLayerMount = sandbox::kPackageLayerMount;
inline constexpr const char* kInstallerPipMount = "/usr/lib/mcp-exec/installer/pip";
inline constexpr const char* kWheelhouseMount = "/usr/lib/mcp-exec/wheelhouse";
// Debian's python3-pip.
inline constexpr const char* kDefaultPipDir = "/usr/lib/python3/dist-packages/pip";
// A wheel's METADATA larger than this is refused before pip installs it.
inline constexpr uint64_t kMaxMetadataBytes = 1 << 20;
// The most files a layer may hold.
inline constexpr size_t kMaxLayerFiles = 100'000;

class IndexClient;

struct InstallerOptions {
  std::string wheelhouse;  // host directory of wheels; or else:
  // An index, which pip reaches through the supervisor's channel (index_channel.h), the checked
  // wheels kept in `downloads`, pages asked for only of the projects in `allow` (empty: any).
  const IndexClient* index = nullptr;
  std::string downloads;
  std::vector<std::string> allow;
  std::string pip_dir = kDefaultPipDir;
  size_t max_packages = 32;
  uint64_t max_bytes = 128ull << 20;
  std::chrono::seconds timeout{120};
};

// A distribution of a layer: the wheel it came from and that wheel's SHA-256, which the
// supervisor computed itself.
struct Installed {
  std::string name;
  std::string version;
  std::string file;
  std::string sha256;
  bool operator==(const Installed&) const = default;
};

struct InstallerHooks {
  int cancel_fd = -1;
  // Called about every 500 ms while the installer runs, with the time since it started.
  std::function<void(std::chrono::milliseconds elapsed)> on_progress;
};

// What the installer made: the resolved set (sorted by name; empty when the environment has
// every requirement already) and the layer's files, written into `staging` (a new directory
// that the call owns) when the set is not empty.
struct Installation {
  std::vector<Installed> packages;
  uint64_t bytes = 0;  // the layer's files
};

// Resolves and installs `requirements` in a sandbox like `base` (the call's environment, cold)
// under `backend`, writing the layer into `staging/site` (and the index's channel, for the
// installation's length, into `staging/channel`). Refusals (no such wheel, a conflict
// with the environment, a hostile wheel, a cap) are kInvalidArgument with pip's or the check's
// words; a timeout is kDeadlineExceeded; a cancelled install kUnavailable.
Result<Installation> Install(const sandbox::SandboxSpec& base,
                             std::shared_ptr<limits::LimitsBackend> backend,
                             const InstallerOptions& options,
                             const std::vector<Requirement>& requirements,
                             const std::string& staging, const InstallerHooks& hooks);

}  // namespace mcpexec::packages
