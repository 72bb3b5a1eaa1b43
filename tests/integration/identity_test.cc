// Who and where the program is: uid/gid 65532 with no capabilities, an unprivileged host uid,
// PID 2 under mcp-exec's init, its own processes only, the five environment variables, fds
// 0-2 only, a new session without a terminal, and the hostname `sandbox`.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "../support/host_processes.h"
#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

class IdentityTest : public SandboxTest {
 protected:
  // Runs `code`, which prints one JSON document; returns it.
  json RunJson(const std::string& code, const LaunchOptions& options = {}) {
    const Outcome r = runner_.RunCode(code, {}, options);
    EXPECT_TRUE(IsRunResult(r));
    EXPECT_EQ(r.exit_status, 0) << r.Describe();
    const json j = r.ProgramJson();
    EXPECT_TRUE(j.is_object()) << r.Describe();
    return j.is_object() ? j : json::object();
  }
};

TEST_P(IdentityTest, RunsAsUid65532WithNoCapabilitiesAndNoNewPrivs) {
  const json j = RunJson(R"py(
import json, os
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
print(json.dumps({k: status[k].split() for k in
    ["Uid", "Gid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs"]}))
)py");
  EXPECT_EQ(j["Uid"], json({"65532", "65532", "65532", "65532"}));
  EXPECT_EQ(j["Gid"], json({"65532", "65532", "65532", "65532"}));
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
    EXPECT_EQ(j[set], json({"0000000000000000"})) << set;
  }
  EXPECT_EQ(j["NoNewPrivs"], json({"1"}));
}

TEST_P(IdentityTest, HostSeesTheSandboxUserAsAnUnprivilegedUid) {
  const std::string marker = NewMarker("uid");
  BackgroundRun run = runner_.StartCode(ReplaceAll(R"py(
import subprocess, time
child = subprocess.Popen(["/usr/bin/python3", "-c", "import time; time.sleep(600)", "@MARKER@"])
time.sleep(1)
child.kill()
)py",
                                                   "@MARKER@", marker));
  const std::vector<HostProcess> seen = WaitForProcesses(marker, 1, milliseconds(3000));
  ASSERT_EQ(seen.size(), 1u) << "the marked process never appeared on the host";
  EXPECT_EQ(seen[0].uid, runner_.ExpectedHostUid());
  EXPECT_NE(seen[0].uid, 0u);
  if (GetParam() == RunMode::kUnprivileged) {
    EXPECT_EQ(seen[0].uid, HostSetup::Get().Uid(RunMode::kUnprivileged));
  } else if (geteuid() == 0) {
    EXPECT_EQ(seen[0].uid, 65532u);
  }
  const Outcome r = run.Wait();
  EXPECT_EQ(r.exit_status, 0) << r.Describe();
}

TEST_P(IdentityTest, ProgramIsPid2UnderMcpExecsInit) {
  const json j = RunJson(R"py(
import json, os
print(json.dumps({
    "pid": os.getpid(), "ppid": os.getppid(),
    "init": open("/proc/1/comm").read().strip(),
    "cmdline": open("/proc/self/cmdline").read().split("\0")[:-1],
    "cwd": os.getcwd(),
}))
)py");
  EXPECT_EQ(j["pid"], 2);
  EXPECT_EQ(j["ppid"], 1);
  EXPECT_EQ(j["init"], "mcp-exec");
  EXPECT_EQ(j["cmdline"], json({"/usr/bin/python3", "/tmp/main.py"}));
  EXPECT_EQ(j["cwd"], "/tmp");
}

TEST_P(IdentityTest, OnlyTheSandboxsOwnProcessesAreVisible) {
  const json j = RunJson(R"py(
import json, os, subprocess
def pids():
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
alone = pids()
child = subprocess.Popen(["/usr/bin/python3", "-c", "import time; time.sleep(60)"])
with_child = pids()
child.kill()
child.wait()
print(json.dumps({"alone": alone, "with_child": with_child, "child": child.pid}))
)py");
  EXPECT_EQ(j["alone"], json({1, 2}));
  EXPECT_EQ(j["with_child"], json({1, 2, j["child"].get<int>()}));
}

// The recipe's rootfs has the figure backend (a rootfs without it gets MPLBACKEND=Agg and no
// MCP_EXEC_FIGURE_MAX_PX: tests/unit/plan_test.cc).
TEST_P(IdentityTest, EnvironmentIsExactlyTheSixVariables) {
  // mcp-exec itself gets variables that must not leak into the sandbox.
  const json j = RunJson("import json, os\nprint(json.dumps(dict(os.environ)))",
                         WithEnv({"HOST_SECRET=do-not-leak", "HOME=/root",
                                  "LANG=en_US.ISO-8859-1", "PYTHONPATH=/host"}));
  EXPECT_EQ(j, json({{"PATH", "/usr/local/bin:/usr/bin:/bin"},
                     {"HOME", "/tmp"},
                     {"LANG", "C.UTF-8"},
                     {"MPLBACKEND", "module://mcp_exec_figures"},
                     {"MCP_EXEC_FIGURE_MAX_PX", "1568"},
                     {"PYTHONDONTWRITEBYTECODE", "1"}}));
}

