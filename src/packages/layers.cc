#include "packages/layers.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "base/random.h"
#include "base/unique_fd.h"
#include "base/sys.h"
#include "packages/libraries.h"
#include "packages/digest.h"
#include "packages/layer_tree.h"
#include "sandbox/plan.h"

namespace mcpexec::packages {
namespace {

using nlohmann::json;

// Bumped when what a layer holds, or how it is laid out, changes: old layers are then never
// found again.
constexpr const char* kLayerFormat = "mcp-exec layer 1";
constexpr const char* kManifest = "layer.json";
// More engines than this are dropped (a run holds its own): each is a compiled plan.
constexpr size_t kMaxEngines = 256;

Result<void> MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return Errno(ErrorCode::kUnavailable, "mkdir " + path);
  }
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return MakeError(ErrorCode::kUnavailable, path + " is not a directory");
  }
  return Ok();
}

// What the wheelhouse holds now: each entry's name, size, change and modification times. A
// wheel added, replaced or removed makes a new state, and a request resolved before is resolved
// again.
Result<std::string> WheelhouseState(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return Errno(ErrorCode::kUnavailable, "open the wheelhouse " + dir);
  std::vector<std::string> entries;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    entries.push_back(name + "\t" + std::to_string(st.st_size) + "\t" +
                      std::to_string(st.st_mtim.tv_sec) + "." +
                      std::to_string(st.st_mtim.tv_nsec) + "\t" +
                      std::to_string(st.st_ctim.tv_sec) + "." +
                      std::to_string(st.st_ctim.tv_nsec) + "\t" + std::to_string(st.st_ino));
  }
  closedir(d);
  std::sort(entries.begin(), entries.end());
  std::string all;
  for (const std::string& e : entries) all += e + "\n";
  return Sha256Hex(all);
}

json ManifestOf(const Installation& installation, const std::string& identity) {
  json list = json::array();
  for (const Installed& p : installation.packages) {
    list.push_back({{"name", p.name}, {"version", p.version}, {"file", p.file},
                    {"sha256", p.sha256}});
  }
  return {{"format", kLayerFormat},
          {"environment", identity},
          {"bytes", installation.bytes},
          {"packages", std::move(list)}};
}

// The layer `key`'s manifest at `path` (its packages, environment and size).
Result<LayerInfo> ReadManifest(const std::string& path, const std::string& key) {
  MCPEXEC_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  const json manifest = json::parse(text, nullptr, false);
  if (!manifest.is_object() || manifest.value("format", "") != kLayerFormat ||
      !manifest.contains("packages") || !manifest["packages"].is_array()) {
    return MakeError(ErrorCode::kNotFound, path + " is not a layer manifest");
  }
  LayerInfo info;
  info.key = key;
  info.environment = manifest.value("environment", "");
  info.bytes = manifest.value("bytes", uint64_t{0});
  for (const json& p : manifest["packages"]) {
    if (!p.is_object()) return MakeError(ErrorCode::kNotFound, path + " is malformed");
    info.packages.push_back({p.value("name", ""), p.value("version", ""), p.value("file", ""),
                             p.value("sha256", "")});
  }
  return info;
}

// A use of the layer whose manifest is `manifest`: a shared lock on it, which Evict's exclusive
// one waits for no one to hold, and its modification time set to now (the layer's last use).
// kNotFound when the layer is gone, or was evicted while the lock was waited for.
Result<std::shared_ptr<const void>> Lease(const std::string& manifest) {
  auto fd = std::make_shared<UniqueFd>(open(manifest.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd->Valid()) return Errno(ErrorCode::kNotFound, "open " + manifest);
  while (flock(fd->Get(), LOCK_SH) != 0) {
    if (errno != EINTR) return Errno(ErrorCode::kInternal, "flock " + manifest);
  }
  struct stat held, now;
  if (fstat(fd->Get(), &held) != 0 || stat(manifest.c_str(), &now) != 0 ||
      held.st_ino != now.st_ino || held.st_dev != now.st_dev) {
    return MakeError(ErrorCode::kNotFound, manifest + " was evicted");
  }
  futimens(fd->Get(), nullptr);
  return std::shared_ptr<const void>(fd);
}

// As root, the sandboxes run as MCP_EXEC_HOST_UID, which must reach the wheelhouse (the
// installer lists and reads it) and the layers (each run binds its own): every directory on the
// way needs others' search bit, and `readable` others' read bit too. Empty when it has them.
std::string UnreachableBySandboxes(const std::string& path, bool readable) {
  if (geteuid() != 0) return "";
  for (size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
    const std::string dir = at == std::string::npos ? path : path.substr(0, at);
    struct stat st;
    const bool last = at == std::string::npos;
    const mode_t need = S_IXOTH | (last && readable ? S_IROTH : 0);
    if (stat(dir.c_str(), &st) == 0 && (st.st_mode & need) != need) {
      return dir + " (mode " + std::to_string((st.st_mode >> 6) & 7) +
             std::to_string((st.st_mode >> 3) & 7) + std::to_string(st.st_mode & 7) + ")";
    }
    if (last) return "";
  }
}

// Removes staging directories of servers that are gone (named PID-RANDOM).
void RemoveAbandoned(const std::string& staging) {
  DIR* d = opendir(staging.c_str());
  if (d == nullptr) return;
  std::vector<std::string> gone;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    const size_t dash = name.find('-');
    if (dash == std::string::npos || dash == 0) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(name.substr(0, dash).c_str()));
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH) || pid == getpid()) {
      gone.push_back(staging + "/" + name);
    }
  }
  closedir(d);
  for (const std::string& path : gone) (void)RemoveTree(path);
}

