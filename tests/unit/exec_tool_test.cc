#include "exec/exec_tool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mcpexec::exec {
namespace {

using nlohmann::json;
using ::testing::AllOf;
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
  EXPECT_THAT(d, HasSubstr("/tmp/outputs/"));
  EXPECT_THAT(d, HasSubstr("plt.show()"));
  EXPECT_THAT(ExecTool::Describe(c, limits::Backend::kCgroup2, false),
              ::testing::Not(HasSubstr("plt.show()")));
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

TEST_F(ExecToolTest, DefinitionDescribesFiles) {
  json d = tool_.Definition();
  const json& files = d["inputSchema"]["properties"]["files"];
  EXPECT_EQ(files["type"], "array");
  EXPECT_EQ(files["items"]["required"], json::array({"path", "content"}));
  EXPECT_EQ(files["items"]["properties"]["encoding"]["enum"], json::array({"utf-8", "base64"}));
  EXPECT_EQ(files["items"]["additionalProperties"], false);
  const json& listed = d["outputSchema"]["properties"]["files"]["items"];
  EXPECT_EQ(listed["required"], json::array({"path", "size", "mime_type", "returned", "reason"}));
  EXPECT_THAT(d["description"].get<std::string>(),
              AllOf(HasSubstr("/tmp/outputs/"), HasSubstr("64 files of at most 16 MiB"),
                    HasSubstr("16 files of up to 1 MiB"), HasSubstr("under 1000000 bytes")));
}

// Every bad `files` argument is a tool error that names the entry, before anything runs (the
// tool has no launch plan here: reaching the sandbox would crash).
TEST_F(ExecToolTest, InvalidFilesAreToolErrorsNamingTheEntry) {
  auto with = [](json files) { return json{{"code", "pass"}, {"files", std::move(files)}}; };
  const json ok = {{"path", "ok.txt"}, {"content", "x"}};
  EXPECT_THAT(ErrorFor(with("data.csv")),
              HasSubstr("invalid arguments: files must be an array of {path, content, encoding}"));
  EXPECT_THAT(ErrorFor(with({ok, 5})), HasSubstr("files[1]: must be an object"));
  EXPECT_THAT(
      ErrorFor(with({ok, {{"path", "../../etc/passwd"}, {"content", "x"}}})),
      HasSubstr("files[1] (\"../../etc/passwd\"): the path has a \".\" or \"..\" component"));
  EXPECT_THAT(ErrorFor(with({{{"path", "/etc/passwd"}, {"content", "x"}}})),
              HasSubstr("files[0] (\"/etc/passwd\"): the path is absolute"));
  EXPECT_THAT(ErrorFor(with({{{"path", "main.py"}, {"content", "x"}}})),
              HasSubstr("files[0] (\"main.py\"): main.py is the program itself"));
  EXPECT_THAT(ErrorFor(with({{{"path", "x.bin"}, {"content", "@@@@"}, {"encoding", "base64"}}})),
              HasSubstr("files[0] (\"x.bin\"): content is not valid base64"));
  EXPECT_THAT(ErrorFor(with({{{"path", "x"}, {"content", "x"}, {"encoding", "latin1"}}})),
              HasSubstr("files[0] (\"x\"): encoding must be"));
  EXPECT_THAT(ErrorFor(with({{{"path", "x"}, {"content", "x"}, {"owner", "root"}}})),
              HasSubstr("files[0] (\"x\"): unknown field 'owner'"));
  EXPECT_THAT(ErrorFor(with({ok, ok})),
              HasSubstr("files[1] (\"ok.txt\"): the path is given twice"));
  EXPECT_THAT(
      ErrorFor(with({{{"path", "a"}, {"content", ""}}, {{"path", "a/b"}, {"content", ""}}})),
      HasSubstr("input file \"a\" is also a directory of \"a/b\""));
  json many = json::array();
  for (int i = 0; i < 65; ++i) many.push_back({{"path", "f" + std::to_string(i)}, {"content", ""}});
  EXPECT_THAT(ErrorFor(with(many)), AllOf(HasSubstr("65 input files, over the limit of 64"),
                                          HasSubstr("MCP_EXEC_MAX_INPUT_FILES")));
  EXPECT_THAT(ErrorFor(with({{{"path", "big"}, {"content", std::string((16 << 20) + 1, 'x')}}})),
              AllOf(HasSubstr("files[0] (\"big\"): 16777217 bytes"),
                    HasSubstr("MCP_EXEC_MAX_INPUT_FILE_BYTES")));
  json full = json::array();
  for (int i = 0; i < 5; ++i) {
    full.push_back({{"path", "f" + std::to_string(i)}, {"content", std::string(16 << 20, 'x')}});
  }
  EXPECT_THAT(ErrorFor(with(full)), HasSubstr("MCP_EXEC_WORKSPACE_BYTES"));
  EXPECT_THAT(ErrorFor({{"code", "pass"}, {"file", json::array()}}),
              HasSubstr("unknown argument 'file' (exec takes code, timeout_s, stdin, files, session, "
                        "environment, packages)"));
}

// A description of two environments: the default one's and the data image's packages, with
// their versions, and which one is the default.
Offer TwoEnvironments(size_t data_packages) {
  Offer offer;
  Environment def;
  def.name = "default";
  def.has_metadata = true;
  def.packages = {{"jinja2", "3.1.2"}, {"matplotlib", "3.6.3"}, {"numpy", "1.24.2"},
                  {"pandas", "1.5.3"}, {"PIL", "9.4.0"},        {"yaml", "6.0"}};
  Environment data = def;
  data.name = "data";
  // Names and versions as long as the data image's real ones (scikit-learn, statsmodels...).
  for (size_t i = data.packages.size(); i < data_packages; ++i) {
    data.packages.push_back({"package_" + std::to_string(i), "1.10.1"});
  }
  offer.environments = {def, data};
  return offer;
}

TEST_F(ExecToolTest, DescriptionListsEachEnvironmentsPackagesAndTheDefault) {
  const config::Config c = config::Defaults("/unused");
  const std::string d = ExecTool::Describe(c, limits::Backend::kCgroup2, true, TwoEnvironments(8));
  EXPECT_THAT(d, AllOf(HasSubstr("(the environment argument; default \"default\")"),
                       HasSubstr(" default: jinja2 3.1.2, matplotlib 3.6.3, numpy 1.24.2, pandas "
                                 "1.5.3, PIL 9.4.0, yaml 6.0."),
                       HasSubstr(" data: jinja2 3.1.2, "), HasSubstr("package_7 1.10.1.")));
  // One environment whose image lists nothing (a rootfs built before environments): the seed's
  // set, as before.
  Offer bare;
  bare.environments.resize(1);
  bare.environments[0].name = "default";
  EXPECT_THAT(ExecTool::Describe(c, limits::Backend::kCgroup2, true, bare),
              HasSubstr("standard library plus numpy, pandas, matplotlib, PyYAML, Jinja2 and "
                        "Pillow. It has no network"));
  EXPECT_EQ(ExecTool::Describe(c, limits::Backend::kCgroup2, true, bare),
            ExecTool::Describe(c, limits::Backend::kCgroup2));
}

// The whole description stays within 1,500 tokens (issue 25) with the data image's list, about
// 35 packages, beside the default's. Tokens are estimated as bytes / 4, about what tokenizers
// average on English prose (code and version numbers cost a little more, hence the margin the
// figure leaves).
TEST_F(ExecToolTest, DescriptionWithTwoEnvironmentsStaysWithin1500Tokens) {
  const config::Config c = config::Defaults("/unused");
  const std::string d = ExecTool::Describe(c, limits::Backend::kCgroup2, true, TwoEnvironments(35));
  EXPECT_THAT(d, HasSubstr("package_34 1.10.1"));
  EXPECT_LE(d.size() / 4, 1500u) << d.size() << " bytes:\n" << d;
}

TEST_F(ExecToolTest, AnEnvironmentNotOfferedIsAToolErrorListingTheOfferedOnes) {
  ExecTool tool(config::Defaults("/unused"), EnvironmentEngines::Single(nullptr));
  json r = tool.Call({{"code", "pass"}, {"environment", "data"}}, mcp::ToolCallContext{});
  EXPECT_EQ(r["isError"], true);
  EXPECT_THAT(r["content"][0]["text"].get<std::string>(),
              HasSubstr("unknown environment \"data\": this server offers default"));
  EXPECT_THAT(ErrorFor({{"code", "pass"}, {"environment", 5}}),
              HasSubstr("environment must be the name of an offered environment"));
  EXPECT_THAT(ErrorFor({{"code", "pass"}, {"environment", ""}}),
              HasSubstr("environment must be the name of an offered environment"));
  const json schema = tool.Definition()["inputSchema"]["properties"]["environment"];
  EXPECT_EQ(schema["enum"], json::array({"default"}));
  EXPECT_THAT(schema["description"].get<std::string>(), HasSubstr("default \"default\""));
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
