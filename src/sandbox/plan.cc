#include "sandbox/plan.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "base/sys.h"
#include "sandbox/child/zygote_run.h"
#include "sandbox/warm_agent.h"
#include "sandbox/workspace_files.h"
#include "sandbox/zygote_extension.h"

namespace mcpexec::sandbox {
namespace {

constexpr const char* kRootfsHint =
    "build it with tools/build-rootfs (or tools/setup), or point --rootfs / MCP_EXEC_ROOTFS at "
    "a built one";

constexpr const char* kSearchPath[] = {"/usr/local/bin", "/usr/bin", "/bin"};
constexpr const char* kPathEnv = "PATH=/usr/local/bin:/usr/bin:/bin";

// The /proc entries Docker masks (moby's default MaskedPaths; /proc/interrupts shows the host's
// devices and per-CPU interrupt counts): files are covered with /dev/null, directories with an
// empty read-only tmpfs. Its /sys entries (firmware, devices/virtual/powercap) need nothing:
// the sandbox has no /sys.
constexpr const char* kMaskedProcFiles[] = {
    "interrupts", "kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug"};
constexpr const char* kMaskedProcDirs[] = {"acpi", "asound", "scsi"};
// Docker's ReadonlyPaths.
constexpr const char* kReadOnlyProcPaths[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
constexpr const char* kDevices[] = {"null", "zero", "full", "random", "urandom"};
// Inodes a tmpfs of `bytes` may hold: one per KiB. Without a cap, empty files (which use no
// blocks) would each cost kernel memory up to the kernel's default of half the RAM's pages.
uint64_t TmpfsInodes(uint64_t bytes) { return std::max<uint64_t>(1024, bytes / 1024); }

constexpr std::pair<const char*, const char*> kDevSymlinks[] = {{"/proc/self/fd", "fd"},
                                                                {"/proc/self/fd/0", "stdin"},
                                                                {"/proc/self/fd/1", "stdout"},
                                                                {"/proc/self/fd/2", "stderr"}};

// Files a rootfs may ship to be copied into every fresh workspace (HOME), like /etc/skel:
// tools/build-rootfs puts matplotlib's font cache there, which matplotlib only reads from a
// writable directory.
constexpr const char* kHomeSkeleton = "/usr/share/mcp-exec/home";
constexpr size_t kMaxSkeletonEntries = 64;
constexpr uintmax_t kMaxSkeletonBytes = 1 << 20;

constexpr unsigned long kProcFlags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
constexpr uint64_t kZygoteWorkspaceBytes = 8ull << 20;
// Where a zygote binds the rootfs a second time, with nothing mounted below it: a directory of
// every Debian rootfs, empty in a run (the bind is the run's root, not a mount in it).
constexpr const char* kZygoteRunRoot = "/mnt";
constexpr unsigned long kRoRemount = MS_BIND | MS_REMOUNT | MS_RDONLY;

// A read-only remount inside a user namespace must keep the flags the kernel locked on the
// source mount, or it fails with EPERM (mount(2), "locked" flags in mount_namespaces(7)).
unsigned long LockedFlags(const struct statvfs& st) {
  unsigned long flags = 0;
  if (st.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (st.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (st.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (st.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return flags;
}

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<std::string> ResolveRootfs(const std::string& rootfs) {
  if (rootfs.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, std::string("no rootfs configured: ") + kRootfsHint);
  }
  char real[PATH_MAX];
  if (realpath(rootfs.c_str(), real) == nullptr) {
    return Errno(ErrorCode::kNotFound, "rootfs " + rootfs)
        .WithContext(std::string("the Python rootfs is missing (") + kRootfsHint + ")");
  }
  if (!IsDir(real)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "rootfs " + rootfs + " is not a directory: " + kRootfsHint);
  }
  for (const char* dir : {"proc", "dev", "tmp"}) {
    if (!IsDir(std::string(real) + "/" + dir)) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "rootfs " + rootfs + " has no /" + dir +
                           " directory to mount on, so it is not a complete rootfs: " +
                           kRootfsHint);
    }
  }
  return std::string(real);
}

Result<std::string> ResolveInterpreter(const std::string& root, const std::string& python) {
  auto executable = [&](const std::string& inside) {
    return faccessat(AT_FDCWD, (root + inside).c_str(), X_OK, AT_EACCESS) == 0;
  };
  if (python.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "the interpreter name is empty");
  }
  if (python.find('/') != std::string::npos) {
    if (python[0] != '/') {
      return MakeError(ErrorCode::kInvalidArgument,
                       "interpreter '" + python +
                           "' must be a bare name or an absolute path inside the rootfs");
    }
    if (executable(python)) return python;
  } else {
    for (const char* dir : kSearchPath) {
      const std::string inside = std::string(dir) + "/" + python;
      if (executable(inside)) return inside;
    }
  }
  return MakeError(ErrorCode::kNotFound,
                   "interpreter '" + python + "' is not an executable in the rootfs " + root +
                       " (searched /usr/local/bin:/usr/bin:/bin)")
      .WithFixes({"set MCP_EXEC_PYTHON to an interpreter the rootfs has",
                  "or build the rootfs with tools/build-rootfs",
                  "or point --rootfs / MCP_EXEC_ROOTFS at a complete rootfs"});
}

MountOp Mount(std::string source, std::string target, std::string fstype, unsigned long flags,
              std::string data, std::string what) {
  return MountOp{MountOpKind::kMount, false, std::move(source), std::move(target),
                 std::move(fstype), std::move(data), flags, 0, std::move(what)};
}

MountOp Simple(MountOpKind kind, std::string source, std::string target, uint32_t mode,
               std::string what) {
  return MountOp{kind, false, std::move(source), std::move(target), "", "", 0, mode,
                 std::move(what)};
}

MountOp Optional(MountOp op) {
  op.optional = true;
  return op;
}

MountOp ProcMount(const std::string& proc) {
  return Mount("proc", proc, "proc", kProcFlags, "", "mount a fresh /proc");
}

void AddProcMaskOps(const std::string& proc, std::vector<MountOp>& ops) {
  for (const char* f : kMaskedProcFiles) {
    ops.push_back(Optional(Mount("/dev/null", proc + "/" + f, "", MS_BIND, "",
                                 std::string("mask /proc/") + f)));
  }
  for (const char* d : kMaskedProcDirs) {
    ops.push_back(Optional(Mount("tmpfs", proc + "/" + d, "tmpfs", kProcFlags | MS_RDONLY,
                                 "size=0,mode=0555", std::string("mask /proc/") + d)));
  }
  for (const char* p : kReadOnlyProcPaths) {
    const std::string path = proc + "/" + p;
    const std::string what = std::string("make /proc/") + p + " read-only";
    ops.push_back(Optional(Mount(path, path, "", MS_BIND | MS_REC, "", what)));
    ops.push_back(Optional(Mount("", path, "", kRoRemount | kProcFlags, "", what)));
  }
}

MountOp ShmMount(const std::string& shm, uint64_t shm_bytes) {
  return Mount("tmpfs", shm, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
               "mode=1777,size=" + std::to_string(shm_bytes) +
                   ",nr_inodes=" + std::to_string(TmpfsInodes(shm_bytes)),
               "mount the /dev/shm tmpfs");
}

void AddDevOps(const std::string& dev, uint64_t shm_bytes, std::vector<MountOp>& ops) {
  constexpr unsigned long kDevFlags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
  ops.push_back(Mount("tmpfs", dev, "tmpfs", kDevFlags, "mode=0755,size=64k", "mount /dev"));
  for (const char* d : kDevices) {
    const std::string node = dev + "/" + d;
    ops.push_back(Simple(MountOpKind::kTouch, "", node, 0666, std::string("create /dev/") + d));
    ops.push_back(Mount(std::string("/dev/") + d, node, "", MS_BIND, "",
                        std::string("bind the host's /dev/") + d));
  }
  for (const auto& [to, name] : kDevSymlinks) {
    ops.push_back(Simple(MountOpKind::kSymlink, to, dev + "/" + name, 0,
                         std::string("link /dev/") + name));
  }
  ops.push_back(Simple(MountOpKind::kMkdir, "", dev + "/shm", 01777, "create /dev/shm"));
  ops.push_back(ShmMount(dev + "/shm", shm_bytes));
  ops.push_back(Mount("", dev, "", kRoRemount | kDevFlags, "", "make /dev read-only"));
}

// Copies from `from` + kHomeSkeleton (the rootfs as the copier sees it) into `workspace`.
Result<void> AddHomeSkeletonOps(const std::string& root, const std::string& from,
                                const std::string& workspace, std::vector<MountOp>& ops) {
  namespace fs = std::filesystem;
  const fs::path skeleton = root + kHomeSkeleton;
  std::error_code ec;
  if (!fs::is_directory(skeleton, ec)) return Ok();
  size_t entries = 0;
  uintmax_t bytes = 0;
  for (auto it = fs::recursive_directory_iterator(skeleton, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(skeleton).string();
    const std::string target = workspace + "/" + rel;
    const std::string what = "copy " + std::string(kHomeSkeleton) + "/" + rel + " into HOME";
    if (it->is_directory(ec)) {
      ops.push_back(Simple(MountOpKind::kMkdir, "", target, 0755, what));
    } else if (it->is_regular_file(ec) && !it->is_symlink(ec)) {
      bytes += it->file_size(ec);
      ops.push_back(Simple(MountOpKind::kCopyFile, from + kHomeSkeleton + "/" + rel, target, 0644,
                           what));
    } else {
      continue;
    }
    if (++entries > kMaxSkeletonEntries || bytes > kMaxSkeletonBytes) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "the rootfs's " + std::string(kHomeSkeleton) +
                           " is too large to copy into every workspace (limits: " +
                           std::to_string(kMaxSkeletonEntries) + " entries, " +
                           std::to_string(kMaxSkeletonBytes) + " bytes)");
    }
  }
  if (ec) return Errno(ErrorCode::kInternal, "read " + skeleton.string());
  return Ok();
}

// The workspace tmpfs on `tmp`, HOME's skeleton and /tmp/outputs: every sandbox's, made before
// the pivot by a cold init (`from` the host path of the rootfs), after it by a zygote's run.
Result<void> AddWorkspaceOps(const SandboxSpec& spec, const std::string& root,
                             const std::string& from, const std::string& tmp,
                             std::vector<MountOp>& ops) {
  ops.push_back(Mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      "mode=0755,size=" + std::to_string(spec.workspace_bytes) +
                          ",nr_inodes=" + std::to_string(TmpfsInodes(spec.workspace_bytes)) +
                          ",uid=" + std::to_string(spec.inside_uid) +
                          ",gid=" + std::to_string(spec.inside_gid),
                      "mount the workspace tmpfs on /tmp"));
  MCPEXEC_RETURN_IF_ERROR(AddHomeSkeletonOps(root, from, tmp, ops));
  // Created by init as the sandbox's user, so the program may write, replace or remove it.
  ops.push_back(Simple(MountOpKind::kMkdir, "", tmp + "/" + kOutputsDir, 0755,
                       "create /tmp/" + std::string(kOutputsDir)));
  return Ok();
}