// Owns a staging directory until it is renamed into the cache.
class Staging {
 public:
  explicit Staging(std::string path) : path_(std::move(path)) {}
  ~Staging() {
    if (!path_.empty()) (void)RemoveTree(path_);
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  const std::string& Path() const { return path_; }
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

}  // namespace

Result<std::shared_ptr<PackageLayers>> PackageLayers::Open(
    StoreOptions options, std::shared_ptr<limits::LimitsBackend> backend) {
  if (options.cache_dir.empty() || options.cache_dir[0] != '/') {
    return MakeError(ErrorCode::kInvalidArgument,
                     "MCP_EXEC_PACKAGE_CACHE must be an absolute path, not \"" +
                         options.cache_dir + "\"");
  }
  MCPEXEC_RETURN_IF_ERROR(LoadCrypto());
  if (options.index) MCPEXEC_RETURN_IF_ERROR(LoadCurl());
  struct stat st;
  if (!options.index &&
      (stat(options.installer.wheelhouse.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    return MakeError(ErrorCode::kNotFound,
                     "MCP_EXEC_WHEELHOUSE " + options.installer.wheelhouse +
                         " is not a directory: create it and put wheels (.whl) in it");
  }
  if (stat((options.installer.pip_dir + "/__init__.py").c_str(), &st) != 0) {
    return MakeError(ErrorCode::kNotFound,
                     "packages on demand need pip, which resolves and installs them in the "
                     "installer sandbox, at " + options.installer.pip_dir +
                         ": install it (apt install python3-pip)");
  }
  // Parents as `mkdir -p`; the cache itself is 0755, so that a root server's sandboxes (mapped
  // to MCP_EXEC_HOST_UID) can reach the layers they bind.
  for (size_t at = options.cache_dir.find('/', 1); at != std::string::npos;
       at = options.cache_dir.find('/', at + 1)) {
    MCPEXEC_RETURN_IF_ERROR(MakeDir(options.cache_dir.substr(0, at)));
  }
  MCPEXEC_RETURN_IF_ERROR(MakeDir(options.cache_dir));
  std::vector<std::tuple<std::string, bool, const char*>> reached = {
      {options.cache_dir, false, "MCP_EXEC_PACKAGE_CACHE"}};
  if (!options.index) reached.emplace_back(options.installer.wheelhouse, true, "MCP_EXEC_WHEELHOUSE");
  for (const auto& [path, readable, what] : reached) {
    if (std::string blocked = UnreachableBySandboxes(path, readable); !blocked.empty()) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       std::string(what) + " " + path + " is out of the sandboxes' reach: they " +
                           "run as MCP_EXEC_HOST_UID, and " + blocked + " does not let others " +
                           (readable ? "list and read it" : "search it") +
                           ": chmod o+" + (readable ? "rx" : "x") + " " + blocked.substr(
                               0, blocked.find(" (mode")));
    }
  }
  MCPEXEC_RETURN_IF_ERROR(MakeDir(options.cache_dir + "/layers"));
  MCPEXEC_RETURN_IF_ERROR(MakeDir(options.cache_dir + "/staging"));
  MCPEXEC_RETURN_IF_ERROR(MakeDir(options.cache_dir + "/requests"));
  MCPEXEC_RETURN_IF_ERROR(MakeDir(options.cache_dir + "/downloads"));
  RemoveAbandoned(options.cache_dir + "/staging");
  return std::shared_ptr<PackageLayers>(new PackageLayers(std::move(options), std::move(backend)));
}

PackageLayers::PackageLayers(StoreOptions options, std::shared_ptr<limits::LimitsBackend> backend)
    : options_(std::move(options)), backend_(std::move(backend)) {
  options_.installer.allow = options_.allow;
  options_.installer.downloads = options_.cache_dir + "/downloads";
  if (options_.index) {
    index_ = std::make_unique<IndexClient>(*options_.index);
    options_.installer.index = index_.get();
  }
}

Result<std::string> PackageLayers::SourceState() const {
  if (index_) return "index " + index_->Options().url;
  return WheelhouseState(options_.installer.wheelhouse);
}

Result<std::vector<Requirement>> PackageLayers::Check(const std::vector<std::string>& texts) const {
  if (texts.size() > options_.installer.max_packages) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "packages: " + std::to_string(texts.size()) +
                         " requirements, at most " +
                         std::to_string(options_.installer.max_packages) +
                         " (MCP_EXEC_MAX_PACKAGES)");
  }
  std::vector<Requirement> out;
  std::set<std::string> names;
  for (const std::string& text : texts) {
    MCPEXEC_ASSIGN_OR_RETURN(Requirement r, ParseRequirement(text));
    if (!options_.allow.empty() &&
        std::find(options_.allow.begin(), options_.allow.end(), r.name) == options_.allow.end()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "packages: \"" + r.name + "\" is not on this server's allow-list "
                       "(MCP_EXEC_PACKAGE_ALLOW)");
    }
    if (!names.insert(r.name).second) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "packages: \"" + r.name + "\" is named twice: give it once, with every "
                       "version condition in one requirement (\"name>=1,<2\")");
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string PackageLayers::LayerDir(const std::string& key) const {
  return options_.cache_dir + "/layers/" + key;
}

