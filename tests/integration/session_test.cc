// Sessions (docs/sessions.md) through `mcp-exec serve`, as root and as the unprivileged user:
// state that stays across calls, the value of a last expression, per-call stdin and outputs,
// the deadline's KeyboardInterrupt and the kill after it, memory, close and idle expiry, the
// limit on open sessions, concurrent calls, handles of another caller or an earlier server, and
// isolation between sessions and from one-shot runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "support/host_processes.h"
#include "support/loopback_http.h"
#include "support/mcp_stdio.h"
#include "support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using nlohmann::json;
using namespace std::chrono_literals;

class SessionTest : public SandboxTest {
 protected:
  // A server whose preloads are none: a session made on request starts in ~50 ms.
  McpStdioServer Serve(std::vector<std::string> env = {}) {
    env.push_back("MCP_EXEC_PRELOAD=");
    return McpStdioServer(runner_, std::move(env));
  }
};

// The result of exec in `session`, which must be a result (not a tool error).
json Exec(McpStdioServer& server, const std::string& session, const std::string& code,
          json extra = json::object()) {
  json args = {{"code", code}, {"session", session}};
  args.update(extra);
  const json result = server.Call("exec", args);
  const json structured = Structured(result);
  EXPECT_FALSE(structured.is_discarded()) << result.dump();
  return structured.is_discarded() ? json::object() : structured;
}

// Starts `sleep 1000` under a shell that carries `marker`, in the session, and waits until the
// host sees it. `popen_args`: more arguments for subprocess.Popen.
void StartSleeper(McpStdioServer& server, const std::string& session, const std::string& marker,
                  const std::string& popen_args = "") {
  Exec(server, session,
       "import subprocess\nsubprocess.Popen(['/bin/sh', '-c', 'sleep 1000', '" + marker + "']" +
           (popen_args.empty() ? "" : ", " + popen_args) + ")");
  // A fork of the shell carries its arguments until it execs sleep: one or two.
  ASSERT_GE(WaitForProcesses(marker, 1, 5s).size(), 1u);
}

TEST_P(SessionTest, StateStaysAcrossCallsAndALastExpressionIsTheResult) {
  McpStdioServer server = Serve();
  ASSERT_EQ(server.Problem(), "");
  const json opened = Exec(server, "new", "import json\nx = 41\nopen('kept.txt', 'w').write('w')");
  ASSERT_TRUE(opened.contains("session")) << opened;
  const std::string handle = opened["session"];
  EXPECT_EQ(opened["result"], "1") << opened;
  EXPECT_THAT(handle, ::testing::MatchesRegex("s[0-9a-f]{8}_[0-9a-f]{32}"));
  EXPECT_THAT(opened.value("expires_at", ""), ::testing::MatchesRegex("20[0-9-]+T[0-9:.]+Z"));

  const json next = Exec(server, handle, "x += 1\nprint('x is', x)\njson.dumps({'x': x})");
  EXPECT_EQ(next["stdout"], "x is 42\n") << next;
  EXPECT_EQ(next["result"], "'{\"x\": 42}'") << next;
  EXPECT_EQ(next["exit_code"], 0);
  EXPECT_EQ(Exec(server, handle, "open('kept.txt').read()")["result"], "'w'");
  EXPECT_TRUE(Exec(server, handle, "y = None\ny")["result"].is_null()) << "None shows nothing";
  const json big = Exec(server, handle, "'a' * 100000");
  EXPECT_LE(big["result"].get<std::string>().size(), 16000u) << "the value is cut short";

  const json failed = Exec(server, handle, "1/0");
  EXPECT_EQ(failed["exit_code"], 1);
  EXPECT_THAT(failed["stderr"].get<std::string>(), HasSubstr("ZeroDivisionError"));
  EXPECT_THAT(failed["stderr"].get<std::string>(), ::testing::Not(HasSubstr("mcp-exec agent")))
      << "the traceback starts at the call's code";
  EXPECT_EQ(Exec(server, handle, "import sys\nsys.exit(3)")["exit_code"], 3);
  EXPECT_EQ(Exec(server, handle, "x")["result"], "42") << "sys.exit ends the call, not the session";
  EXPECT_EQ(Exec(server, handle, "input()", {{"stdin", "one\n"}})["result"], "'one'");
  EXPECT_EQ(Exec(server, handle, "input()", {{"stdin", "two\n"}})["result"], "'two'")
      << "each call has its own stdin";

  const json list = Structured(server.Call("session_list", json::object()));
  ASSERT_EQ(list["sessions"].size(), 1u) << list;
  EXPECT_EQ(list["sessions"][0]["session"], handle);
  EXPECT_GE(list["sessions"][0]["calls"].get<int>(), 9);
  EXPECT_EQ(server.Stop().exit_status, 0);
}

