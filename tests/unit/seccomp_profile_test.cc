#include "sandbox/seccomp_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../support/temp_dir.h"

namespace mcpexec::sandbox {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The minimal valid profile, for cases that break one field of it.
json Minimal() {
  return json::parse(R"({
    "defaultAction": "SCMP_ACT_ERRNO",
    "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"}]
  })");
}

std::string ErrorOf(const json& document) {
  auto profile = ParseSeccompProfile(document);
  if (profile.ok()) return "(parsed)";
  EXPECT_EQ(profile.error().code, ErrorCode::kInvalidArgument);
  return profile.error().message;
}

TEST(ParseSeccompProfile, ReadsEveryFieldOfDockersFormat) {
  auto profile = ParseSeccompProfile(json::parse(R"({
    "defaultAction": "SCMP_ACT_ERRNO",
    "defaultErrnoRet": 38,
    "archMap": [{"architecture": "SCMP_ARCH_X86_64",
                 "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]}],
    "syscalls": [
      {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW", "comment": "io"},
      {"name": "clone", "action": "SCMP_ACT_ALLOW",
       "args": [{"index": 0, "value": 2114060288, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
       "excludes": {"caps": ["CAP_SYS_ADMIN"], "arches": ["s390", "s390x"]}},
      {"names": ["ptrace"], "action": "SCMP_ACT_KILL",
       "includes": {"minKernel": "4.8", "caps": ["CAP_SYS_PTRACE"], "arches": ["amd64"]}},
      {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
      {"names": ["kexec_load"], "action": "SCMP_ACT_KILL_PROCESS"},
      {"names": ["uselib"], "action": "SCMP_ACT_TRAP"},
      {"names": ["acct"], "action": "SCMP_ACT_LOG"},
      {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
       "args": [{"index": 5, "value": 18446744073709551615, "op": "SCMP_CMP_NE"}]}
    ]
  })"));
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  EXPECT_EQ(profile->default_action, SeccompAction::kErrno);
  EXPECT_EQ(profile->default_errno_ret, 38u);
  ASSERT_EQ(profile->arch_map.size(), 1u);
  EXPECT_EQ(profile->arch_map[0].architecture, "SCMP_ARCH_X86_64");
  EXPECT_THAT(profile->arch_map[0].sub_architectures,
              ElementsAre("SCMP_ARCH_X86", "SCMP_ARCH_X32"));
  ASSERT_EQ(profile->syscalls.size(), 8u);

  const SeccompSyscall& io = profile->syscalls[0];
  EXPECT_THAT(io.names, ElementsAre("read", "write"));
  EXPECT_EQ(io.comment, "io");
  EXPECT_EQ(io.where, "syscalls[0]");

  const SeccompSyscall& clone = profile->syscalls[1];
  EXPECT_THAT(clone.names, ElementsAre("clone"));
  ASSERT_EQ(clone.args.size(), 1u);
  EXPECT_EQ(clone.args[0].op, SeccompOp::kMaskedEq);
  EXPECT_EQ(clone.args[0].value, 2114060288u);
  EXPECT_THAT(clone.excludes.caps, ElementsAre("CAP_SYS_ADMIN"));
  EXPECT_THAT(clone.excludes.arches, ElementsAre("s390", "s390x"));

  const SeccompSyscall& ptrace = profile->syscalls[2];
  EXPECT_EQ(ptrace.action, SeccompAction::kKillThread);
  ASSERT_TRUE(ptrace.includes.min_kernel.has_value());
  EXPECT_EQ(*ptrace.includes.min_kernel, (KernelVersion{4, 8}));
  EXPECT_THAT(ptrace.includes.arches, ElementsAre("amd64"));

  EXPECT_EQ(profile->syscalls[3].errno_ret, 38u);
  EXPECT_EQ(profile->syscalls[4].action, SeccompAction::kKillProcess);
  EXPECT_EQ(profile->syscalls[5].action, SeccompAction::kTrap);
  EXPECT_EQ(profile->syscalls[6].action, SeccompAction::kLog);
  EXPECT_EQ(profile->syscalls[7].args[0].index, 5u);
  EXPECT_EQ(profile->syscalls[7].args[0].value, UINT64_MAX);
}

// Profiles written by Go's encoding/json carry null for empty slices and empty objects for
// empty filters; Docker's own default profile has "subArchitectures": null.
TEST(ParseSeccompProfile, NullAndEmptyMeanAbsent) {
  auto profile = ParseSeccompProfile(json::parse(R"({
    "defaultAction": "SCMP_ACT_ALLOW", "defaultErrnoRet": null, "architectures": null,
    "archMap": [{"architecture": "SCMP_ARCH_RISCV64", "subArchitectures": null}],
    "syscalls": [{"names": ["bpf"], "action": "SCMP_ACT_ERRNO", "args": null, "comment": "",
                  "includes": {}, "excludes": {"caps": null, "minKernel": null},
                  "errnoRet": null}]
  })"));
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  const SeccompSyscall& bpf = profile->syscalls[0];
  EXPECT_TRUE(bpf.args.empty());
  EXPECT_FALSE(bpf.errno_ret.has_value());
  EXPECT_TRUE(bpf.excludes.caps.empty());
  EXPECT_FALSE(bpf.excludes.min_kernel.has_value());
  EXPECT_TRUE(profile->arch_map[0].sub_architectures.empty());
}

TEST(ParseSeccompProfile, NoSyscallsIsAValidProfile) {
  auto profile = ParseSeccompProfile(json::parse(R"({"defaultAction": "SCMP_ACT_LOG"})"));
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  EXPECT_TRUE(profile->syscalls.empty());
}

TEST(ParseSeccompProfile, IgnoresFieldsTheFormatDoesNotDefine) {
  json doc = Minimal();
  doc["comment"] = "a profile";
  doc["x-vendor"] = {{"anything", 1}};
  doc["syscalls"][0]["note"] = 42;
  doc["syscalls"][0]["args"] =
      json::array({{{"index", 0}, {"value", 1}, {"op", "SCMP_CMP_EQ"}, {"extra", true}}});
  auto profile = ParseSeccompProfile(doc);
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  EXPECT_EQ(profile->syscalls[0].args.size(), 1u);
}

// Newer Docker profiles name architectures libseccomp 2.5.4 does not know; the filter only
// uses the host's own, so they are kept as names.
TEST(ParseSeccompProfile, ArchitectureNamesLibseccompLacksAreKept) {
  json doc = Minimal();
  doc["archMap"] = json::parse(R"([{"architecture": "SCMP_ARCH_LOONGARCH64"}])");
  auto profile = ParseSeccompProfile(doc);
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  EXPECT_EQ(profile->arch_map[0].architecture, "SCMP_ARCH_LOONGARCH64");
}

TEST(ParseSeccompProfile, TheReportedPlaceIsTheOffendingEntry) {
  json doc = Minimal();
  for (int i = 0; i < 12; ++i) doc["syscalls"].push_back(doc["syscalls"][0]);
  ASSERT_EQ(doc["syscalls"].size(), 13u);
  doc["syscalls"][12]["args"] = json::parse(R"([{"index": 0, "op": "SCMP_CMP_FOO"}])");
  EXPECT_EQ(ErrorOf(doc), "syscalls[12].args[0].op: unknown operator \"SCMP_CMP_FOO\"");
}

struct MalformedCase {
  const char* name;
  const char* json_patch;  // RFC 6902 patch applied to Minimal()
  const char* error;       // the whole message
};

class MalformedProfile : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedProfile, NamesThePlaceAndTheProblem) {
  const json doc = Minimal().patch(json::parse(GetParam().json_patch));
  EXPECT_EQ(ErrorOf(doc), GetParam().error);
}

const MalformedCase kMalformed[] = {
    {"DefaultActionMissing", R"([{"op": "remove", "path": "/defaultAction"}])",
     "defaultAction: missing"},
    {"DefaultActionUnknown",
     R"([{"op": "replace", "path": "/defaultAction", "value": "SCMP_ACT_FOO"}])",
     "defaultAction: unknown action \"SCMP_ACT_FOO\""},
    {"DefaultActionNotAString", R"([{"op": "replace", "path": "/defaultAction", "value": 1}])",
     "defaultAction: expected a string, got number"},
    {"DefaultNotify",
     R"([{"op": "replace", "path": "/defaultAction", "value": "SCMP_ACT_NOTIFY"}])",
     "defaultAction: SCMP_ACT_NOTIFY is not supported: the sandbox runs no seccomp agent"},
    {"DefaultErrnoWithAllow",
     R"([{"op": "replace", "path": "/defaultAction", "value": "SCMP_ACT_ALLOW"},
         {"op": "add", "path": "/defaultErrnoRet", "value": 1}])",
     "defaultErrnoRet: only SCMP_ACT_ERRNO takes an errno to return"},
    {"SyscallsNotAnArray", R"([{"op": "replace", "path": "/syscalls", "value": {}}])",
     "syscalls: expected an array of objects, got object"},
    {"EntryNotAnObject", R"([{"op": "add", "path": "/syscalls/-", "value": "read"}])",
     "syscalls[1]: expected an object, got string"},
    {"NamesNotAnArray", R"([{"op": "replace", "path": "/syscalls/0/names", "value": "read"}])",
     "syscalls[0].names: expected an array of strings, got string"},
    {"NameNotAString", R"([{"op": "add", "path": "/syscalls/0/names/-", "value": 7}])",
     "syscalls[0].names[1]: expected a string, got number"},
    {"EmptyName", R"([{"op": "add", "path": "/syscalls/0/names/-", "value": ""}])",
     "syscalls[0].names[1]: empty syscall name"},
    {"NameAndNames", R"([{"op": "add", "path": "/syscalls/0/name", "value": "write"}])",
     "syscalls[0]: has both \"name\" and \"names\"; use one"},
    {"NoNames", R"([{"op": "replace", "path": "/syscalls/0/names", "value": []}])",
     "syscalls[0]: names no syscall (\"names\" or \"name\")"},
    {"ActionMissing", R"([{"op": "remove", "path": "/syscalls/0/action"}])",
     "syscalls[0].action: missing"},
    {"ActionUnknown",
     R"([{"op": "replace", "path": "/syscalls/0/action", "value": "SCMP_ACT_ALLOWED"}])",
     "syscalls[0].action: unknown action \"SCMP_ACT_ALLOWED\""},
    {"ActionTrace",
     R"([{"op": "replace", "path": "/syscalls/0/action", "value": "SCMP_ACT_TRACE"}])",
     "syscalls[0].action: SCMP_ACT_TRACE is not supported: the sandbox runs no tracer"},
    {"ActionNotify",
     R"([{"op": "replace", "path": "/syscalls/0/action", "value": "SCMP_ACT_NOTIFY"}])",
     "syscalls[0].action: SCMP_ACT_NOTIFY is not supported: the sandbox runs no seccomp agent"},
    {"ErrnoRetWithAllow", R"([{"op": "add", "path": "/syscalls/0/errnoRet", "value": 1}])",
     "syscalls[0].errnoRet: only SCMP_ACT_ERRNO takes an errno to return"},
    {"ErrnoRetNegative",
     R"([{"op": "replace", "path": "/syscalls/0/action", "value": "SCMP_ACT_ERRNO"},
         {"op": "add", "path": "/syscalls/0/errnoRet", "value": -1}])",
     "syscalls[0].errnoRet: must not be negative"},
    {"ErrnoRetTooLarge",
     R"([{"op": "replace", "path": "/syscalls/0/action", "value": "SCMP_ACT_ERRNO"},
         {"op": "add", "path": "/syscalls/0/errnoRet", "value": 4096}])",
     "syscalls[0].errnoRet: 4096 is above the maximum 4095"},
    {"ErrnoRetAString",
     R"([{"op": "replace", "path": "/syscalls/0/action", "value": "SCMP_ACT_ERRNO"},
         {"op": "add", "path": "/syscalls/0/errnoRet", "value": "EPERM"}])",
     "syscalls[0].errnoRet: expected a whole number, got string"},
    {"ArgsNotAnArray", R"([{"op": "add", "path": "/syscalls/0/args", "value": {"index": 0}}])",
     "syscalls[0].args: expected an array of objects, got object"},
    {"ArgNotAnObject", R"([{"op": "add", "path": "/syscalls/0/args", "value": [0]}])",
     "syscalls[0].args[0]: expected an object, got number"},
    {"ArgIndexMissing",
     R"([{"op": "add", "path": "/syscalls/0/args", "value": [{"op": "SCMP_CMP_EQ"}]}])",
     "syscalls[0].args[0].index: missing"},
    {"ArgIndexTooLarge",
     R"([{"op": "add", "path": "/syscalls/0/args", "value": [{"index": 6, "op": "SCMP_CMP_EQ"}]}])",
     "syscalls[0].args[0].index: 6 is above the maximum 5"},
    {"ArgOpMissing", R"([{"op": "add", "path": "/syscalls/0/args", "value": [{"index": 0}]}])",
     "syscalls[0].args[0].op: missing"},
    {"ArgValueFractional",
     R"([{"op": "add", "path": "/syscalls/0/args",
          "value": [{"index": 0, "value": 1.5, "op": "SCMP_CMP_EQ"}]}])",
     "syscalls[0].args[0].value: expected a whole number, got number"},
    {"ArgValueTwoNegative",
     R"([{"op": "add", "path": "/syscalls/0/args",
          "value": [{"index": 0, "valueTwo": -3, "op": "SCMP_CMP_MASKED_EQ"}]}])",
     "syscalls[0].args[0].valueTwo: must not be negative"},
    {"IncludesNotAnObject", R"([{"op": "add", "path": "/syscalls/0/includes", "value": []}])",
     "syscalls[0].includes: expected an object, got array"},
    {"ExcludesCapsNotStrings",
     R"([{"op": "add", "path": "/syscalls/0/excludes", "value": {"caps": [1]}}])",
     "syscalls[0].excludes.caps[0]: expected a string, got number"},
    {"MinKernelMalformed",
     R"([{"op": "add", "path": "/syscalls/0/includes", "value": {"minKernel": "4"}}])",
     "syscalls[0].includes.minKernel: expected \"<major>.<minor>\" such as \"4.8\", got \"4\""},
    {"ArchitecturesAndArchMap",
     R"([{"op": "add", "path": "/architectures", "value": ["SCMP_ARCH_X86_64"]},
         {"op": "add", "path": "/archMap", "value": [{"architecture": "SCMP_ARCH_X86_64"}]}])",
     "architectures: use either \"architectures\" or \"archMap\", not both"},
    {"ArchitectureUnknown", R"([{"op": "add", "path": "/architectures", "value": ["x86_64"]}])",
     "architectures[0]: unknown architecture \"x86_64\""},
    {"ArchMapArchitectureMissing",
     R"([{"op": "add", "path": "/archMap", "value": [{"subArchitectures": []}]}])",
     "archMap[0].architecture: missing"},
    {"SubArchitectureUnknown",
     R"([{"op": "add", "path": "/archMap",
          "value": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["i386"]}]}])",
     "archMap[0].subArchitectures[0]: unknown architecture \"i386\""},
    {"FilterFlags", R"([{"op": "add", "path": "/flags", "value": ["SECCOMP_FILTER_FLAG_LOG"]}])",
     "flags: filter flags are not supported: the sandbox loads the filter itself, without flags "
     "(got \"SECCOMP_FILTER_FLAG_LOG\")"},
    {"ListenerPath", R"([{"op": "add", "path": "/listenerPath", "value": "/run/agent.sock"}])",
     "listenerPath: seccomp agents (SCMP_ACT_NOTIFY) are not supported"},
};

