// Package layers (docs/packages.md): the read-only, content-addressed directories that hold what
// a call's `packages` add to its environment, cached on disk under MCP_EXEC_PACKAGE_CACHE, and
// the engines whose sandboxes mount one. A set is installed once however many calls ask for it
// at the same time; a set already installed costs a directory listing and a map look-up.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/engine.h"
#include "limits/limits.h"
#include "packages/index_client.h"
#include "packages/installer.h"
#include "packages/requirements.h"
#include "sandbox/spec.h"

namespace mcpexec::packages {

struct StoreOptions {
  InstallerOptions installer;  // its index, downloads and allow are the store's to set
  // The package source, when it is an index rather than installer.wheelhouse.
  std::optional<IndexOptions> index;
  std::string cache_dir;
  std::vector<std::string> allow;  // normalised project names; empty: any
  // MCP_EXEC_PACKAGE_CACHE_MAX_BYTES: the layers' size, all together, that an installation
  // evicts the least recently used ones (no run holds) down to.
  uint64_t max_cache_bytes = 2ull << 30;
};

// A layer in the cache, as `mcp-exec packages list` shows it.
struct LayerInfo {
  std::string key;
  std::string environment;  // the identity of the image it was installed for
  uint64_t bytes = 0;       // its files
  std::chrono::system_clock::time_point last_used;  // its last run's start, or its install
  std::vector<Installed> packages;
  bool in_use = false;  // a run or a session (of any process) holds it now
};

// How long a request resolved against an index keeps its answer: a requirement that is not
// pinned may resolve to a newer release later. A wheelhouse's answer lasts while its files do.
inline constexpr std::chrono::seconds kIndexResolutionTtl{3600};

// What a run with packages gets.
struct LayerRun {
  // The engine whose sandboxes bind the layer (cold); null when the environment already has
  // every requirement, and the run takes the environment's own engine. It, and a session's
  // KeepAlive of it, hold the layer: no eviction removes a layer in use (PackageLayers::Evict).
  // A zygote engine mounts it in its own sandboxes instead (exec::EngineForLayer).
  std::shared_ptr<engine::Engine> engine;
  std::shared_ptr<const void> lease;  // the layer's lock, which `engine` holds too
  std::vector<Installed> packages;  // what the layer holds, by name
  std::string key;                  // the layer's name in the cache; "" without a layer
  std::string dir;                  // its directory in the cache
  bool installed_now = false;       // this call installed it
};

class PackageLayers {
 public:
  // Makes the cache's directories (layers/, staging/) and removes what a server that ended
  // mid-install left in staging/.
  static Result<std::shared_ptr<PackageLayers>> Open(
      StoreOptions options, std::shared_ptr<limits::LimitsBackend> backend);

  const StoreOptions& Options() const { return options_; }

  // The `packages` argument's strings as requirements: each valid, at most
  // MCP_EXEC_MAX_PACKAGES, each name on MCP_EXEC_PACKAGE_ALLOW when it is set. kInvalidArgument.
  Result<std::vector<Requirement>> Check(const std::vector<std::string>& texts) const;

  // Every layer in the cache, the least recently used first.
  Result<std::vector<LayerInfo>> List() const;
  // Removes the least recently used layers that no run or session holds, but `keep`, until all
  // together take at most `max_bytes` (0: all of them). An index's checked wheels (downloads/)
  // count too and are removed first when the whole is over, or with `downloads`. Returns
  // the layers it removed. Another process's runs hold their layers too (a lock on each).
  Result<std::vector<LayerInfo>> Evict(uint64_t max_bytes, const std::string& keep = "",
                                       bool downloads = false);

  // The layer of `requirements` over the environment whose cold sandbox is `base`; `identity`
  // names that environment's image (its recipe's hash), so that layers of two images never
  // mix. Installs it when the cache does not have it. Thread-safe.
  Result<LayerRun> Prepare(const sandbox::SandboxSpec& base, const std::string& identity,
                           const std::vector<Requirement>& requirements,
                           const InstallerHooks& hooks);

 private:
  PackageLayers(StoreOptions options, std::shared_ptr<limits::LimitsBackend> backend);
  // What the source holds now, for a request's key: the wheelhouse's files, or the index's URL.
  Result<std::string> SourceState() const;
  // Installs the set (the thread that claimed its request); the layer's key, "" for none.
  Result<std::string> InstallNew(const sandbox::SandboxSpec& base, const std::string& identity,
                                 const std::vector<Requirement>& requirements,
                                 const InstallerHooks& hooks);
  // The layer `key` as it is on disk now (its manifest), with its engine; kNotFound when gone.
  Result<LayerRun> Cached(const sandbox::SandboxSpec& base, const std::string& identity,
                          const std::string& key);
  std::string LayerDir(const std::string& key) const;
  // requests/REQUEST_KEY holds the layer key a request resolved to ("" for none), so that a
  // request resolved by an earlier process skips pip too.
  std::string RequestFile(const std::string& request_key) const;
  void RememberRequest(const std::string& request_key, const std::string& key);

  StoreOptions options_;
  const std::shared_ptr<limits::LimitsBackend> backend_;
  std::unique_ptr<IndexClient> index_;

  std::mutex mutex_;
  std::condition_variable done_;
  // A request's key (environment, wheelhouse state, requirements) -> its layer's key ("" when it
  // needs none): a set asked for again skips pip. Kept on disk too (RequestFile).
  struct Resolution {
    std::string key;
    std::chrono::system_clock::time_point at;
  };
  std::map<std::string, Resolution> resolved_;
  // A request being installed now, which later calls for it wait for.
  struct Flight {
    bool done = false;
    std::optional<Error> error;
  };
  std::map<std::string, std::shared_ptr<Flight>> installing_;
  // Per environment and layer: the cold engine that mounts it.
  std::map<std::string, std::shared_ptr<engine::Engine>> engines_;
};

}  // namespace mcpexec::packages