TEST_P(SessionTest, AFileOrFigureComesBackFromTheCallThatMadeItOnly) {
  McpStdioServer server = Serve();
  ASSERT_EQ(server.Problem(), "");
  const std::string handle = Exec(server, "new", "import os")["session"];
  const json first = Exec(server, handle, "open('outputs/a.txt', 'w').write('a')");
  ASSERT_EQ(first["files"].size(), 1u) << first;
  EXPECT_EQ(first["files"][0]["path"], "a.txt");
  EXPECT_EQ(Exec(server, handle, "1")["files"].size(), 0u) << "a.txt is not returned again";
  const json changed = Exec(server, handle,
                            "open('outputs/a.txt', 'a').write('b')\n"
                            "open('outputs/b.txt', 'w').write('b')");
  EXPECT_EQ(changed["files"].size(), 2u) << "a changed file comes back: " << changed;
  const json figure = Exec(server, handle,
                           "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nNone");
  ASSERT_EQ(figure["files"].size(), 1u) << figure;
  EXPECT_EQ(figure["files"][0]["path"], "figure-1.png");
  EXPECT_EQ(figure["files"][0]["mime_type"], "image/png");
  EXPECT_EQ(Exec(server, handle, "len(plt.get_fignums())")["result"], "0")
      << "a figure left open is shown once and closed";
  EXPECT_EQ(Exec(server, handle, "2")["files"].size(), 0u);
}

TEST_P(SessionTest, TheDeadlineInterruptsACallAndTheSessionGoesOn) {
  McpStdioServer server = Serve();
  ASSERT_EQ(server.Problem(), "");
  const std::string handle = Exec(server, "new", "import time\nx = 1")["session"];
  const json slow = Exec(server, handle, "time.sleep(60)", {{"timeout_s", 1}});
  EXPECT_EQ(slow["timed_out"], true) << slow;
  EXPECT_EQ(slow["exit_code"], -1);
  EXPECT_THAT(slow["stderr"].get<std::string>(), HasSubstr("KeyboardInterrupt"));
  EXPECT_FALSE(slow.contains("session_ended")) << slow;
  EXPECT_EQ(Exec(server, handle, "x")["result"], "1") << "the session lives on";
}

TEST_P(SessionTest, ACallThatIgnoresTheInterruptIsKilledWithItsSession) {
  McpStdioServer server = Serve();
  ASSERT_EQ(server.Problem(), "");
  const std::string marker = NewMarker("session-timeout");
  const std::string handle = Exec(server, "new", "import os")["session"];
  ASSERT_NO_FATAL_FAILURE(StartSleeper(server, handle, marker));
  const json stuck = Exec(server, handle,
                          "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                          "while True: pass",
                          {{"timeout_s", 1}});
  EXPECT_EQ(stuck["timed_out"], true) << stuck;
  EXPECT_EQ(stuck["session_ended"], "timeout") << stuck;
  const auto left = WaitForNoProcesses(marker, 1s);
  EXPECT_TRUE(left.empty()) << DescribeProcesses(left);
  const std::string again = ToolErrorText(server.Call("exec", {{"code", "1"}, {"session", handle}}));
  EXPECT_EQ(again, "session ended: timeout");
  EXPECT_TRUE(Structured(server.Call("session_list", json::object()))["sessions"].empty());
}