std::string PackageLayers::RequestFile(const std::string& request_key) const {
  return options_.cache_dir + "/requests/" + request_key;
}

void PackageLayers::RememberRequest(const std::string& request_key, const std::string& key) {
  // Written whole, then renamed: a reader finds the key or nothing. Losing it costs a resolution.
  auto suffix = RandomHex(8);
  if (!suffix.ok()) return;
  const std::string file = RequestFile(request_key);
  const std::string tmp = file + "." + *suffix;
  UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.Valid() || !WriteAll(fd.Get(), key).ok() || rename(tmp.c_str(), file.c_str()) != 0) {
    unlink(tmp.c_str());
  }
}

Result<LayerRun> PackageLayers::Cached(const sandbox::SandboxSpec& base,
                                       const std::string& identity, const std::string& key) {
  LayerRun run;
  if (key.empty()) return run;
  run.key = key;
  run.dir = LayerDir(key);
  const std::string manifest = run.dir + "/" + kManifest;
  MCPEXEC_ASSIGN_OR_RETURN(std::shared_ptr<const void> lease, Lease(manifest));
  run.lease = lease;
  MCPEXEC_ASSIGN_OR_RETURN(LayerInfo info, ReadManifest(manifest, key));
  run.packages = std::move(info.packages);
  const std::string engine_key = identity + "/" + key;
  std::lock_guard lock(mutex_);
  std::shared_ptr<engine::Engine>& cold = engines_[engine_key];
  if (!cold) {
    sandbox::SandboxSpec spec = base;
    spec.warm = false;
    spec.zygote = false;
    spec.read_only_binds = {{run.dir + "/site", kLayerMount}};
    auto plan = sandbox::Compile(spec, backend_);
    if (!plan.ok()) {
      engines_.erase(engine_key);
      return plan.error();
    }
    if (engines_.size() > kMaxEngines) {
      engines_.clear();
      run.engine = engine::MakeHoldingEngine(engine::MakeColdEngine(std::move(*plan)), lease);
      return run;
    }
    cold = engine::MakeColdEngine(std::move(*plan));
  }
  run.engine = engine::MakeHoldingEngine(cold, std::move(lease));
  return run;
}

