#include "sandbox/seccomp_profile.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/sys.h"

namespace mcpexec::sandbox {
namespace {

using nlohmann::json;

// Largest errno a syscall can return (MAX_ERRNO in the kernel): above it, the return value
// reads as a valid result.
constexpr uint64_t kMaxErrno = 4095;
constexpr unsigned kMaxArgIndex = 5;

constexpr std::pair<const char*, SeccompAction> kActions[] = {
    {"SCMP_ACT_ALLOW", SeccompAction::kAllow},
    {"SCMP_ACT_ERRNO", SeccompAction::kErrno},
    {"SCMP_ACT_KILL", SeccompAction::kKillThread},
    {"SCMP_ACT_KILL_THREAD", SeccompAction::kKillThread},
    {"SCMP_ACT_KILL_PROCESS", SeccompAction::kKillProcess},
    {"SCMP_ACT_TRAP", SeccompAction::kTrap},
    {"SCMP_ACT_LOG", SeccompAction::kLog},
};

constexpr std::pair<const char*, const char*> kUnsupportedActions[] = {
    {"SCMP_ACT_TRACE", "the sandbox runs no tracer"},
    {"SCMP_ACT_NOTIFY", "the sandbox runs no seccomp agent"},
};

constexpr std::pair<const char*, SeccompOp> kOps[] = {
    {"SCMP_CMP_NE", SeccompOp::kNe},
    {"SCMP_CMP_LT", SeccompOp::kLt},
    {"SCMP_CMP_LE", SeccompOp::kLe},
    {"SCMP_CMP_EQ", SeccompOp::kEq},
    {"SCMP_CMP_GE", SeccompOp::kGe},
    {"SCMP_CMP_GT", SeccompOp::kGt},
    {"SCMP_CMP_MASKED_EQ", SeccompOp::kMaskedEq},
};

Error Malformed(const std::string& where, const std::string& what) {
  return MakeError(ErrorCode::kInvalidArgument, where + ": " + what);
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// "syscalls[3]" + "args" -> "syscalls[3].args"; top-level members have no prefix.
std::string Join(const std::string& where, const char* key) {
  return where.empty() ? std::string(key) : where + "." + key;
}

Error WrongType(const std::string& where, const char* expected, const json& got) {
  return Malformed(where, std::string("expected ") + expected + ", got " + got.type_name());
}

// The member `key` of `object`, or nullptr when it is absent or null.
const json* Member(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

Result<std::string> String(const json& value, const std::string& where) {
  if (!value.is_string()) return WrongType(where, "a string", value);
  return value.get<std::string>();
}

Result<std::optional<std::string>> OptString(const json& object, const char* key,
                                             const std::string& where) {
  const json* value = Member(object, key);
  if (value == nullptr) return std::optional<std::string>();
  MCPEXEC_ASSIGN_OR_RETURN(std::string s, String(*value, Join(where, key)));
  return std::optional<std::string>(std::move(s));
}

Result<std::vector<std::string>> StringArray(const json& object, const char* key,
                                             const std::string& where) {
  std::vector<std::string> out;
  const json* value = Member(object, key);
  if (value == nullptr) return out;
  const std::string path = Join(where, key);
  if (!value->is_array()) return WrongType(path, "an array of strings", *value);
  for (size_t i = 0; i < value->size(); ++i) {
    MCPEXEC_ASSIGN_OR_RETURN(std::string s,
                             String((*value)[i], path + "[" + std::to_string(i) + "]"));
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::optional<uint64_t>> OptUint(const json& object, const char* key,
                                        const std::string& where, uint64_t max) {
  const json* value = Member(object, key);
  if (value == nullptr) return std::optional<uint64_t>();
  const std::string path = Join(where, key);
  // JSON text gives unsigned numbers; documents built in code may hold signed ones.
  if (value->is_number_integer() && (value->is_number_unsigned() || value->get<int64_t>() >= 0)) {
    const uint64_t n = value->get<uint64_t>();
    if (n > max) {
      return Malformed(path, std::to_string(n) + " is above the maximum " + std::to_string(max));
    }
    return std::optional<uint64_t>(n);
  }
  if (value->is_number_integer()) return Malformed(path, "must not be negative");
  return WrongType(path, "a whole number", *value);
}

Result<SeccompAction> ParseAction(const json& object, const char* key, const std::string& where) {
  const std::string path = Join(where, key);
  const json* value = Member(object, key);
  if (value == nullptr) return Malformed(path, "missing");
  MCPEXEC_ASSIGN_OR_RETURN(std::string name, String(*value, path));
  for (const auto& [spelling, action] : kActions) {
    if (name == spelling) return action;
  }
  for (const auto& [spelling, why] : kUnsupportedActions) {
    if (name == spelling) return Malformed(path, name + " is not supported: " + why);
  }
  return Malformed(path, "unknown action " + Quoted(name));
}

// errnoRet belongs to SCMP_ACT_ERRNO only; anywhere else it would be silently meaningless.
Result<std::optional<uint32_t>> ParseErrnoRet(const json& object, const char* key,
                                              const std::string& where, SeccompAction action) {
  MCPEXEC_ASSIGN_OR_RETURN(std::optional<uint64_t> value, OptUint(object, key, where, kMaxErrno));
  if (!value) return std::optional<uint32_t>();
  if (action != SeccompAction::kErrno) {
    return Malformed(Join(where, key), "only SCMP_ACT_ERRNO takes an errno to return");
  }
  return std::optional<uint32_t>(static_cast<uint32_t>(*value));
}

Result<std::string> ParseArchName(const json& value, const std::string& where) {
  MCPEXEC_ASSIGN_OR_RETURN(std::string name, String(value, where));
  // Names libseccomp 2.5.4 lacks (SCMP_ARCH_LOONGARCH64 in newer Docker profiles) are kept:
  // the filter only ever uses the host's own architecture.
  constexpr std::string_view kPrefix = "SCMP_ARCH_";
  bool well_formed = name.size() > kPrefix.size() && name.starts_with(kPrefix);
  for (char c : name) {
    well_formed = well_formed && ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
  }
  if (!well_formed) return Malformed(where, "unknown architecture " + Quoted(name));
  return name;
}

Result<std::vector<std::string>> ArchArray(const json& object, const char* key,
                                           const std::string& where) {
  std::vector<std::string> out;
  const json* value = Member(object, key);
  if (value == nullptr) return out;
  const std::string path = Join(where, key);
  if (!value->is_array()) return WrongType(path, "an array of architecture names", *value);
  for (size_t i = 0; i < value->size(); ++i) {
    MCPEXEC_ASSIGN_OR_RETURN(std::string name,
                             ParseArchName((*value)[i], path + "[" + std::to_string(i) + "]"));
    out.push_back(std::move(name));
  }
  return out;
}

Result<std::vector<SeccompArchMapEntry>> ParseArchMap(const json& document) {
  std::vector<SeccompArchMapEntry> out;
  const json* value = Member(document, "archMap");
  if (value == nullptr) return out;
  if (!value->is_array()) return WrongType("archMap", "an array of objects", *value);
  for (size_t i = 0; i < value->size(); ++i) {
    const std::string where = "archMap[" + std::to_string(i) + "]";
    const json& entry = (*value)[i];
    if (!entry.is_object()) return WrongType(where, "an object", entry);
    const json* arch = Member(entry, "architecture");
    if (arch == nullptr) return Malformed(where + ".architecture", "missing");
    SeccompArchMapEntry parsed;
    MCPEXEC_ASSIGN_OR_RETURN(parsed.architecture, ParseArchName(*arch, where + ".architecture"));
    MCPEXEC_ASSIGN_OR_RETURN(parsed.sub_architectures, ArchArray(entry, "subArchitectures", where));
    out.push_back(std::move(parsed));
  }
  return out;
}

// Docker reads "<major>.<minor>" and ignores the rest ("5.10.3", "4.8-rc1").
Result<std::optional<KernelVersion>> ParseMinKernel(const json& object, const std::string& where) {
  MCPEXEC_ASSIGN_OR_RETURN(std::optional<std::string> text, OptString(object, "minKernel", where));
  if (!text) return std::optional<KernelVersion>();
  KernelVersion version;
  const char* p = text->data();
  const char* end = p + text->size();
  auto [after_major, e1] = std::from_chars(p, end, version.major);
  bool ok = e1 == std::errc() && after_major < end && *after_major == '.';
  if (ok) {
    auto [after_minor, e2] = std::from_chars(after_major + 1, end, version.minor);
    ok = e2 == std::errc();
  }
  if (!ok || version.major < 0 || version.minor < 0) {
    return Malformed(where + ".minKernel",
                     "expected \"<major>.<minor>\" such as \"4.8\", got " + Quoted(*text));
  }
  return std::optional<KernelVersion>(version);
}

Result<SeccompCondition> ParseCondition(const json& entry, const char* key,
                                        const std::string& where) {
  SeccompCondition out;
  const json* value = Member(entry, key);
  if (value == nullptr) return out;
  const std::string path = Join(where, key);
  if (!value->is_object()) return WrongType(path, "an object", *value);
  MCPEXEC_ASSIGN_OR_RETURN(out.caps, StringArray(*value, "caps", path));
  MCPEXEC_ASSIGN_OR_RETURN(out.arches, StringArray(*value, "arches", path));
  MCPEXEC_ASSIGN_OR_RETURN(out.min_kernel, ParseMinKernel(*value, path));
  return out;
}

Result<SeccompArg> ParseArg(const json& value, const std::string& where) {
  if (!value.is_object()) return WrongType(where, "an object", value);
  SeccompArg arg;
  MCPEXEC_ASSIGN_OR_RETURN(std::optional<uint64_t> index,
                           OptUint(value, "index", where, kMaxArgIndex));
  if (!index) return Malformed(where + ".index", "missing");
  arg.index = static_cast<unsigned>(*index);
  MCPEXEC_ASSIGN_OR_RETURN(std::optional<uint64_t> v, OptUint(value, "value", where, UINT64_MAX));
  MCPEXEC_ASSIGN_OR_RETURN(std::optional<uint64_t> v2,
                           OptUint(value, "valueTwo", where, UINT64_MAX));
  arg.value = v.value_or(0);
  arg.value_two = v2.value_or(0);
  MCPEXEC_ASSIGN_OR_RETURN(std::optional<std::string> op, OptString(value, "op", where));
  if (!op) return Malformed(where + ".op", "missing");
  for (const auto& [spelling, parsed] : kOps) {
    if (*op == spelling) {
      arg.op = parsed;
      return arg;
    }
  }
  return Malformed(where + ".op", "unknown operator " + Quoted(*op));
}

Result<SeccompSyscall> ParseSyscall(const json& entry, const std::string& where) {
  if (!entry.is_object()) return WrongType(where, "an object", entry);
  SeccompSyscall out;
  out.where = where;
  MCPEXEC_ASSIGN_OR_RETURN(std::optional<std::string> name, OptString(entry, "name", where));
  MCPEXEC_ASSIGN_OR_RETURN(out.names, StringArray(entry, "names", where));
  if (name && !out.names.empty()) {
    return Malformed(where, "has both \"name\" and \"names\"; use one");
  }
  if (name) out.names.push_back(std::move(*name));
  if (out.names.empty()) return Malformed(where, "names no syscall (\"names\" or \"name\")");
  for (size_t i = 0; i < out.names.size(); ++i) {
    if (out.names[i].empty()) {
      return Malformed(where + ".names[" + std::to_string(i) + "]", "empty syscall name");
    }
  }
  MCPEXEC_ASSIGN_OR_RETURN(out.action, ParseAction(entry, "action", where));
  MCPEXEC_ASSIGN_OR_RETURN(out.errno_ret, ParseErrnoRet(entry, "errnoRet", where, out.action));
  if (const json* args = Member(entry, "args")) {
    if (!args->is_array()) return WrongType(where + ".args", "an array of objects", *args);
    for (size_t i = 0; i < args->size(); ++i) {
      MCPEXEC_ASSIGN_OR_RETURN(SeccompArg arg,
                               ParseArg((*args)[i], where + ".args[" + std::to_string(i) + "]"));
      out.args.push_back(arg);
    }
  }
  MCPEXEC_ASSIGN_OR_RETURN(std::optional<std::string> comment, OptString(entry, "comment", where));
  out.comment = comment.value_or("");
  MCPEXEC_ASSIGN_OR_RETURN(out.includes, ParseCondition(entry, "includes", where));
  MCPEXEC_ASSIGN_OR_RETURN(out.excludes, ParseCondition(entry, "excludes", where));
  return out;
}

// Fields of Docker's format whose meaning the sandbox cannot provide: accepting them silently
// would run a different filter from the one the profile describes.
Result<void> RejectUnsupported(const json& document) {
  MCPEXEC_ASSIGN_OR_RETURN(std::optional<std::string> listener,
                           OptString(document, "listenerPath", ""));
  if (listener && !listener->empty()) {
    return Malformed("listenerPath", "seccomp agents (SCMP_ACT_NOTIFY) are not supported");
  }
  MCPEXEC_ASSIGN_OR_RETURN(std::vector<std::string> flags, StringArray(document, "flags", ""));
  if (!flags.empty()) {
    return Malformed("flags",
                     "filter flags are not supported: the sandbox loads the filter "
                     "itself, without flags (got " +
                         Quoted(flags.front()) + ")");
  }
  return Ok();
}

Result<SeccompProfile> Parse(const json& document) {
  if (!document.is_object()) return WrongType("profile", "an object", document);
  MCPEXEC_RETURN_IF_ERROR(RejectUnsupported(document));
  SeccompProfile out;
  MCPEXEC_ASSIGN_OR_RETURN(out.default_action, ParseAction(document, "defaultAction", ""));
  MCPEXEC_ASSIGN_OR_RETURN(out.default_errno_ret,
                           ParseErrnoRet(document, "defaultErrnoRet", "", out.default_action));
  MCPEXEC_ASSIGN_OR_RETURN(out.architectures, ArchArray(document, "architectures", ""));
  MCPEXEC_ASSIGN_OR_RETURN(out.arch_map, ParseArchMap(document));
  if (!out.architectures.empty() && !out.arch_map.empty()) {
    return Malformed("architectures", "use either \"architectures\" or \"archMap\", not both");
  }
  if (const json* syscalls = Member(document, "syscalls")) {
    if (!syscalls->is_array()) return WrongType("syscalls", "an array of objects", *syscalls);
    for (size_t i = 0; i < syscalls->size(); ++i) {
      MCPEXEC_ASSIGN_OR_RETURN(SeccompSyscall entry,
                               ParseSyscall((*syscalls)[i], "syscalls[" + std::to_string(i) + "]"));
      out.syscalls.push_back(std::move(entry));
    }
  }
  return out;
}

}  // namespace

Result<SeccompProfile> ParseSeccompProfile(const nlohmann::json& document) {
  // Every access above checks the type first; this only keeps a missed case from throwing
  // through the header.
  try {
    return Parse(document);
  } catch (const json::exception& e) {
    return MakeError(ErrorCode::kInvalidArgument, std::string("malformed profile: ") + e.what());
  }
}

Result<SeccompProfile> LoadSeccompProfile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) {
    return std::move(text).error().WithContext("read the seccomp profile");
  }
  json document;
  try {
    document = json::parse(*text);
  } catch (const json::exception& e) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "seccomp profile " + path + ": not valid JSON: " + e.what());
  }
  auto profile = ParseSeccompProfile(document);
  if (!profile.ok()) return std::move(profile).error().WithContext("seccomp profile " + path);
  return profile;
}

const char* SeccompActionName(SeccompAction action) {
  switch (action) {
    case SeccompAction::kAllow:
      return "SCMP_ACT_ALLOW";
    case SeccompAction::kErrno:
      return "SCMP_ACT_ERRNO";
    case SeccompAction::kKillThread:
      return "SCMP_ACT_KILL_THREAD";
    case SeccompAction::kKillProcess:
      return "SCMP_ACT_KILL_PROCESS";
    case SeccompAction::kTrap:
      return "SCMP_ACT_TRAP";
    case SeccompAction::kLog:
      return "SCMP_ACT_LOG";
  }
  return "?";
}

const char* SeccompOpName(SeccompOp op) {
  for (const auto& [spelling, value] : kOps) {
    if (value == op) return spelling;
  }
  return "?";
}

}  // namespace mcpexec::sandbox