Result<std::vector<MountOp>> BuildMountOps(const SandboxSpec& spec, const std::string& root,
                                           unsigned long rootfs_locked) {
  std::vector<MountOp> ops;
  ops.push_back(Mount("", "/", "", MS_REC | MS_PRIVATE, "",
                      "make every mount private to the sandbox"));
  ops.push_back(Mount(root, root, "", MS_BIND, "", "bind the rootfs"));
  ops.push_back(Mount("", root, "", kRoRemount | MS_NOSUID | MS_NODEV | rootfs_locked, "",
                      "make the rootfs read-only, nosuid, nodev"));
  if (spec.zygote) {
    // The rootfs once more, without the mounts below: each run builds its root on it.
    const std::string clean = root + kZygoteRunRoot;
    ops.push_back(Mount(root, clean, "", MS_BIND, "", "bind the rootfs for the zygote's runs"));
    ops.push_back(Mount("", clean, "", kRoRemount | MS_NOSUID | MS_NODEV | rootfs_locked, "",
                        "make the zygote runs' rootfs read-only, nosuid, nodev"));
  }
  for (const SandboxSpec::ReadOnlyBind& bind : spec.read_only_binds) {
    struct statvfs source;
    if (statvfs(bind.source.c_str(), &source) != 0) {
      return Errno(ErrorCode::kNotFound, "statvfs(" + bind.source + ")");
    }
    const std::string target = root + bind.target;
    ops.push_back(Mount(bind.source, target, "", MS_BIND, "", "bind " + bind.target));
    ops.push_back(Mount("", target, "", kRoRemount | MS_NOSUID | MS_NODEV | LockedFlags(source),
                        "", "make " + bind.target + " read-only, nosuid, nodev"));
  }
  if (spec.zygote && !spec.zygote_layers.empty()) {
    struct statvfs source;
    if (statvfs(spec.zygote_layers.c_str(), &source) != 0) {
      return Errno(ErrorCode::kNotFound, "statvfs(" + spec.zygote_layers + ")");
    }
    const std::string target = root + kPackageLayerMount;
    ops.push_back(Mount(spec.zygote_layers, target, "", MS_BIND, "",
                        "bind the package layers for the zygote's runs"));
    ops.push_back(Mount("", target, "", kRoRemount | MS_NOSUID | MS_NODEV | LockedFlags(source),
                        "", "make the package layers read-only, nosuid, nodev"));
  }
  ops.push_back(ProcMount(root + "/proc"));
  // A zygote's runs mount their own /proc from a nested user namespace, which the kernel allows
  // only where a /proc is fully visible: the zygote's has no masks, and runs no program.
  if (!spec.zygote) AddProcMaskOps(root + "/proc", ops);
  AddDevOps(root + "/dev", spec.shm_bytes, ops);
  // A zygote's own /tmp holds only its agent (removed once it runs, but larger than a small
  // MCP_EXEC_WORKSPACE_BYTES) and HOME's skeleton; each of its runs mounts its own.
  SandboxSpec own = spec;
  if (spec.zygote) own.workspace_bytes = std::max(spec.workspace_bytes, kZygoteWorkspaceBytes);
  MCPEXEC_RETURN_IF_ERROR(AddWorkspaceOps(own, root, root, root + kWorkspaceDir, ops));
  ops.push_back(Simple(MountOpKind::kPivotRoot, "", root, 0, "pivot_root into the rootfs"));
  return ops;
}