// mcp-exec is started with an extra inherited fd and a controlling terminal, so that the
// sandbox has both to shed.
TEST_P(IdentityTest, OnlyStandardFdsNewSessionAndNoControllingTerminal) {
  LaunchOptions options;
  options.controlling_tty = true;
  options.leak_fd = true;
  // Positive control: a process started this way does hold fd 9 and a terminal (tty_nr != 0).
  const Outcome control = runner_.RunCommand(
      {"/bin/sh", "-c", "ls /proc/self/fd; cut -d' ' -f7 /proc/self/stat"}, options);
  ASSERT_EQ(control.exit_status, 0) << control.Describe();
  EXPECT_THAT(control.out, ::testing::HasSubstr("\n9\n")) << control.out;
  EXPECT_THAT(control.out, ::testing::Not(::testing::EndsWith("\n0\n"))) << control.out;

  const json j = RunJson(R"py(
import errno, json, os
fds = []
for entry in os.listdir("/proc/self/fd"):
    try:
        os.readlink("/proc/self/fd/" + entry)
    except FileNotFoundError:
        continue  # the directory fd listdir used, closed by now
    fds.append(int(entry))
try:
    open("/dev/tty")
    tty = "opened"
except OSError as e:
    tty = errno.errorcode[e.errno]
stat = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
print(json.dumps({
    "fds": sorted(fds), "pid": os.getpid(), "sid": os.getsid(0), "pgrp": os.getpgrp(),
    "tty_nr": int(stat[4]), "dev_tty": tty, "isatty": [os.isatty(fd) for fd in (0, 1, 2)],
}))
)py",
                         options);
  EXPECT_EQ(j["fds"], json({0, 1, 2}));
  EXPECT_EQ(j["sid"], j["pid"]);
  EXPECT_EQ(j["pgrp"], j["pid"]);
  EXPECT_EQ(j["tty_nr"], 0) << "the program has a controlling terminal";
  EXPECT_NE(j["dev_tty"], "opened");
  EXPECT_EQ(j["isatty"], json({false, false, false}));
}

TEST_P(IdentityTest, HostnameIsSandbox) {
  char host[HOST_NAME_MAX + 1] = {};
  ASSERT_EQ(gethostname(host, sizeof host), 0);
  const json j = RunJson(R"py(
import json, os, socket
print(json.dumps({"gethostname": socket.gethostname(), "uname": os.uname().nodename,
                  "proc": open("/proc/sys/kernel/hostname").read().strip()}))
)py");
  EXPECT_EQ(j["gethostname"], "sandbox");
  EXPECT_EQ(j["uname"], "sandbox");
  EXPECT_EQ(j["proc"], "sandbox");
  EXPECT_STRNE(host, "sandbox") << "the host's own name hides a leak of the host's UTS namespace";
}

// setgroups is denied in every sandbox, so a sandbox keeps the groups it inherits: as root,
// mcp-exec drops its own supplementary groups first, whichever engine makes the sandbox. (An
// unprivileged launcher cannot drop them; its sandboxes show them as 65534, in every engine.)
TEST_P(IdentityTest, NoSupplementaryGroupsAndSetgroupsDeniedInEveryEngine) {
  const std::string code = R"py(
import json, os
print(json.dumps({"groups": os.getgroups(), "setgroups": open("/proc/self/setgroups").read()}))
)py";
  for (const char* engine : {"cold", "pool", "zygote"}) {
    std::vector<std::string> argv = {runner_.Binary(), "run", "--rootfs", runner_.Rootfs(),
                                     "--engine", engine, "--code", code};
    if (GetParam() == RunMode::kCaller) {
      // Root holding two supplementary groups, as under sudo (initgroups).
      argv.insert(argv.begin(), {"/usr/bin/setpriv", "--groups", "4,27", "--"});
    }
    const Outcome r = runner_.RunCommand(argv);
    ASSERT_EQ(r.exit_status, 0) << engine << r.Describe();
    const json j = r.ProgramJson();
    EXPECT_EQ(j["setgroups"], "deny\n") << engine;
    if (GetParam() == RunMode::kCaller) {
      EXPECT_EQ(j["groups"], json::array()) << engine;
    }
  }
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(IdentityTest);

}  // namespace
}  // namespace mcpexec::testing