TEST_P(SessionTest, CloseEndsTheSessionAndItsProcessesWithinOneSecond) {
  McpStdioServer server = Serve();
  ASSERT_EQ(server.Problem(), "");
  const std::string marker = NewMarker("session-close");
  const std::string handle = Exec(server, "new", "import os")["session"];
  ASSERT_NO_FATAL_FAILURE(StartSleeper(server, handle, marker));
  const json closed = Structured(server.Call("session_close", {{"session", handle}}));
  EXPECT_EQ(closed["closed"], true) << closed;
  const auto closed_at = std::chrono::steady_clock::now();
  const auto left = WaitForNoProcesses(marker, 1s);
  EXPECT_TRUE(left.empty()) << DescribeProcesses(left) << " still run after 1 s";
  EXPECT_LE(std::chrono::steady_clock::now() - closed_at, 1s);
  EXPECT_EQ(ToolErrorText(server.Call("exec", {{"code", "1"}, {"session", handle}})),
            "session ended: closed");
  EXPECT_THAT(ToolErrorText(server.Call("session_close", {{"session", handle}})),
              HasSubstr("session ended"));
}

TEST_P(SessionTest, AnIdleSessionEndsWithItsProcesses) {
  McpStdioServer server = Serve({"MCP_EXEC_SESSION_IDLE_S=1"});
  ASSERT_EQ(server.Problem(), "");
  const std::string marker = NewMarker("session-idle");
  const std::string handle = Exec(server, "new", "import os")["session"];
  ASSERT_NO_FATAL_FAILURE(StartSleeper(server, handle, marker));
  // Idle for 1 s, found by a sweep every 250 ms, gone within one second of that.
  const auto left = WaitForNoProcesses(marker, 2500ms);
  EXPECT_TRUE(left.empty()) << DescribeProcesses(left);
  EXPECT_THAT(ToolErrorText(server.Call("exec", {{"code", "1"}, {"session", handle}})),
              StartsWith("session ended: idle for 1 s"));
}

TEST_P(SessionTest, ASessionEndsAtItsMaximumAgeHoweverBusy) {
  McpStdioServer server = Serve({"MCP_EXEC_SESSION_MAX_AGE_S=2"});
  ASSERT_EQ(server.Problem(), "");
  const json opened = Exec(server, "new", "import time\nx = 1");
  const std::string handle = opened["session"];
  Exec(server, handle, "time.sleep(1)");
  // Started about 1 s ago: this call is cut by the age limit, not by its own deadline.
  const json cut = server.Call("exec", {{"code", "time.sleep(5)"}, {"session", handle}});
  const json structured = Structured(cut);
  EXPECT_THAT(structured.value("session_ended", ""), StartsWith("reached its maximum age of 2 s"))
      << cut.dump();
  EXPECT_THAT(ToolErrorText(server.Call("exec", {{"code", "x"}, {"session", handle}})),
              StartsWith("session ended: reached its maximum age of 2 s"));
}

TEST_P(SessionTest, MemoryPastTheLimitEndsTheSessionWhereThereIsALimit) {
  McpStdioServer server = Serve({"MCP_EXEC_MEMORY_MAX=64m"});
  ASSERT_EQ(server.Problem(), "");
  const json opened = Exec(server, "new", "x = 1");
  const std::string handle = opened["session"];
  if (opened["limits_backend"] == "rlimit") {
    // No memory limit: the address-space backstop makes an allocation past it fail in Python.
    const json big = Exec(server, handle, "b = bytearray(64 << 30)");
    EXPECT_THAT(big["stderr"].get<std::string>(), HasSubstr("MemoryError")) << big;
    EXPECT_EQ(Exec(server, handle, "x")["result"], "1");
    return;
  }
  const json big = Exec(server, handle, "b = bytearray(512 << 20)");
  EXPECT_EQ(big["oom_killed"], true) << big;
  EXPECT_EQ(big["session_ended"], "out of memory") << big;
  EXPECT_EQ(ToolErrorText(server.Call("exec", {{"code", "x"}, {"session", handle}})),
            "session ended: out of memory");
}