// What a zygote's run mounts itself once it has its own user, mount and pid namespaces: a cold
// sandbox's mounts, in a cold sandbox's order, on the zygote's clean bind of the rootfs
// (kZygoteRunRoot), then pivot_root into it. The zygote's own /proc, /dev, /dev/shm and /tmp
// are locked in the run's mount namespace (a less privileged user namespace cannot unmount what
// it inherited), but go with the old root; the zygote's /proc is still there when the run mounts
// its own, which a nested user namespace may do only where a /proc is fully visible.
// `layer_at`: where a run's package layer goes among them (ZygoteRunView::layer_at), where a
// cold run's read_only_binds go.
Result<std::vector<MountOp>> BuildZygoteRunMountOps(const SandboxSpec& spec,
                                                    const std::string& root,
                                                    unsigned long rootfs_locked,
                                                    size_t& layer_at) {
  const std::string run_root = kZygoteRunRoot;
  std::vector<MountOp> ops;
  ops.push_back(Mount("", "/", "", MS_REC | MS_PRIVATE, "",
                      "make every mount private to the sandbox"));
  // The zygote's bind is locked in the run's namespace, and pivot_root refuses a locked mount:
  // the run's root is a bind of it, as a cold run's is of the host's.
  ops.push_back(Mount(run_root, run_root, "", MS_BIND, "", "bind the rootfs"));
  ops.push_back(Mount("", run_root, "", kRoRemount | MS_NOSUID | MS_NODEV | rootfs_locked, "",
                      "make the rootfs read-only, nosuid, nodev"));
  layer_at = ops.size();
  ops.push_back(ProcMount(run_root + "/proc"));
  AddProcMaskOps(run_root + "/proc", ops);
  AddDevOps(run_root + "/dev", spec.shm_bytes, ops);
  MCPEXEC_RETURN_IF_ERROR(AddWorkspaceOps(spec, root, "", run_root + kWorkspaceDir, ops));
  ops.push_back(Simple(MountOpKind::kPivotRoot, "", run_root, 0, "pivot_root into the rootfs"));
  return ops;
}

