// The `exec` argument table: the schema, the reading and the checks all follow it.
#include "exec/arguments.h"

#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mcpexec::exec {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(ExecArguments, TheSchemaHasEveryArgumentOfTheTable) {
  const json schema = InputSchema(config::Defaults("/r"));
  EXPECT_EQ(schema["properties"].size(), Arguments().size());
  for (const ArgumentSpec& a : Arguments()) {
    EXPECT_TRUE(schema["properties"].contains(a.name)) << a.name;
    const json& required = schema["required"];
    EXPECT_EQ(a.required, std::find(required.begin(), required.end(), a.name) != required.end())
        << a.name;
  }
  EXPECT_EQ(schema["additionalProperties"], false);
}

TEST(ExecArguments, EveryArgumentIsRead) {
  auto read = ReadArguments({{"code", "print(1)"},
                             {"timeout_s", 7.0},
                             {"stdin", "in"},
                             {"files", {{{"path", "a.txt"}, {"content", "x"}}}},
                             {"session", "new"},
                             {"environment", "data"}});
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->request.code, "print(1)");
  EXPECT_EQ(read->request.timeout_s, 7);
  EXPECT_EQ(read->request.stdin_data, "in");
  ASSERT_EQ(read->request.files.size(), 1u);
  EXPECT_EQ(read->request.files[0].path, "a.txt");
  EXPECT_TRUE(read->session.present);
  EXPECT_TRUE(read->session.open);
  EXPECT_EQ(read->environment, "data");
}

TEST(ExecArguments, TheEnvironmentIsAnEnumOfTheOfferedNames) {
  Offer offer;
  offer.environments.resize(2);
  offer.environments[0].name = "default";
  offer.environments[1].name = "data";
  offer.default_name = "data";
  const json schema = InputSchema(config::Defaults("/r"), offer)["properties"]["environment"];
  EXPECT_EQ(schema["enum"], json::array({"default", "data"}));
  EXPECT_THAT(schema["description"].get<std::string>(), HasSubstr("default \"data\""));
  EXPECT_EQ(InputSchema(config::Defaults("/r"))["properties"]["environment"]["enum"],
            json::array({"default"}));
}

TEST(ExecArguments, NullIsAbsentAndARequiredOneIsMissed) {
  EXPECT_THAT(ReadArguments({{"code", nullptr}}).error().message, HasSubstr("code is required"));
  auto read = ReadArguments({{"code", "x"}, {"stdin", nullptr}, {"session", nullptr}});
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read->session.present);
  EXPECT_FALSE(read->request.timeout_s);
}

TEST(ExecArguments, BoundsInWordsFollowTheConfiguration) {
  config::Config c = config::Defaults("/r");
  c.max_timeout_s = 42;
  c.max_stdin_bytes = 3 << 10;
  c.max_input_files = 5;
  c.max_input_file_bytes = 1000;
  EXPECT_EQ(ArgumentBound("timeout_s", c), "at most 42 s");
  EXPECT_EQ(ArgumentBound("stdin", c), "up to 3 KiB");
  EXPECT_EQ(ArgumentBound("files", c), "up to 5 files of at most 1000 bytes each");
  EXPECT_EQ(ArgumentBound("code", c), "");
}

TEST(ExecArguments, ValidationKeepsTheRequest) {
  auto valid = ValidateRequest(config::Defaults("/r"), {"pass", "in", 3, {{"a", "x"}}});
  ASSERT_TRUE(valid.ok()) << valid.error().message;
  EXPECT_EQ((*valid)->code, "pass");
  EXPECT_EQ((*valid)->stdin_data, "in");
  EXPECT_EQ((*valid)->timeout_s, 3);
  EXPECT_EQ((*valid)->files.size(), 1u);
}

}  // namespace
}  // namespace mcpexec::exec