Result<std::vector<LayerInfo>> PackageLayers::List() const {
  const std::string dir = options_.cache_dir + "/layers";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return Errno(ErrorCode::kUnavailable, "open " + dir);
  std::vector<std::string> keys;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') keys.emplace_back(e->d_name);
  }
  closedir(d);
  std::vector<LayerInfo> layers;
  for (const std::string& key : keys) {
    const std::string manifest = LayerDir(key) + "/" + kManifest;
    auto info = ReadManifest(manifest, key);
    struct stat st;
    if (!info.ok() || stat(manifest.c_str(), &st) != 0) continue;
    info->last_used = std::chrono::system_clock::time_point(
        std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec));
    UniqueFd fd(open(manifest.c_str(), O_RDONLY | O_CLOEXEC));
    info->in_use = fd.Valid() && flock(fd.Get(), LOCK_EX | LOCK_NB) != 0;
    layers.push_back(std::move(*info));
  }
  std::sort(layers.begin(), layers.end(),
            [](const LayerInfo& a, const LayerInfo& b) { return a.last_used < b.last_used; });
  return layers;
}

Result<std::vector<LayerInfo>> PackageLayers::Evict(uint64_t max_bytes, const std::string& keep,
                                                    bool downloads) {
  MCPEXEC_ASSIGN_OR_RETURN(std::vector<LayerInfo> layers, List());
  uint64_t total = 0;
  for (const LayerInfo& layer : layers) total += layer.bytes;
  // An index's checked wheels count too, and go first: they only spare a download.
  const std::string downloads_dir = options_.cache_dir + "/downloads";
  uint64_t downloaded = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(downloads_dir, ec)) {
    downloaded += entry.is_regular_file(ec) ? entry.file_size(ec) : 0;
  }
  if (downloads || (downloaded > 0 && total + downloaded > max_bytes)) {
    // The checked wheels only, by name (their sha256): a transfer under way (.part-*) for
    // another installation stays.
    for (const auto& entry : std::filesystem::directory_iterator(downloads_dir, ec)) {
      const std::string name = entry.path().filename();
      if (IsSha256Hex(name)) {
        unlink(entry.path().c_str());
      }
    }
  }
  std::vector<LayerInfo> removed;
  for (LayerInfo& layer : layers) {
    if (max_bytes > 0 && total <= max_bytes) break;  // 0: every layer no run holds
    if (layer.key == keep) continue;
    const std::string manifest = LayerDir(layer.key) + "/" + kManifest;
    UniqueFd fd(open(manifest.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.Valid() || flock(fd.Get(), LOCK_EX | LOCK_NB) != 0) continue;  // a run holds it
    // Out of the cache at once (a new use finds nothing and installs again), then removed.
    auto suffix = RandomHex(8);
    if (!suffix.ok()) return suffix.error();
    const std::string gone = options_.cache_dir + "/staging/" + std::to_string(getpid()) +
                             "-evicted-" + *suffix;
    // Writable first: moving a directory rewrites its "..", which its 0555 forbids a rootless
    // server.
    if (chmod(LayerDir(layer.key).c_str(), 0755) != 0 ||
        rename(LayerDir(layer.key).c_str(), gone.c_str()) != 0) {
      chmod(LayerDir(layer.key).c_str(), 0555);
      continue;
    }
    fd = UniqueFd();
    (void)RemoveTree(gone);
    total -= std::min(total, layer.bytes);
    removed.push_back(std::move(layer));
  }
  return removed;
}