// Only a regular file others may read: a dangling link or an unreadable file would make
// matplotlib fail to load its backend, where plain Agg works.
bool HasFigureBackend(const std::string& root) {
  struct stat st;
  return lstat((root + kFigureBackendPath).c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         (st.st_mode & S_IROTH) != 0;
}

// The program's whole environment. MPLBACKEND=Agg (or the figure backend, which is Agg too):
// the sandbox has no display, and matplotlib would otherwise probe for GUI toolkits.
std::vector<std::string> ProgramEnv(const SandboxSpec& spec, bool captures_figures) {
  std::vector<std::string> env = {kPathEnv, std::string("HOME=") + kWorkspaceDir, "LANG=C.UTF-8"};
  if (captures_figures) {
    env.push_back("MPLBACKEND=module://mcp_exec_figures");
    env.push_back("MCP_EXEC_FIGURE_MAX_PX=" + std::to_string(spec.figure_max_px));
  } else {
    env.push_back("MPLBACKEND=Agg");
  }
  env.push_back("PYTHONDONTWRITEBYTECODE=1");
  env.insert(env.end(), spec.extra_env.begin(), spec.extra_env.end());
  return env;
}

}  // namespace

const char* MountOpKindName(MountOpKind kind) {
  switch (kind) {
    case MountOpKind::kMount: return "mount";
    case MountOpKind::kMkdir: return "mkdir";
    case MountOpKind::kTouch: return "touch";
    case MountOpKind::kSymlink: return "symlink";
    case MountOpKind::kCopyFile: return "copy";
    case MountOpKind::kPivotRoot: return "pivot_root";
  }
  return "?";
}