TEST_P(SessionTest, OpenSessionsAreLimited) {
  McpStdioServer server = Serve({"MCP_EXEC_MAX_SESSIONS=2"});
  ASSERT_EQ(server.Problem(), "");
  const std::string first = Exec(server, "new", "1")["session"];
  Exec(server, "new", "2");
  const std::string refused = ToolErrorText(server.Call("exec", {{"code", "3"}, {"session", "new"}}));
  EXPECT_THAT(refused, HasSubstr("too many sessions"));
  EXPECT_THAT(refused, HasSubstr("MCP_EXEC_MAX_SESSIONS=2"));
  ASSERT_EQ(Structured(server.Call("session_close", {{"session", first}}))["closed"], true);
  EXPECT_TRUE(Exec(server, "new", "4").contains("session")) << "a closed one makes room";
}

TEST_P(SessionTest, AsecondCallWhileOneRunsIsRefused) {
  McpStdioServer server = Serve({"MCP_EXEC_MAX_CONCURRENCY=2"});
  ASSERT_EQ(server.Problem(), "");
  const std::string handle = Exec(server, "new", "import time\nn = 0")["session"];
  const int slow = server.Send("exec", {{"code", "time.sleep(2)\nn += 1\nn"}, {"session", handle}});
  std::this_thread::sleep_for(500ms);
  const json second = server.Call("exec", {{"code", "n += 10"}, {"session", handle}});
  EXPECT_THAT(ToolErrorText(second), StartsWith("session busy")) << second;
  EXPECT_EQ(Structured(server.Wait(slow))["result"], "1") << "the first call is untouched";
  EXPECT_EQ(Exec(server, handle, "n")["result"], "1") << "the refused call never ran";
}

TEST_P(SessionTest, AHandleOfAnEarlierServerOrMadeUpGetsAClearAnswer) {
  std::string handle;
  {
    McpStdioServer first = Serve();
    ASSERT_EQ(first.Problem(), "");
    handle = Exec(first, "new", "1")["session"];
    first.Stop();
  }
  McpStdioServer server = Serve();
  ASSERT_EQ(server.Problem(), "");
  EXPECT_THAT(ToolErrorText(server.Call("exec", {{"code", "1"}, {"session", handle}})),
              AllOf(StartsWith("unknown session"), HasSubstr("does not survive a restart")));
  EXPECT_THAT(ToolErrorText(server.Call("exec", {{"code", "1"}, {"session", "made-up"}})),
              StartsWith("unknown session: no session of yours"));
  EXPECT_THAT(ToolErrorText(server.Call("exec", {{"code", "1"}, {"session", 7}})),
              HasSubstr("session must be"));
}

TEST_P(SessionTest, SessionsShareNothingWithEachOtherOrWithRuns) {
  McpStdioServer server = Serve();
  ASSERT_EQ(server.Problem(), "");
  const std::string a = Exec(server, "new",
                             "secret = 'a-secret'\nopen('/tmp/a.txt', 'w').write(secret)\n"
                             "open('/dev/shm/a', 'w').write(secret)")["session"];
  const std::string b = Exec(server, "new", "import os")["session"];
  const json seen = Exec(server, b,
                         "import os, glob\n"
                         "[globals().get('secret'), os.path.exists('/tmp/a.txt'),"
                         " os.listdir('/dev/shm'),"
                         " sorted(int(p) for p in os.listdir('/proc') if p.isdigit())]");
  EXPECT_EQ(seen["result"], "[None, False, [], [1, 2]]")
      << "only its own init and interpreter: " << seen;
  const json run = Structured(server.Call(
      "exec", {{"code", "import os\nprint(os.path.exists('/tmp/a.txt'), os.listdir('/dev/shm'))"}}));
  EXPECT_EQ(run["stdout"], "False []\n") << run;
  EXPECT_EQ(Exec(server, a, "secret")["result"], "'a-secret'");

  // What a leaves behind when it ends, a daemon among it, is gone for the sessions after it.
  const std::string marker = NewMarker("session-leftover");
  ASSERT_NO_FATAL_FAILURE(StartSleeper(server, a, marker, "start_new_session=True"));
  ASSERT_EQ(Structured(server.Call("session_close", {{"session", a}}))["closed"], true);
  EXPECT_TRUE(WaitForNoProcesses(marker, 1s).empty());
  const std::string c = Exec(server, "new", "import os")["session"];
  EXPECT_EQ(Exec(server, c,
                 "[os.path.exists('/tmp/a.txt'), os.listdir('/dev/shm'), globals().get('secret')]")
                ["result"],
            "[False, [], None]");
}

