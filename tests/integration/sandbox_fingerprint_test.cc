// One sandbox, whichever engine made it: tests/engine/fingerprint.py reports everything a program
// can observe of its confinement (ids and maps, capabilities, seccomp's answers, namespaces,
// mounts, limits, descriptors, signals, /proc's masks, ...), and its report in every engine and in
// a session's first call must equal a cold run's, member by member, in both modes. A member may
// differ only where kExceptions says so, with the reason; a listed difference that no longer shows
// fails too, so that the list only shrinks.
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "../support/host_files.h"
#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;

struct Variant {
  const char* name;
  std::vector<std::string> args;  // `run` arguments that choose the engine and the call path
};

// Cold first: the others are compared with it.
const std::array<Variant, 6> kVariants = {{
    {"cold", {"--engine", "cold"}},
    {"pool", {"--engine", "pool"}},
    {"zygote", {"--engine", "zygote"}},
    {"session-cold", {"--engine", "cold", "--session"}},
    {"session-pool", {"--engine", "pool", "--session"}},
    {"session-zygote", {"--engine", "zygote", "--session"}},
}};

// A difference a program can see, by design or until it is fixed: in `variant` (and every
// variant whose name ends with it: "zygote" covers "session-zygote"), in `mode` ("" for both),
// the report's `member` differs from cold's.
struct Exception {
  const char* variant;
  const char* mode;
  const char* member;
  const char* reason;
};

const std::vector<Exception> kExceptions = {
    {"session-cold", "", "fds",
     "a session's control socket is fd 5 in the interpreter, close-on-exec, the program's calls "
     "are authenticated per call (docs/sessions.md, The control channel)"},
    {"session-pool", "", "fds", "as session-cold: the session's control socket"},
    {"session-zygote", "", "fds", "as session-cold: the session's control socket"},
};

const Exception* FindException(const std::string& variant, RunMode mode,
                               const std::string& member) {
  for (const Exception& e : kExceptions) {
    const std::string v = e.variant;
    const bool variant_matches =
        variant == v || (variant.size() > v.size() && variant.ends_with("-" + v));
    const bool mode_matches = std::string(e.mode).empty() || ModeName(mode) == e.mode;
    if (variant_matches && mode_matches && member == e.member) return &e;
  }
  return nullptr;
}

// {"user": inode, ...} of this process, which both modes' runs start from.
std::string HostNamespaces() {
  json inodes = json::object();
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/ns")) {
    struct stat st {};
    if (stat(entry.path().c_str(), &st) == 0) inodes[entry.path().filename().string()] = st.st_ino;
  }
  return inodes.dump();
}

std::string FingerprintProgram() {
  std::string code;
  if (!ReadWhole(std::string(MCPEXEC_ENGINE_TESTS_DIR) + "/fingerprint.py", &code)) return "";
  return ReplaceAll(code, "@HOST_NS@", HostNamespaces());
}

class SandboxFingerprintTest : public SandboxTest {};

TEST_P(SandboxFingerprintTest, EveryEngineGivesTheColdSandbox) {
  const std::string code = FingerprintProgram();
  ASSERT_NE(code, "") << "cannot read " << MCPEXEC_ENGINE_TESTS_DIR << "/fingerprint.py";
  std::vector<BackgroundRun> runs;
  for (const Variant& v : kVariants) {
    std::vector<std::string> args = {"--code", code, "--timeout", "60"};
    args.insert(args.end(), v.args.begin(), v.args.end());
    runs.push_back(runner_.Start(args));
  }
  std::vector<json> reports;
  for (size_t i = 0; i < kVariants.size(); ++i) {
    const Outcome outcome = runs[i].Wait();
    ASSERT_TRUE(IsRunResult(outcome)) << kVariants[i].name << outcome.Describe();
    ASSERT_EQ(outcome.json.value("exit_code", -1), 0) << kVariants[i].name << outcome.Describe();
    reports.push_back(outcome.ProgramJson());
    ASSERT_TRUE(reports.back().is_object()) << kVariants[i].name << outcome.Describe();
  }

  // The cold run itself: every namespace but time is its own.
  const json& cold = reports[0];
  for (const auto& [name, where] : cold["namespaces"].items()) {
    EXPECT_EQ(where, name.starts_with("time") ? "host" : "own") << "namespace " << name;
  }

  for (size_t i = 1; i < kVariants.size(); ++i) {
    const std::string variant = kVariants[i].name;
    const json& other = reports[i];
    std::vector<std::string> members;
    for (const auto& [key, value] : cold.items()) members.push_back(key);
    for (const auto& [key, value] : other.items()) {
      if (!cold.contains(key)) members.push_back(key);
    }
    for (const std::string& member : members) {
      const json a = cold.value(member, json()), b = other.value(member, json());
      const Exception* listed = FindException(variant, GetParam(), member);
      if (listed == nullptr) {
        EXPECT_EQ(a.dump(1), b.dump(1)) << "member \"" << member << "\" of the " << variant
                                        << " sandbox differs from the cold one's";
      } else {
        EXPECT_NE(a.dump(), b.dump())
            << "member \"" << member << "\" of the " << variant
            << " sandbox is now the cold one's: remove its exception (" << listed->reason << ")";
      }
    }
  }
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(SandboxFingerprintTest);

}  // namespace
}  // namespace mcpexec::testing