void LaunchPlan::BuildView() {
  mount_views_.clear();
  for (const MountOp& op : mounts_) {
    mount_views_.push_back(MountOpView{op.kind, op.optional,
                                       op.source.empty() ? nullptr : op.source.c_str(),
                                       op.target.c_str(),
                                       op.fstype.empty() ? nullptr : op.fstype.c_str(), op.flags,
                                       op.data.empty() ? nullptr : op.data.c_str(), op.mode});
  }
  argv_ptrs_.clear();
  for (const auto& a : argv_) argv_ptrs_.push_back(a.c_str());
  argv_ptrs_.push_back(nullptr);
  env_ptrs_.clear();
  for (const auto& e : env_) env_ptrs_.push_back(e.c_str());
  env_ptrs_.push_back(nullptr);

  view_ = PlanView{};
  view_.mount_ops = mount_views_.data();
  view_.mount_op_count = mount_views_.size();
  view_.hostname = spec_.hostname.c_str();
  view_.hostname_len = spec_.hostname.size();
  view_.uid = spec_.inside_uid;
  view_.gid = spec_.inside_gid;
  view_.last_cap = static_cast<int>(cap_max_bits()) - 1;
  view_.workdir = workdir_.c_str();
  view_.warm = spec_.warm;
  view_.program_path = kProgramPath;
  view_.agent = agent_.c_str();
  view_.agent_len = agent_.size();
  if (spec_.zygote) {
    view_.zygote_module = kZygoteExtension;
    view_.zygote_module_len = kZygoteExtensionSize;
    view_.zygote_init = kZygoteInitBinary;
    view_.zygote_init_len = kZygoteInitBinarySize;
  }
  view_.rlimits = rlimits_.data();
  view_.rlimit_count = rlimits_.size();
  view_.seccomp = seccomp_ ? seccomp_->Program() : nullptr;
  // A zygote's interpreter runs no program: like an init, it has neither the program's filter,
  // which denies the namespaces and mounts it makes for each run, nor the program's rlimits,
  // whose per-user counts (processes, pending signals) its runs' namespaces would inherit as a
  // bound on all of them together. Each run applies both to its program (ZygoteRunSetup).
  if (spec_.zygote) {
    view_.seccomp = nullptr;
    view_.rlimit_count = 0;
  }
  view_.supervisor_args = supervisor_args_;
  view_.supervisor_args_len = supervisor_args_len_;
  view_.exec_path = exec_path_.c_str();
  view_.argv = argv_ptrs_.data();
  view_.envp = env_ptrs_.data();
}

