#include "config/config.h"

#include <gtest/gtest.h>

#include <map>

namespace mcpexec::config {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Config, DefaultsAreTheSeeds) {
  Config c = Defaults("/r");
  ASSERT_TRUE(ApplyEnv(Env({}), c).ok());
  EXPECT_EQ(c.rootfs, "/r");
  EXPECT_EQ(c.python, "python3");
  EXPECT_EQ(c.default_timeout_s, 30);
  EXPECT_EQ(c.max_timeout_s, 300);
  EXPECT_EQ(c.max_output_bytes, 1048576u);
  EXPECT_EQ(c.max_stdin_bytes, 1048576u);
  EXPECT_EQ(c.workspace_bytes, 64u << 20);
  EXPECT_EQ(c.host_uid, 65532u);
  EXPECT_TRUE(Validate(c).ok());
}

TEST(Config, EnvironmentOverridesDefaults) {
  Config c = Defaults("/r");
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_ROOTFS", "/other"},
                            {"MCP_EXEC_PYTHON", "/usr/bin/python3.11"},
                            {"MCP_EXEC_DEFAULT_TIMEOUT_S", "5"},
                            {"MCP_EXEC_MAX_TIMEOUT_S", "60"},
                            {"MCP_EXEC_MAX_OUTPUT_BYTES", "2048"},
                            {"MCP_EXEC_MAX_STDIN_BYTES", "1k"},
                            {"MCP_EXEC_WORKSPACE_BYTES", "16m"},
                            {"MCP_EXEC_HOST_UID", "1234"}}),
                       c)
                  .ok());
  EXPECT_EQ(c.rootfs, "/other");
  EXPECT_EQ(c.python, "/usr/bin/python3.11");
  EXPECT_EQ(c.default_timeout_s, 5);
  EXPECT_EQ(c.max_timeout_s, 60);
  EXPECT_EQ(c.max_output_bytes, 2048u);
  EXPECT_EQ(c.max_stdin_bytes, 1024u);
  EXPECT_EQ(c.workspace_bytes, 16u << 20);
  EXPECT_EQ(c.host_uid, 1234u);
}

TEST(Config, MalformedValuesNameTheVariable) {
  for (const auto& [name, value] : std::map<std::string, std::string>{
           {"MCP_EXEC_DEFAULT_TIMEOUT_S", "ten"},
           {"MCP_EXEC_MAX_TIMEOUT_S", "0"},
           {"MCP_EXEC_MAX_OUTPUT_BYTES", "-5"},
           {"MCP_EXEC_MAX_STDIN_BYTES", "12q"},
           {"MCP_EXEC_WORKSPACE_BYTES", ""},
           {"MCP_EXEC_HOST_UID", "0"},
           {"MCP_EXEC_ROOTFS", ""}}) {
    Config c = Defaults("/r");
    auto r = ApplyEnv(Env({{name, value}}), c);
    ASSERT_FALSE(r.ok()) << name << "=" << value;
    EXPECT_NE(r.error().message.find(name), std::string::npos) << r.error().message;
  }
}

TEST(Config, DefaultTimeoutAboveMaximumIsRejected) {
  Config c = Defaults("/r");
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_DEFAULT_TIMEOUT_S", "400"}}), c).ok());
  auto r = Validate(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("MCP_EXEC_MAX_TIMEOUT_S"), std::string::npos);
}

TEST(Config, ParseBytesUnitsAndLimits) {
  EXPECT_EQ(*ParseBytes("1"), 1u);
  EXPECT_EQ(*ParseBytes("64k"), 65536u);
  EXPECT_EQ(*ParseBytes("64M"), 64u << 20);
  EXPECT_EQ(*ParseBytes("2g"), 2ull << 30);
  EXPECT_FALSE(ParseBytes("0").ok());
  EXPECT_FALSE(ParseBytes("k").ok());
  EXPECT_FALSE(ParseBytes("1t").ok());
  EXPECT_FALSE(ParseBytes("99999999999999999999").ok());
  EXPECT_FALSE(ParseBytes("2048g").ok());
}

TEST(Config, TimeoutIsClampedToOneAndTheMaximum) {
  Config c = Defaults("/r");
  EXPECT_EQ(EffectiveTimeoutSeconds(c, std::nullopt), 30);
  EXPECT_EQ(EffectiveTimeoutSeconds(c, 0), 1);
  EXPECT_EQ(EffectiveTimeoutSeconds(c, -7), 1);
  EXPECT_EQ(EffectiveTimeoutSeconds(c, 299), 299);
  EXPECT_EQ(EffectiveTimeoutSeconds(c, 100000), 300);
}

}  // namespace
}  // namespace mcpexec::config
