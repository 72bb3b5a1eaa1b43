#include "sandbox/seccomp_filter.h"


#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>

#include "base/unique_fd.h"

namespace mcpexec::sandbox {
namespace {

struct SeccompRelease {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using SeccompCtx = std::unique_ptr<void, SeccompRelease>;

// The kernel's BPF_MAXINSNS: seccomp(2) refuses longer programs with EINVAL.
constexpr size_t kMaxInstructions = 4096;

struct ArchNames {
  uint32_t token;
  const char* profile;  // as profiles spell it
  const char* go;       // runtime.GOARCH, what Docker compares `arches` with
  const char* libseccomp;
};

constexpr ArchNames kArchNames[] = {
    {SCMP_ARCH_X86_64, "SCMP_ARCH_X86_64", "amd64", "x86_64"},
    {SCMP_ARCH_X86, "SCMP_ARCH_X86", "386", "x86"},
    {SCMP_ARCH_X32, "SCMP_ARCH_X32", "amd64p32", "x32"},
    {SCMP_ARCH_AARCH64, "SCMP_ARCH_AARCH64", "arm64", "aarch64"},
    {SCMP_ARCH_ARM, "SCMP_ARCH_ARM", "arm", "arm"},
    {SCMP_ARCH_PPC64LE, "SCMP_ARCH_PPC64LE", "ppc64le", "ppc64le"},
    {SCMP_ARCH_PPC64, "SCMP_ARCH_PPC64", "ppc64", "ppc64"},
    {SCMP_ARCH_PPC, "SCMP_ARCH_PPC", "ppc", "ppc"},
    {SCMP_ARCH_S390X, "SCMP_ARCH_S390X", "s390x", "s390x"},
    {SCMP_ARCH_S390, "SCMP_ARCH_S390", "s390", "s390"},
    {SCMP_ARCH_RISCV64, "SCMP_ARCH_RISCV64", "riscv64", "riscv64"},
    {SCMP_ARCH_MIPS64, "SCMP_ARCH_MIPS64", "mips64", "mips64"},
    {SCMP_ARCH_MIPSEL64, "SCMP_ARCH_MIPSEL64", "mips64le", "mipsel64"},
    {SCMP_ARCH_MIPS, "SCMP_ARCH_MIPS", "mips", "mips"},
    {SCMP_ARCH_MIPSEL, "SCMP_ARCH_MIPSEL", "mipsle", "mipsel"},
};

const ArchNames* FindArch(uint32_t token) {
  for (const ArchNames& a : kArchNames) {
    if (a.token == token) return &a;
  }
  return nullptr;
}

std::string Hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

// A profile action with its errno resolved, as libseccomp encodes it.
struct Action {
  SeccompAction kind;
  uint32_t errno_ret;  // kErrno only