std::string LaunchPlan::Describe() const {
  std::ostringstream out;
  out << "uid_map " << uid_map_ << "gid_map " << gid_map_ << "setgroups deny\n";
  for (const MountOp& op : mounts_) {
    out << MountOpKindName(op.kind) << (op.optional ? "?" : "") << " " << op.what << ": "
        << (op.source.empty() ? "-" : op.source) << " -> " << op.target;
    if (!op.fstype.empty()) out << " type " << op.fstype;
    if (op.flags != 0) out << " flags 0x" << std::hex << op.flags << std::dec;
    if (!op.data.empty()) out << " data " << op.data;
    if (op.mode != 0) out << " mode 0" << std::oct << op.mode << std::dec;
    out << "\n";
  }
  out << "hostname " << spec_.hostname << "\n"
      << "ids " << spec_.inside_uid << ":" << spec_.inside_gid << "\n"
      << "cwd " << workdir_ << "\n";
  for (const RlimitView& r : rlimits_) {
    out << "rlimit " << r.resource << " " << r.limit.rlim_cur << " " << r.limit.rlim_max << "\n";
  }
  out << "seccomp " << spec_.seccomp_profile;
  if (seccomp_) out << ": " << seccomp_->Instructions().size() << " BPF instructions";
  out << "\n";
  out << "exec";
  for (const auto& a : argv_) out << " " << a;
  if (spec_.zygote) {
    out << " (the zygote's agent, which forks each run: its rlimits and seccomp apply there)";
  } else if (spec_.warm) {
    out << " (the agent, then the program)";
  }
  out << "\nenv";
  for (const auto& e : env_) out << " " << e;
  out << "\n";
  return out.str();
}

namespace {

// This process's argument area: fields 48 and 49 of /proc/self/stat (arg_start, arg_end).
std::pair<char*, size_t> OwnArgumentArea() {
  auto fields = ReadProcStat("self");
  if (!fields.ok() || fields->size() < 49) return {nullptr, 0};
  const unsigned long long start = std::strtoull((*fields)[47].c_str(), nullptr, 10);
  const unsigned long long end = std::strtoull((*fields)[48].c_str(), nullptr, 10);
  if (start == 0 || end <= start) return {nullptr, 0};
  return {reinterpret_cast<char*>(start), static_cast<size_t>(end - start)};
}

// A limit of at most `soft`/`hard`, never above what this process has: the program has no
// capability to raise a hard limit.
RlimitView Lowered(int resource, rlim_t soft, rlim_t hard) {
  struct rlimit now{};
  if (getrlimit(resource, &now) == 0) {
    hard = std::min(hard, now.rlim_max);
    soft = std::min(soft, hard);
  }
  return RlimitView{resource, {soft, hard}};
}

}  // namespace

