#include "exec/exec_tool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mcpexec::exec {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class ExecToolTest : public ::testing::Test {
 protected:
  ExecToolTest() : tool_(config::Defaults("/unused"), nullptr) {}

  std::string ErrorFor(const json& args) {
    json r = tool_.Call(args, mcp::ToolCallContext{});
    EXPECT_EQ(r["isError"], true) << args;
    return r["content"][0]["text"].get<std::string>();
  }

  ExecTool tool_;
};

TEST_F(ExecToolTest, DefinitionFollowsTheSeedContract) {
  json d = tool_.Definition();
  EXPECT_EQ(d["name"], "exec");
  EXPECT_EQ(d["inputSchema"]["required"], json::array({"code"}));
  EXPECT_EQ(d["inputSchema"]["properties"]["timeout_s"]["type"], "integer");
  EXPECT_EQ(d["inputSchema"]["properties"]["stdin"]["type"], "string");
  EXPECT_EQ(d["outputSchema"]["required"],
            json::array({"stdout", "stderr", "exit_code", "duration_ms", "truncated", "timed_out"}));
  EXPECT_EQ(d["annotations"]["readOnlyHint"], false);
  EXPECT_EQ(d["annotations"]["openWorldHint"], false);
}

TEST_F(ExecToolTest, DescriptionComesFromTheConfiguration) {
  config::Config c = config::Defaults("/unused");
  c.default_timeout_s = 12;
  c.max_timeout_s = 34;
  c.max_output_bytes = 2 << 20;
  c.workspace_bytes = 16 << 20;
  const std::string d = ExecTool::Describe(c, limits::Backend::kCgroup2);
  EXPECT_THAT(d, HasSubstr("12 s by default"));
  EXPECT_THAT(d, HasSubstr("at most 34 s"));
  EXPECT_THAT(d, HasSubstr("cut at 2 MiB"));
  EXPECT_THAT(d, HasSubstr("private space of 16 MiB"));
  EXPECT_THAT(d, HasSubstr("no network"));
}

TEST_F(ExecToolTest, InvalidArgumentsAreToolErrors) {
  EXPECT_THAT(ErrorFor(json::object()), HasSubstr("code is required"));
  EXPECT_THAT(ErrorFor({{"code", 5}}), HasSubstr("code must be a string"));
  EXPECT_THAT(ErrorFor({{"code", "  \n"}}), HasSubstr("code is empty"));
  EXPECT_THAT(ErrorFor({{"code", "pass"}, {"stdin", 1}}), HasSubstr("stdin must be a string"));
  EXPECT_THAT(ErrorFor({{"code", "pass"}, {"timeout_s", "10"}}),
              HasSubstr("timeout_s must be a whole number"));
  EXPECT_THAT(ErrorFor({{"code", "pass"}, {"timeout_s", 1.5}}),
              HasSubstr("timeout_s must be a whole number"));
  EXPECT_THAT(ErrorFor({{"code", "pass"}, {"cwd", "/"}}), HasSubstr("unknown argument 'cwd'"));
  EXPECT_THAT(ErrorFor({{"code", "pass"}, {"stdin", std::string((1 << 20) + 1, 'x')}}),
              HasSubstr("MCP_EXEC_MAX_STDIN_BYTES"));
}

// Found by tests/fuzz/exec_args_fuzz: arguments that are not an object made Call() throw
// json::type_error (306, "cannot use value() with null") instead of answering.
TEST_F(ExecToolTest, ArgumentsThatAreNotAnObjectAreToolErrors) {
  for (const json& args : {json(), json::array({"code"}), json("print(1)"), json(1)}) {
    EXPECT_THAT(ErrorFor(args), HasSubstr("arguments must be an object")) << args;
  }
}

}  // namespace
}  // namespace mcpexec::exec