  uint32_t Encoded() const {
    switch (kind) {
      case SeccompAction::kAllow:
        return SCMP_ACT_ALLOW;
      case SeccompAction::kErrno:
        return SCMP_ACT_ERRNO(errno_ret);
      case SeccompAction::kKillThread:
        return SCMP_ACT_KILL_THREAD;
      case SeccompAction::kKillProcess:
        return SCMP_ACT_KILL_PROCESS;
      case SeccompAction::kTrap:
        return SCMP_ACT_TRAP;
      case SeccompAction::kLog:
        return SCMP_ACT_LOG;
    }
    return SCMP_ACT_KILL_PROCESS;
  }
  std::string Text() const {
    std::string s = SeccompActionName(kind);
    if (kind == SeccompAction::kErrno) s += "(" + ErrnoName(static_cast<int>(errno_ret)) + ")";
    return s;
  }
};

Action EntryAction(SeccompAction kind, const std::optional<uint32_t>& errno_ret) {
  return Action{kind, errno_ret.value_or(EPERM)};
}

scmp_compare CompareOp(SeccompOp op) {
  switch (op) {
    case SeccompOp::kNe:
      return SCMP_CMP_NE;
    case SeccompOp::kLt:
      return SCMP_CMP_LT;
    case SeccompOp::kLe:
      return SCMP_CMP_LE;
    case SeccompOp::kEq:
      return SCMP_CMP_EQ;
    case SeccompOp::kGe:
      return SCMP_CMP_GE;
    case SeccompOp::kGt:
      return SCMP_CMP_GT;
    case SeccompOp::kMaskedEq:
      return SCMP_CMP_MASKED_EQ;
  }
  return SCMP_CMP_EQ;
}

std::string ArgText(const SeccompArg& a) {
  const std::string arg = "arg" + std::to_string(a.index);
  switch (a.op) {
    case SeccompOp::kNe:
      return arg + " != " + Hex(a.value);
    case SeccompOp::kLt:
      return arg + " < " + Hex(a.value);
    case SeccompOp::kLe:
      return arg + " <= " + Hex(a.value);
    case SeccompOp::kEq:
      return arg + " == " + Hex(a.value);
    case SeccompOp::kGe:
      return arg + " >= " + Hex(a.value);
    case SeccompOp::kGt:
      return arg + " > " + Hex(a.value);
    case SeccompOp::kMaskedEq:
      return arg + " & " + Hex(a.value) + " == " + Hex(a.value_two);
  }
  return arg;
}

Result<KernelVersion> RunningKernel() {
  struct utsname u;
  if (uname(&u) != 0) return Errno(ErrorCode::kInternal, "uname");
  KernelVersion v;
  if (sscanf(u.release, "%d.%d", &v.major, &v.minor) != 2) {
    return MakeError(ErrorCode::kInternal,
                     std::string("cannot read the kernel version from \"") + u.release + "\"");
  }
  return v;
}

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

struct Host {
  uint32_t arch;
  std::string arch_name;     // libseccomp's name, for messages
  std::string profile_name;  // "SCMP_ARCH_X86_64"
  std::vector<std::string> arch_aliases;
  KernelVersion kernel;
  std::vector<std::string> caps;
};

bool ArchMatches(const std::vector<std::string>& arches, const Host& host) {
  for (const std::string& a : host.arch_aliases) {
    if (Contains(arches, a)) return true;
  }
  return false;
}

// Docker's includes/excludes: nullopt when the entry applies, else why not.
std::optional<std::string> WhyNotApplied(const SeccompSyscall& entry, const Host& host) {
  const SeccompCondition& ex = entry.excludes;
  if (!ex.arches.empty() && ArchMatches(ex.arches, host)) {
    return "excludes.arches names " + host.arch_name;
  }
  for (const std::string& cap : ex.caps) {
    if (Contains(host.caps, cap)) return "excludes.caps: " + cap + " is held";
  }
  if (ex.min_kernel && host.kernel >= *ex.min_kernel) return "excludes.minKernel: kernel is newer";
  const SeccompCondition& in = entry.includes;
  if (!in.arches.empty() && !ArchMatches(in.arches, host)) {
    return "includes.arches does not name " + host.arch_name;
  }
  for (const std::string& cap : in.caps) {
    if (!Contains(host.caps, cap)) return "includes.caps: " + cap + " is not held";
  }
  if (in.min_kernel && host.kernel < *in.min_kernel) return "includes.minKernel: kernel is older";
  return std::nullopt;
}

// runc's rule: conditions on distinct arguments form one rule (all must hold); when an index
// repeats, every condition is a rule of its own (any may hold).
std::vector<std::vector<SeccompArg>> RuleConditions(const std::vector<SeccompArg>& args) {
  if (args.empty()) return {{}};
  std::set<unsigned> indexes;
  for (const SeccompArg& a : args) indexes.insert(a.index);
  if (indexes.size() == args.size()) return {args};
  std::vector<std::vector<SeccompArg>> rules;
  for (const SeccompArg& a : args) rules.push_back({a});
  return rules;
}

struct AddedRule {
  uint32_t action;
  bool unconditional;
  std::string where;
  std::string action_text;
};

class Builder {
 public:
  Builder(const SeccompProfile& profile, Host host, scmp_filter_ctx ctx)
      : profile_(profile),
        host_(std::move(host)),
        ctx_(ctx),
        default_(EntryAction(profile.default_action, profile.default_errno_ret)) {}

  Result<void> AddEntries() {
    out_.description = "default " + default_.Text() + "\narch " + host_.arch_name +
                       ", other syscall ABIs kill the process\n";
    std::vector<std::string> unused;
    auto note = [&](const std::string& arch) {
      if (arch != host_.profile_name && !Contains(unused, arch)) unused.push_back(arch);
    };
    for (const std::string& arch : profile_.architectures) note(arch);
    for (const SeccompArchMapEntry& entry : profile_.arch_map) {
      note(entry.architecture);
      for (const std::string& sub : entry.sub_architectures) note(sub);
    }
    if (!unused.empty()) {
      out_.description += "not used (only the host's ABI):";
      for (const std::string& arch : unused) out_.description += " " + arch;
      out_.description += "\n";
    }
    for (const SeccompSyscall& entry : profile_.syscalls) {
      MCPEXEC_RETURN_IF_ERROR(AddEntry(entry));
    }
    return Ok();
  }

  std::vector<SkippedSyscall>& Skipped() { return out_.skipped; }
  std::string& Description() { return out_.description; }