Result<std::shared_ptr<const LaunchPlan>> Compile(const SandboxSpec& spec,
                                                  std::shared_ptr<limits::LimitsBackend> limits) {
  if (!limits) {
    return MakeError(ErrorCode::kInvalidArgument, "no resource-limits backend for the sandbox");
  }
  MCPEXEC_ASSIGN_OR_RETURN(std::string root, ResolveRootfs(spec.rootfs));
  MCPEXEC_ASSIGN_OR_RETURN(std::string exec_path, ResolveInterpreter(root, spec.python));
  if (spec.hostname.empty() || spec.hostname.size() > 64) {
    return MakeError(ErrorCode::kInvalidArgument, "hostname must be 1 to 64 bytes");
  }
  if (spec.outside_uid == 0 || spec.outside_gid == 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "refusing to map the sandbox's user to host uid or gid 0: configure an "
                     "unprivileged host uid/gid (--host-uid, --host-gid)");
  }
  if (spec.privileged_id_mapping && getgroups(0, nullptr) != 0) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "this process runs as root with supplementary groups, which every sandbox "
                     "would inherit and, with setgroups denied, could not clear: drop them "
                     "first (sandbox::DropSupplementaryGroups; mcp-exec's commands do)");
  }
  for (const std::string& var : spec.extra_env) {
    if (std::string problem = ExtraEnvProblem(var); !problem.empty()) {
      return MakeError(ErrorCode::kInvalidArgument, problem);
    }
  }
  if (spec.zygote && !spec.read_only_binds.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "a zygote plan cannot bind directories into its runs");
  }
  if (!spec.zygote && !spec.zygote_layers.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "package layers for a zygote in a plan that is "
                                                  "not a zygote's");
  }
  // A zygote's layers are checked as a bind of them would be.
  std::vector<SandboxSpec::ReadOnlyBind> binds = spec.read_only_binds;
  if (!spec.zygote_layers.empty()) binds.push_back({spec.zygote_layers, kPackageLayerMount});
  for (const SandboxSpec::ReadOnlyBind& bind : binds) {
    if (bind.source.empty() || bind.source[0] != '/' || !IsDir(bind.source)) {
      return MakeError(ErrorCode::kNotFound, "no directory " + bind.source + " to bind into the "
                                             "sandbox at " + bind.target);
    }
    // No link on the way: the bind is made before pivot_root, where a link would lead out of
    // the rootfs.
    char* real = realpath((root + bind.target).c_str(), nullptr);
    const bool same = real != nullptr && root + bind.target == real;
    free(real);
    if (bind.target.empty() || bind.target[0] != '/' || !same || !IsDir(root + bind.target)) {
      return MakeError(ErrorCode::kNotFound,
                       "the rootfs " + root + " has no directory " + bind.target +
                           " (images built before packages on demand lack it): rebuild the "
                           "image (mcp-exec env build NAME, or tools/build-rootfs)");
    }
  }
  struct statvfs st;
  if (statvfs(root.c_str(), &st) != 0) return Errno(ErrorCode::kInternal, "statvfs(" + root + ")");

  // A zygote's own user namespace maps the host ids to themselves, and its interpreter runs as
  // them. A run's namespace, nested in it, then maps 65532 to the host ids as a cold run's does,
  // and reads the same uid_map: a process reads its map relative to the parent namespace.
  SandboxSpec own = spec;
  if (spec.zygote) {
    own.inside_uid = spec.outside_uid;
    own.inside_gid = spec.outside_gid;
  }
  std::shared_ptr<LaunchPlan> plan(new LaunchPlan());
  plan->spec_ = own;
  plan->spec_.rootfs = root;
  MCPEXEC_ASSIGN_OR_RETURN(plan->mounts_, BuildMountOps(own, root, LockedFlags(st)));
  plan->uid_map_ = std::to_string(own.inside_uid) + " " + std::to_string(own.outside_uid) + " 1\n";
  plan->gid_map_ = std::to_string(own.inside_gid) + " " + std::to_string(own.outside_gid) + " 1\n";
  plan->workdir_ = kWorkspaceDir;
  plan->exec_path_ = exec_path;
  plan->argv_ = {exec_path, kProgramPath};
  plan->captures_figures_ = HasFigureBackend(root);
  plan->env_ = ProgramEnv(spec, plan->captures_figures_);
  // Every run: no file larger than the workspace, and the fixed limits of kProgramRlimits.
  const rlim_t fsize = static_cast<rlim_t>(spec.workspace_bytes);
  plan->rlimits_ = {Lowered(RLIMIT_FSIZE, fsize, fsize)};
  for (const FixedRlimit& r : kProgramRlimits) {
    plan->rlimits_.push_back(Lowered(r.resource, r.value, r.value));
  }
  for (const limits::RlimitSetting& r : limits->ProgramRlimits()) {
    plan->rlimits_.push_back(Lowered(r.resource, r.soft, r.hard));
  }
  plan->limits_ = std::move(limits);
  std::tie(plan->supervisor_args_, plan->supervisor_args_len_) = OwnArgumentArea();
  if (spec.seccomp_profile.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "no seccomp profile configured: set MCP_EXEC_SECCOMP_PROFILE to a profile, "
                     "or to \"unconfined\" to run without a filter");
  }
  if (spec.seccomp_profile != kSeccompUnconfined) {
    MCPEXEC_ASSIGN_OR_RETURN(SeccompFilter filter, FilterForProfile(spec.seccomp_profile));
    plan->seccomp_.emplace(std::move(filter));
  }
  if (spec.zygote) {
    if (!spec.warm) return MakeError(ErrorCode::kInvalidArgument, "a zygote plan must be warm");
    struct stat run_root;
    if (stat((root + kZygoteRunRoot).c_str(), &run_root) != 0 || !S_ISDIR(run_root.st_mode)) {
      return MakeError(ErrorCode::kNotFound,
                       "the rootfs " + root + " has no " + kZygoteRunRoot +
                           " directory, where a zygote binds the rootfs its runs are built on: "
                           "add an empty one to the rootfs, or use MCP_EXEC_ENGINE=pool");
    }
    ZygoteRunSetup setup;
    MCPEXEC_ASSIGN_OR_RETURN(setup.mounts,
                             BuildZygoteRunMountOps(spec, root, LockedFlags(st), setup.layer_at));
    if (!spec.zygote_layers.empty()) {
      struct statvfs layers;
      if (statvfs(spec.zygote_layers.c_str(), &layers) != 0) {
        return Errno(ErrorCode::kNotFound, "statvfs(" + spec.zygote_layers + ")");
      }
      setup.layers_dir = kPackageLayerMount;
      setup.layer_target = std::string(kZygoteRunRoot) + kPackageLayerMount;
      setup.layer_remount_flags = kRoRemount | MS_NOSUID | MS_NODEV | LockedFlags(layers);
      if (setup.mounts.size() + 2 > kZygoteRunMaxMountOps) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "a zygote run's set-up has too many mount steps for a package layer");
      }
    }
    // The run's own user namespace maps its ids to the zygote's, which are the host's.
    setup.uid_map = std::to_string(spec.inside_uid) + " " + std::to_string(spec.outside_uid) + " 1\n";
    setup.gid_map = std::to_string(spec.inside_gid) + " " + std::to_string(spec.outside_gid) + " 1\n";
    setup.hostname = spec.hostname;
    setup.workdir = plan->workdir_;
    // A cold init is a clone of this process, and shows its name.
    auto comm = ReadFile("/proc/self/comm");
    setup.init_name = comm.ok() ? comm->substr(0, comm->find('\n')) : "mcp-exec";
    setup.last_cap = static_cast<int>(cap_max_bits()) - 1;
    setup.rlimits = plan->rlimits_;
    if (plan->seccomp_) setup.seccomp = plan->seccomp_->Instructions();
    plan->agent_ = ZygoteAgentSource(spec.preload, setup);
    plan->zygote_run_mounts_ = std::move(setup.mounts);
  } else if (spec.warm) {
    plan->agent_ = WarmAgentSource(spec.preload);
  }
  plan->BuildView();
  return std::shared_ptr<const LaunchPlan>(std::move(plan));
}