TEST_P(SessionTest, SessionsAreOffWithMaxSessionsZero) {
  McpStdioServer server = Serve({"MCP_EXEC_MAX_SESSIONS=0"});
  ASSERT_EQ(server.Problem(), "");
  EXPECT_THAT(ToolErrorText(server.Call("exec", {{"code", "1"}, {"session", "new"}})),
              HasSubstr("sessions are off on this server (MCP_EXEC_MAX_SESSIONS=0)"));
  EXPECT_TRUE(server.Call("session_list", json::object()).contains("rpc_error"))
      << "the session tools are not there";
}

// What a hostile program sends on its session's control socket (fd 5, docs/sessions.md), and
// the end it must bring: the session ends, saying why, and no call ever takes an answer that is
// not its own (issue 23, part 3).
struct ChannelAttack {
  const char* kind;    // the program's `_message(kind, ...)`
  const char* reason;  // what session_ended says it was
};
constexpr ChannelAttack kChannelAttacks[] = {
    {"forged", "an answer with an id that no call had (forged)"},
    {"stale", "an answer with an earlier call's id"},
    {"malformed", "a malformed answer (flag byte 7)"},
    {"empty", "an empty message"},
    {"oversized", "an oversized message (65557 bytes; an answer has at most 64022)"},
};

// Python for the attacks: the control socket, the id of the call that runs now (read from the
// agent's frame, as code in the interpreter can: a local named call_id), and each message.
// `cid` is the id of the call that runs now, `old` one of an earlier call.
constexpr const char* kChannelTools = R"py(
import os, socket, struct, subprocess, sys, threading
def _send(message):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, os.dup(5))
    s.send(message)
    s.close()
def _call_id():  # sixteen zeros where no frame has one: an agent without ids is attacked too
    f = sys._getframe()
    while f is not None and 'call_id' not in f.f_locals:
        f = f.f_back
    return bytes(16) if f is None else f.f_locals['call_id']
def _message(kind, cid, old):
    return {'forged': b'D' + os.urandom(16) + struct.pack('=iB', 0, 0),
            'stale': b'D' + old + struct.pack('=iB', 77, 0),
            'malformed': b'D' + cid + struct.pack('=iB', 0, 7),
            'empty': b'',
            'oversized': b'D' + cid + struct.pack('=iB', 0, 1) + b'a' * 65535}[kind]
old = _call_id()
)py";

// A new session, checked to answer print("real") with "real", with the attack tools loaded.
std::string SessionWithChannelTools(McpStdioServer& server) {
  const json opened = Exec(server, "new", "print('real')");
  EXPECT_EQ(opened.value("stdout", ""), "real\n") << opened;
  const std::string handle = opened.value("session", "");
  EXPECT_EQ(Exec(server, handle, kChannelTools)["exit_code"], 0);
  return handle;
}

TEST_P(SessionTest, AMessageOnTheControlChannelDuringACallEndsTheSessionSayingWhy) {
  McpStdioServer server = Serve();
  ASSERT_EQ(server.Problem(), "");
  for (const ChannelAttack& attack : kChannelAttacks) {
    SCOPED_TRACE(attack.kind);
    const std::string handle = SessionWithChannelTools(server);
    const json hit = Exec(server, handle,
                          std::string("_send(_message('") + attack.kind +
                              "', _call_id(), old))\nprint('after')\n'the value'");
    EXPECT_EQ(hit.value("session_ended", ""),
              std::string("control channel broken: ") + attack.reason + ", during the call")
        << hit;
    EXPECT_NE(hit.value("result", json()), "'the value'") << hit;
    EXPECT_EQ(ToolErrorText(server.Call("exec", {{"code", "print('real')"}, {"session", handle}})),
              std::string("session ended: control channel broken: ") + attack.reason +
                  ", during the call");
  }
  EXPECT_EQ(Exec(server, "new", "print('real')")["stdout"], "real\n");
}