INSTANTIATE_TEST_SUITE_P(All, MalformedProfile, ::testing::ValuesIn(kMalformed),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ParseSeccompProfile, TheDocumentMustBeAnObject) {
  EXPECT_EQ(ErrorOf(json::array()), "profile: expected an object, got array");
}

TEST(LoadSeccompProfile, MissingFileNamesThePath) {
  auto profile = LoadSeccompProfile("/nonexistent/mcp-exec/profile.json");
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(profile.error().message, HasSubstr("/nonexistent/mcp-exec/profile.json"));
  EXPECT_THAT(profile.error().message, HasSubstr("ENOENT"));
}

TEST(LoadSeccompProfile, InvalidJsonNamesThePathAndTheLine) {
  testing::TempDir dir;
  const std::string path = dir.Path() + "/broken.json";
  std::ofstream(path) << "{\n  \"defaultAction\": \"SCMP_ACT_ERRNO\",\n  \"syscalls\": [\n}\n";
  auto profile = LoadSeccompProfile(path);
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(profile.error().message, StartsWith("seccomp profile " + path + ": not valid JSON"));
  EXPECT_THAT(profile.error().message, HasSubstr("line 4"));
}

TEST(LoadSeccompProfile, MalformedProfileNamesThePathAndTheEntry) {
  testing::TempDir dir;
  const std::string path = dir.Path() + "/bad.json";
  std::ofstream(path) << R"({"defaultAction": "SCMP_ACT_ERRNO",
                             "syscalls": [{"names": ["read"], "action": "SCMP_ACT_NOPE"}]})";
  auto profile = LoadSeccompProfile(path);
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.error().message,
            "seccomp profile " + path + ": syscalls[0].action: unknown action \"SCMP_ACT_NOPE\"");
}

}  // namespace
}  // namespace mcpexec::sandbox