 private:
  Result<void> AddEntry(const SeccompSyscall& entry) {
    if (auto why = WhyNotApplied(entry, host_)) {
      out_.description += "skip " + entry.where + ": " + *why + "\n";
      return Ok();
    }
    const Action action = EntryAction(entry.action, entry.errno_ret);
    if (action.Encoded() == default_.Encoded()) {
      out_.description += "skip " + entry.where + ": same action as the default\n";
      return Ok();
    }
    for (const std::string& name : entry.names) {
      const int nr = seccomp_syscall_resolve_name_arch(host_.arch, name.c_str());
      if (nr < 0) {
        // Negative numbers other than __NR_SCMP_ERROR are libseccomp's placeholders for
        // syscalls that exist on other architectures only.
        out_.skipped.push_back(SkippedSyscall{name, entry.where,
                                              nr == __NR_SCMP_ERROR
                                                  ? "unknown to libseccomp " + LibseccompVersion()
                                                  : "not a syscall on " + host_.arch_name});
        continue;
      }
      // Rules take the number in the native architecture's numbering (a placeholder when the
      // native one lacks the syscall); libseccomp translates it for the filter's architecture.
      const int host_nr = seccomp_syscall_resolve_name(name.c_str());
      for (const auto& conditions : RuleConditions(entry.args)) {
        MCPEXEC_RETURN_IF_ERROR(AddRule(entry, name, nr, host_nr, action, conditions));
      }
    }
    return Ok();
  }

  Result<void> AddRule(const SeccompSyscall& entry, const std::string& name, int nr, int host_nr,
                       const Action& action, const std::vector<SeccompArg>& conditions) {
    const bool unconditional = conditions.empty();
    for (const AddedRule& other : added_[nr]) {
      if (other.action != action.Encoded() && (unconditional || other.unconditional)) {
        return MakeError(ErrorCode::kInvalidArgument,
                         entry.where + ": the " + action.Text() + " rule for \"" + name +
                             "\" conflicts with the " + other.action_text + " rule of " +
                             other.where +
                             ": when a syscall has a rule without conditions, libseccomp "
                             "ignores its other rules, so one of the two would have no effect");
      }
    }
    std::vector<scmp_arg_cmp> cmps;
    std::string text;
    for (const SeccompArg& a : conditions) {
      cmps.push_back(scmp_arg_cmp{a.index, CompareOp(a.op), a.value, a.value_two});
      text += (text.empty() ? " if " : " and ") + ArgText(a);
    }
    const int rc = seccomp_rule_add_exact_array(ctx_, action.Encoded(), host_nr,
                                                static_cast<unsigned>(cmps.size()), cmps.data());
    if (rc != 0) {
      return MakeError(ErrorCode::kInvalidArgument,
                       entry.where + ": libseccomp rejected the " + action.Text() + " rule for \"" +
                           name + "\"" + text + ": " + ErrnoText(-rc));
    }
    added_[nr].push_back(AddedRule{action.Encoded(), unconditional, entry.where, action.Text()});
    out_.description += name + ": " + action.Text() + text + "\n";
    return Ok();
  }

  static std::string LibseccompVersion() {
    const scmp_version* v = seccomp_version();
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->micro);
  }

  struct Output {
    std::vector<SkippedSyscall> skipped;
    std::string description;
  };

  const SeccompProfile& profile_;
  const Host host_;
  scmp_filter_ctx ctx_;
  const Action default_;
  std::map<int, std::vector<AddedRule>> added_;
  Output out_;
};

Result<Host> ResolveHost(const SeccompCompileOptions& options) {
  Host host;
  host.arch = options.arch != 0 ? options.arch : seccomp_arch_native();
  if (const ArchNames* names = FindArch(host.arch)) {
    host.arch_name = names->libseccomp;
    host.profile_name = names->profile;
    host.arch_aliases = {names->go, names->libseccomp};
  } else {
    host.arch_name = "architecture " + Hex(host.arch);
  }
  if (options.kernel) {
    host.kernel = *options.kernel;
  } else {
    MCPEXEC_ASSIGN_OR_RETURN(host.kernel, RunningKernel());
  }
  host.caps = options.caps;
  return host;
}

Result<SeccompCtx> NewContext(const Host& host, const Action& default_action) {
  SeccompCtx ctx(seccomp_init(default_action.Encoded()));
  if (!ctx) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "defaultAction: libseccomp rejected " + default_action.Text());
  }
  if (host.arch != seccomp_arch_native()) {
    int rc = seccomp_arch_add(ctx.get(), host.arch);
    if (rc == 0) rc = seccomp_arch_remove(ctx.get(), SCMP_ARCH_NATIVE);
    if (rc != 0) {
      return MakeError(ErrorCode::kInvalidArgument, "libseccomp cannot build a filter for " +
                                                        host.arch_name + ": " + ErrnoName(-rc));
    }
  }
  // Foreign ABIs kill the whole process, not only the calling thread (libseccomp's default),
  // which would leave a half-dead process behind. The child sets no_new_privs itself before
  // loading the exported program; the attribute only matters for seccomp_load(). Level 2 sorts
  // the syscalls into a binary tree: a few comparisons per call instead of one per rule.
  const std::pair<scmp_filter_attr, uint32_t> attrs[] = {
      {SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS},
      {SCMP_FLTATR_CTL_NNP, 0},
      {SCMP_FLTATR_CTL_OPTIMIZE, 2},
  };
  for (const auto& [attr, value] : attrs) {
    const int rc = seccomp_attr_set(ctx.get(), attr, value);
    if (rc != 0) {
      errno = -rc;
      return Errno(ErrorCode::kInternal, "seccomp_attr_set(" + std::to_string(attr) + ")");
    }
  }
  return ctx;
}