Result<std::string> PackageLayers::InstallNew(const sandbox::SandboxSpec& base,
                                              const std::string& identity,
                                              const std::vector<Requirement>& requirements,
                                              const InstallerHooks& hooks) {
  MCPEXEC_ASSIGN_OR_RETURN(std::string suffix, RandomHex(8));
  Staging staging(options_.cache_dir + "/staging/" + std::to_string(getpid()) + "-" + suffix);
  if (mkdir(staging.Path().c_str(), 0755) != 0) {
    return Errno(ErrorCode::kUnavailable, "mkdir " + staging.Path());
  }
  MCPEXEC_ASSIGN_OR_RETURN(
      Installation installation,
      Install(base, backend_, options_.installer, requirements, staging.Path(), hooks));
  if (installation.packages.empty()) return std::string();
  if (!options_.allow.empty()) {
    for (const Installed& p : installation.packages) {
      const std::string name = NormalizeName(p.name);
      if (std::find(options_.allow.begin(), options_.allow.end(), name) == options_.allow.end()) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "packages: they need \"" + name + "\" " + p.version +
                             ", which is not on this server's allow-list "
                             "(MCP_EXEC_PACKAGE_ALLOW)");
      }
    }
  }
  std::string set = std::string(kLayerFormat) + "\n" + identity + "\n";
  for (const Installed& p : installation.packages) {
    set += NormalizeName(p.name) + " " + p.version + " " + p.sha256 + "\n";
  }
  const std::string key = Sha256Hex(set);
  const std::string manifest = staging.Path() + "/" + kManifest;
  UniqueFd fd(open(manifest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
  if (!fd.Valid()) return Errno(ErrorCode::kUnavailable, "create " + manifest);
  MCPEXEC_RETURN_IF_ERROR(WriteAll(fd.Get(), ManifestOf(installation, identity).dump(1) + "\n"));
  // Renamed while still writable (moving a directory rewrites its ".."), then made read-only.
  if (rename(staging.Path().c_str(), LayerDir(key).c_str()) != 0) {
    // Another server, or an earlier request naming the same set differently, made it first.
    if (errno != EEXIST && errno != ENOTEMPTY) {
      return Errno(ErrorCode::kUnavailable, "rename a layer into " + LayerDir(key));
    }
    return key;
  }
  staging.Release();
  if (chmod(LayerDir(key).c_str(), 0555) != 0) {
    return Errno(ErrorCode::kUnavailable, "chmod " + LayerDir(key));
  }
  return key;
}

Result<LayerRun> PackageLayers::Prepare(const sandbox::SandboxSpec& base,
                                        const std::string& identity,
                                        const std::vector<Requirement>& requirements,
                                        const InstallerHooks& hooks) {
  MCPEXEC_ASSIGN_OR_RETURN(std::string source, SourceState());
  std::vector<std::string> keys;
  for (const Requirement& r : requirements) keys.push_back(r.key);
  std::sort(keys.begin(), keys.end());
  std::string request = std::string(kLayerFormat) + "\n" + identity + "\n" + source + "\n";
  for (const std::string& k : keys) request += k + "\n";
  const std::string request_key = Sha256Hex(request);

  std::shared_ptr<Flight> flight;
  {
    std::unique_lock lock(mutex_);
    for (;;) {
      auto known = resolved_.find(request_key);
      if (known != resolved_.end() && index_ &&
          std::chrono::system_clock::now() - known->second.at > kIndexResolutionTtl) {
        resolved_.erase(known);  // resolve it again: the index may have a newer release
        known = resolved_.end();
      }
      if (known != resolved_.end()) {
        const std::string key = known->second.key;
        lock.unlock();
        auto cached = Cached(base, identity, key);
        if (cached.ok() || cached.error().code != ErrorCode::kNotFound) return cached;
        lock.lock();  // removed from the cache since (evicted, pruned): install it again
        resolved_.erase(request_key);
        unlink(RequestFile(request_key).c_str());
        continue;
      }
      auto it = installing_.find(request_key);
      if (it == installing_.end()) {
        // Resolved by an earlier process (a server before a restart, another `run`).
        const std::string file = RequestFile(request_key);
        struct stat st;
        auto remembered = ReadFile(file);
        if (remembered.ok() && (remembered->empty() || remembered->size() == 64) &&
            stat(file.c_str(), &st) == 0) {
          resolved_[request_key] = {
              *remembered, std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec)};
          if (!index_ || std::chrono::system_clock::now() - resolved_[request_key].at <=
                             kIndexResolutionTtl) {
            continue;
          }
          resolved_.erase(request_key);
        }
        break;
      }
      std::shared_ptr<Flight> theirs = it->second;
      done_.wait(lock, [&theirs] { return theirs->done; });
      // Its caller cancelled it, or the cache could not be written: this call tries itself.
      if (theirs->error && theirs->error->code != ErrorCode::kUnavailable) return *theirs->error;
    }
    flight = installing_[request_key] = std::make_shared<Flight>();
  }
  Result<std::string> key = InstallNew(base, identity, requirements, hooks);
  {
    std::lock_guard lock(mutex_);
    flight->done = true;
    if (key.ok()) {
      resolved_[request_key] = {*key, std::chrono::system_clock::now()};
      RememberRequest(request_key, *key);
    } else {
      flight->error = key.error();
    }
    installing_.erase(request_key);
  }
  done_.notify_all();
  if (!key.ok()) return key.error();
  // The cache may now be over its size: the least recently used layers go, but this one. A
  // failure to evict costs disk, not this call.
  if (!key->empty()) (void)Evict(options_.max_cache_bytes, *key);
  MCPEXEC_ASSIGN_OR_RETURN(LayerRun run, Cached(base, identity, *key));
  run.installed_now = true;
  return run;
}

}  // namespace mcpexec::packages
