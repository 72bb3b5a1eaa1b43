// Input files in a session, written while the program of an earlier call still runs (issue 23):
// that program swaps each directory the supervisor makes for a link to a host file, the race
// that once let it chmod files outside its sandbox. Through `mcp-exec serve`, as root and as the
// unprivileged user, in every engine's twin.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "support/mcp_stdio.h"
#include "support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class SessionFilesTest : public SandboxTest {};

constexpr int kDirs = 64;  // MCP_EXEC_MAX_INPUT_FILES' default

// The swapper, a process of the session: as soon as the supervisor has made <prefix>a<i>, it
// exchanges it with <prefix>l<i>, a link to the host file (RENAME_EXCHANGE), in the order the
// supervisor makes them.
constexpr const char* kSwapper = R"(
import ctypes, sys
rename = ctypes.CDLL(None).renameat2
prefix = sys.argv[1].encode()
pairs = [(prefix + b'a%d' % i, prefix + b'l%d' % i) for i in range(64)]
open(prefix + b'ready', 'w').close()
for a, l in pairs:
    while rename(-100, a, -100, l, 2) != 0:
        pass
)";

// A call's code: makes the links for the next call's directories and starts a swapper on them
// in place of the last one, and waits until it swaps, so that it runs when the next call's files
// are written.
std::string ArmNextRound(const std::string& target, int round) {
  return "import os, subprocess, sys, time\n"
         "old = globals().get('swapper')\n"
         "if old is not None:\n"
         "    old.kill()\n"
         "    old.wait()\n"
         "prefix = 'r" + std::to_string(round) + "_'\n"
         "for i in range(" + std::to_string(kDirs) + "):\n"
         "    os.symlink(" + json(target).dump() + ", prefix + 'l%d' % i)\n"
         "swapper = subprocess.Popen([sys.executable, '-c', " + json(kSwapper).dump() +
         ", prefix])\n"
         "deadline = time.monotonic() + 10\n"
         "while not os.path.exists(prefix + 'ready') and time.monotonic() < deadline:\n"
         "    time.sleep(0.005)\n";
}

json FilesOfRound(int round) {
  json files = json::array();
  for (int i = 0; i < kDirs; ++i) {
    files.push_back({{"path", "r" + std::to_string(round) + "_a" + std::to_string(i) + "/f"},
                     {"content", "x"}});
  }
  return files;
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

TEST_P(SessionFilesTest, InputFilesAreNeverChmodThroughALinkTheProgramSwapsIn) {
  ModeOwnedDir host(GetParam());
  ASSERT_EQ(host.Problem(), "");
  // The sandbox's own host uid owns it, so the supervisor's fsuid could change its mode.
  const std::string target = host.Path() + "/private-key";
  std::ofstream(target) << "key";
  ASSERT_EQ(chown(target.c_str(), runner_.ExpectedHostUid(), static_cast<gid_t>(-1)), 0);
  ASSERT_EQ(chmod(target.c_str(), 0600), 0);

  McpStdioServer server(runner_, {"MCP_EXEC_PRELOAD="});
  ASSERT_EQ(server.Problem(), "");
  std::string session = "new";
  int raced = 0, disturbed = 0;
  // Whether a swap lands between the supervisor's mkdirat and its next step depends on the
  // swapper being on a CPU then: without the fix, the host file's mode changed within 10 rounds
  // here, on an idle host and beside three compilers.
  const auto until = std::chrono::steady_clock::now() + 30s;
  for (int round = 0; raced < 150 && std::chrono::steady_clock::now() < until; ++round) {
    json args = {{"code", ArmNextRound(target, round + 1)}, {"session", session}};
    if (session != "new") {
      args["files"] = FilesOfRound(round);
      ++raced;
    }
    const json structured = Structured(server.Call("exec", args));
    ASSERT_EQ(ModeOf(target), 0600u) << "chmod through a swapped-in link in round " << round;
    if (structured.is_discarded() || structured.contains("session_ended") ||
        structured.value("exit_code", 0) != 0) {
      // The swap made a write fail, as the program meant it to: the next round starts over in
      // a new session, this one closed (whether the failure ended it or not).
      ++disturbed;
      if (session != "new") (void)server.Call("session_close", {{"session", session}});
      session = "new";
      continue;
    }
    session = structured.value("session", "new");
  }
  EXPECT_GE(raced, 5);
  // Swaps that land make writes fail: without any, the program never raced the supervisor.
  EXPECT_GT(disturbed, 0) << "no round was disturbed in " << raced << ": the race was not run";
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(SessionFilesTest);

}  // namespace
}  // namespace mcpexec::testing
