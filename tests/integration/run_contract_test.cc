// `mcp-exec run`'s contract: where the code comes from, what reaches the program, and how its
// end is reported (the JSON object and the exit status).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using ::testing::HasSubstr;

class RunContractTest : public SandboxTest {};

TEST_P(RunContractTest, PrintsStdoutAndExitsWithTheProgramsStatus) {
  const Outcome r = runner_.RunCode(
      "import sys\n"
      "print('hello from the sandbox')\n"
      "print('to stderr', file=sys.stderr)\n"
      "sys.exit(3)\n");
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["stdout"], "hello from the sandbox\n");
  EXPECT_EQ(r.json["stderr"], "to stderr\n");
  EXPECT_EQ(r.json["exit_code"], 3);
  EXPECT_EQ(r.json["timed_out"], false);
  EXPECT_EQ(r.json["truncated"], false);
  EXPECT_FALSE(r.json.contains("signal"));
  EXPECT_GE(r.json["duration_ms"].get<long>(), 0);
  EXPECT_EQ(r.exit_status, 3) << r.Describe();
}

TEST_P(RunContractTest, StdinFlagReachesTheProgram) {
  const Outcome r = runner_.RunCode("import sys\nprint(repr(sys.stdin.read()))",
                                    {"--stdin", "line one\nline two \xc3\xa9"});
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["stdout"], "'line one\\nline two \xc3\xa9'\n") << r.Describe();
  EXPECT_EQ(r.exit_status, 0);
}

TEST_P(RunContractTest, WithoutStdinTheProgramReadsEof) {
  const Outcome r = runner_.RunCode("import sys\nprint(repr(sys.stdin.read()))");
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["stdout"], "''\n") << r.Describe();
}

TEST_P(RunContractTest, ReadsCodeFromStandardInput) {
  const Outcome r = runner_.Run({"-", "--stdin", "data for the program"},
                                WithInput("import sys\n"
                                                       "print('code from stdin')\n"
                                                       "print(sys.stdin.read())\n"
                                                       "sys.exit(7)\n"));
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["stdout"], "code from stdin\ndata for the program\n") << r.Describe();
  EXPECT_EQ(r.exit_status, 7);
}

TEST_P(RunContractTest, ReadsCodeFromFile) {
  const std::string path = HostSetup::Get().WriteSharedFile(
      "from-file-" + ModeName(GetParam()) + ".py", "print('code from a file', 6 * 7)\n");
  const Outcome r = runner_.Run({"--file", path});
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["stdout"], "code from a file 42\n") << r.Describe();
  EXPECT_EQ(r.exit_status, 0);
}

TEST_P(RunContractTest, SignalDeathReportsSignalNameAnd128PlusN) {
  const Outcome r = runner_.RunCode(
      "import os, signal, sys\n"
      "print('before', flush=True)\n"
      "os.kill(os.getpid(), signal.SIGSEGV)\n");
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["exit_code"], 139) << r.Describe();
  EXPECT_EQ(r.json["signal"], "SIGSEGV");
  EXPECT_EQ(r.json["stdout"], "before\n");
  EXPECT_EQ(r.json["timed_out"], false);
  EXPECT_EQ(r.exit_status, 139);
}

TEST_P(RunContractTest, InvalidUtf8OutputIsRepairedWithReplacementCharacter) {
  const Outcome r = runner_.RunCode(
      "import sys\n"
      "sys.stdout.buffer.write(b'ok\\xff\\n')\n"
      "sys.stderr.buffer.write(b'\\xc3(\\n')\n");
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.json["stdout"], "ok\xef\xbf\xbd\n") << r.Describe();
  EXPECT_EQ(r.json["stderr"], "\xef\xbf\xbd(\n");
  EXPECT_EQ(r.exit_status, 0);
}

TEST_P(RunContractTest, EnvironmentVariablesConfigureTheRunAndFlagsWin) {
  const std::string code = "print('a' * 3000, end='')";
  const Outcome from_env =
      runner_.RunCode(code, {}, WithEnv({"MCP_EXEC_MAX_OUTPUT_BYTES=1k"}));
  ASSERT_TRUE(IsRunResult(from_env));
  EXPECT_EQ(from_env.json["stdout"], std::string(1024, 'a')) << from_env.Describe();
  EXPECT_EQ(from_env.json["truncated"], true);

  const Outcome flag_wins = runner_.RunCode(code, {"--max-output-bytes", "2k"},
                                            WithEnv({"MCP_EXEC_MAX_OUTPUT_BYTES=1k"}));
  ASSERT_TRUE(IsRunResult(flag_wins));
  EXPECT_EQ(flag_wins.json["stdout"], std::string(2048, 'a')) << flag_wins.Describe();
  EXPECT_EQ(flag_wins.json["truncated"], true);
}

TEST_P(RunContractTest, EmptyCodeIsAUsageError) {
  for (const std::string code : {"", "  \n\t\n"}) {
    const Outcome r = runner_.RunCode(code);
    EXPECT_EQ(r.exit_status, 2) << r.Describe();
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(r.err, HasSubstr("code is empty"));
  }
}

TEST_P(RunContractTest, MalformedByteSizeIsAUsageError) {
  const Outcome r = runner_.RunCode("print(1)", {"--max-output-bytes", "12x"});
  EXPECT_EQ(r.exit_status, 2) << r.Describe();
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("MCP_EXEC_MAX_OUTPUT_BYTES"));
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(RunContractTest);

}  // namespace
}  // namespace mcpexec::testing

namespace mcpexec::testing {
namespace {

TEST_P(RunContractTest, VersionAndHelpDescribeTheCommand) {
  const Outcome version = runner_.RunCommand({runner_.Binary(), "--version"});
  EXPECT_EQ(version.exit_status, 0) << version.Describe();
  EXPECT_THAT(version.out, ::testing::MatchesRegex("mcp-exec [0-9]+\\.[0-9]+\\.[0-9]+\n"));

  const Outcome help = runner_.RunCommand({runner_.Binary(), "run", "--help"});
  EXPECT_EQ(help.exit_status, 0) << help.Describe();
  for (const char* flag : {"--code", "--file", "--stdin", "--timeout", "--rootfs", "--environment",
                           "MCP_EXEC_MAX_OUTPUT_BYTES", "125"}) {
    EXPECT_THAT(help.out, HasSubstr(flag));
  }

  const Outcome unknown = runner_.RunCommand({runner_.Binary(), "run", "--no-such-flag"});
  EXPECT_EQ(unknown.exit_status, 2) << unknown.Describe();
}

}  // namespace
}  // namespace mcpexec::testing