std::string ExtraEnvProblem(const std::string& var) {
  const size_t eq = var.find('=');
  const std::string key = var.substr(0, eq);
  if (eq == std::string::npos || key.empty()) {
    return "the environment variable \"" + var + "\" is not KEY=VALUE";
  }
  if (var.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
    return "the environment variable " + key + " holds a NUL or a line break";
  }
  for (const char ch : key) {
    const bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                    (ch >= '0' && ch <= '9') || ch == '_';
    if (!ok) return "the environment variable name \"" + key + "\" is not letters, digits and _";
  }
  // What the sandbox sets itself (ProgramEnv) stays as it is: an image may add, never replace.
  static constexpr const char* kOwn[] = {"PATH", "HOME", "LANG", "MPLBACKEND"};
  static constexpr const char* kOwnPrefixes[] = {"PYTHON", "MCP_EXEC_"};
  bool own = false;
  for (const char* name : kOwn) own = own || key == name;
  for (const char* prefix : kOwnPrefixes) own = own || key.rfind(prefix, 0) == 0;
  if (own) {
    return "the environment variable " + key +
           " is set by mcp-exec itself (PATH, HOME, LANG, MPLBACKEND, PYTHON*, MCP_EXEC_*) and "
           "cannot be given";
  }
  return "";
}

HostIds ResolveHostIds(uid_t root_uid, gid_t root_gid) {
  if (geteuid() == 0) return HostIds{root_uid, root_gid, true};
  return HostIds{geteuid(), getegid(), false};
}

Result<void> DropSupplementaryGroups() {
  if (getgroups(0, nullptr) == 0) return Ok();
  if (setgroups(0, nullptr) != 0) {
    return Errno(ErrorCode::kPermissionDenied, "drop the supplementary groups (setgroups)");
  }
  return Ok();
}

}  // namespace mcpexec::sandbox