TEST_P(SessionTest, AMessageOnTheControlChannelBetweenCallsEndsTheSessionBeforeTheNextCall) {
  McpStdioServer server = Serve();
  ASSERT_EQ(server.Problem(), "");
  for (const ChannelAttack& attack : kChannelAttacks) {
    SCOPED_TRACE(attack.kind);
    const std::string handle = SessionWithChannelTools(server);
    // A thread the call leaves behind sends once the host lets it (it kills `go`), after the
    // call has returned, and says it has sent (`sent`): no sleep orders the events.
    const std::string go = NewMarker("channel-go"), sent = NewMarker("channel-sent");
    const json started = Exec(
        server, handle,
        "cid = _call_id()\n"
        "def _later():\n"
        "    subprocess.Popen(['/bin/sh', '-c', 'sleep 1000', '" + go + "']).wait()\n"
        "    _send(_message('" + std::string(attack.kind) + "', cid, cid))\n"
        "    subprocess.Popen(['/bin/sh', '-c', 'sleep 1000', '" + sent + "'])\n"
        "threading.Thread(target=_later, daemon=True).start()");
    EXPECT_FALSE(started.contains("session_ended")) << started;
    const auto waiting = WaitForProcesses(go, 1, 5s);
    ASSERT_FALSE(waiting.empty());
    KillAll(waiting);
    ASSERT_FALSE(WaitForProcesses(sent, 1, 5s).empty()) << "the thread did not send";
    EXPECT_EQ(ToolErrorText(server.Call("exec", {{"code", "print('real')"}, {"session", handle}})),
              std::string("session ended: control channel broken: ") + attack.reason +
                  ", between calls");
    const auto left = WaitForNoProcesses(sent, 1s);
    EXPECT_TRUE(left.empty()) << DescribeProcesses(left) << " outlived the session";
  }
  EXPECT_EQ(Exec(server, "new", "print('real')")["stdout"], "real\n");
}

// The program can read its own call's id and answer for it: a lie about its own call, which is
// taken. The agent's true answer then comes too, and no later call takes it for its own.
TEST_P(SessionTest, AnAnswerForgedWithTheCallsOwnIdIsNeverALaterCallsAnswer) {
  McpStdioServer server = Serve();
  ASSERT_EQ(server.Problem(), "");
  const std::string handle = SessionWithChannelTools(server);
  const json lie = Exec(server, handle,
                        "_send(b'D' + _call_id() + struct.pack('=iB', 5, 0))\n"
                        "import time\ntime.sleep(0.5)\nprint('late')");
  EXPECT_EQ(lie["exit_code"], 5) << lie;
  const json next = Exec(server, handle, "print('real')");
  if (next.contains("session_ended")) {
    EXPECT_EQ(next["session_ended"],
              "control channel broken: an answer with an earlier call's id, during the call")
        << next;
    EXPECT_NE(next["exit_code"], 0) << next;
  } else {
    EXPECT_EQ(next["stdout"], "real\n") << next;
  }
}

// Issue 23, part 2: an input file that cannot be written is that call's error; the session and
// its state stay.
TEST_P(SessionTest, AnInputFileThatCannotBeWrittenFailsTheCallAndKeepsTheSession) {
  McpStdioServer server = Serve();
  ASSERT_EQ(server.Problem(), "");
  const std::string handle =
      Exec(server, "new", "import os\nx = 41\nos.symlink('/etc/hostname', 'link')")["session"];
  const std::string error = ToolErrorText(server.Call(
      "exec", {{"code", "x = 0"},
               {"session", handle},
               {"files", json::array({{{"path", "link"}, {"content", "a"}}})}}));
  EXPECT_THAT(error, StartsWith("input file link: ")) << error;
  const json after = Exec(server, handle, "x + 1");
  EXPECT_EQ(after["result"], "42") << "the session and its state stay; the failed call never ran";
  EXPECT_FALSE(after.contains("session_ended")) << after;
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(SessionTest);

}  // namespace
}  // namespace mcpexec::testing