// libseccomp 2.5.4 has no seccomp_export_bpf_mem(): export into a memfd and read it back.
Result<std::vector<sock_filter>> Export(scmp_filter_ctx ctx) {
  UniqueFd fd(memfd_create("mcp-exec-seccomp", MFD_CLOEXEC));
  if (!fd.Valid()) return Errno(ErrorCode::kResourceExhausted, "memfd_create");
  const int rc = seccomp_export_bpf(ctx, fd.Get());
  if (rc != 0) {
    errno = -rc;
    return Errno(ErrorCode::kInternal, "seccomp_export_bpf");
  }
  struct stat st;
  if (fstat(fd.Get(), &st) != 0) return Errno(ErrorCode::kInternal, "fstat(seccomp memfd)");
  const size_t bytes = static_cast<size_t>(st.st_size);
  if (bytes == 0 || bytes % sizeof(sock_filter) != 0) {
    return MakeError(ErrorCode::kInternal, "seccomp_export_bpf wrote " + std::to_string(bytes) +
                                               " bytes, not a whole number of BPF instructions");
  }
  std::vector<sock_filter> program(bytes / sizeof(sock_filter));
  auto* out = reinterpret_cast<char*>(program.data());
  for (size_t done = 0; done < bytes;) {
    const ssize_t n = pread(fd.Get(), out + done, bytes - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(ErrorCode::kInternal, "read(seccomp memfd)");
    if (n == 0) return MakeError(ErrorCode::kInternal, "seccomp memfd shrank while read");
    done += static_cast<size_t>(n);
  }
  if (program.size() > kMaxInstructions) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the profile compiles to " + std::to_string(program.size()) +
                         " BPF instructions; the kernel takes at most " +
                         std::to_string(kMaxInstructions) + ": fewer argument rules would help");
  }
  return program;
}

}  // namespace

Result<SeccompFilter> CompileSeccompFilter(const SeccompProfile& profile,
                                           const SeccompCompileOptions& options) {
  MCPEXEC_ASSIGN_OR_RETURN(Host host, ResolveHost(options));
  MCPEXEC_ASSIGN_OR_RETURN(
      SeccompCtx ctx,
      NewContext(host, EntryAction(profile.default_action, profile.default_errno_ret)));
  Builder builder(profile, host, ctx.get());
  MCPEXEC_RETURN_IF_ERROR(builder.AddEntries());

  SeccompFilter filter;
  MCPEXEC_ASSIGN_OR_RETURN(filter.data_->instructions, Export(ctx.get()));
  filter.data_->program.len = static_cast<unsigned short>(filter.data_->instructions.size());
  filter.data_->program.filter = filter.data_->instructions.data();
  filter.data_->skipped = std::move(builder.Skipped());
  filter.data_->description = std::move(builder.Description());
  for (const SkippedSyscall& s : filter.data_->skipped) {
    filter.data_->description += "skip " + s.name + " (" + s.where + "): " + s.reason + "\n";
  }
  filter.data_->description +=
      std::to_string(filter.data_->instructions.size()) + " BPF instructions\n";
  return filter;
}

SeccompFilter SeccompFilter::FromInstructions(const sock_filter* begin, size_t count,
                                              std::string description) {
  SeccompFilter filter;
  filter.data_->instructions.assign(begin, begin + count);
  filter.data_->program.len = static_cast<unsigned short>(count);
  filter.data_->program.filter = filter.data_->instructions.data();
  filter.data_->description = std::move(description);
  return filter;
}

Result<SeccompFilter> LoadSeccompFilter(const std::string& path,
                                        const SeccompCompileOptions& options) {
  MCPEXEC_ASSIGN_OR_RETURN(SeccompProfile profile, LoadSeccompProfile(path));
  auto filter = CompileSeccompFilter(profile, options);
  if (!filter.ok()) return std::move(filter).error().WithContext("seccomp profile " + path);
  return filter;
}

}  // namespace mcpexec::sandbox
