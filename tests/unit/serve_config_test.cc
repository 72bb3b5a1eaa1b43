#include <fcntl.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "../support/temp_dir.h"
#include "cli/run_command.h"
#include "cli/serve_command.h"

namespace mcpexec::cli {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

ConfigFlags ServeFlags(std::vector<std::string> args) {
  CLI::App app;
  ServeOptions options;
  AddServeCommand(app, options);
  args.insert(args.begin(), "serve");
  std::reverse(args.begin(), args.end());  // CLI11 takes argv reversed
  app.parse(args);
  return options.config;
}

config::EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Result<config::Config> Resolve(std::map<std::string, std::string> env,
                               std::vector<std::string> args = {}) {
  return ResolveServeConfig("/r", Env(std::move(env)), ServeFlags(std::move(args)));
}

Result<Exposure> ExposureOf(std::map<std::string, std::string> env,
                            std::vector<std::string> args = {}) {
  MCPEXEC_ASSIGN_OR_RETURN(config::Config c, Resolve(std::move(env), std::move(args)));
  return CheckExposure(c);
}

// 0600 file holding `content`, removed with the object.
class TokenFile {
 public:
  explicit TokenFile(const std::string& content) : path_(dir_.Path() + "/token") {
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, content.data(), content.size()) != ssize_t(content.size()) ||
        close(fd) != 0) {
      std::abort();
    }
  }
  const std::string& Path() const { return path_; }

 private:
  testing::TempDir dir_;
  std::string path_;
};

TEST(ServeConfig, FigureMaxPxFlag) {
  auto c = Resolve({}, {"--figure-max-px", "2048"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->figure_max_px, 2048);
}

TEST(ServeConfig, EnvironmentIdleFlagWinsOverTheVariable) {
  auto c = Resolve({{"MCP_EXEC_ENVIRONMENT_IDLE_S", "30"}}, {"--environment-idle", "0"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->environment_idle_s, 0);
  c = Resolve({{"MCP_EXEC_ENVIRONMENT_IDLE_S", "30"}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->environment_idle_s, 30);
  c = Resolve({}, {"--environment-idle", "86401"});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error().message, HasSubstr("MCP_EXEC_ENVIRONMENT_IDLE_S"));
}

TEST(ServeExposure, HttpOffLoopbackWithoutATokenIsRefused) {
  // The seed's default MCP_EXEC_ADDR, ":8080", is every interface.
  for (const auto& [transport, addr] : std::map<std::string, std::string>{
           {"http", ":8080"}, {"sse", "0.0.0.0:0"}}) {
    auto r = ExposureOf({{"MCP_EXEC_TRANSPORT", transport}, {"MCP_EXEC_ADDR", addr}});
    ASSERT_FALSE(r.ok()) << transport << " " << addr;
    EXPECT_THAT(r.error().message,
                AllOf(HasSubstr("refusing to serve " + transport), HasSubstr("0.0.0.0:"),
                      HasSubstr("MCP_EXEC_AUTH_TOKEN_FILE"), HasSubstr("MCP_EXEC_AUTH_TOKEN,"),
                      HasSubstr("MCP_EXEC_ALLOW_UNAUTHENTICATED=1"),
                      HasSubstr("--allow-unauthenticated")));
  }
  for (const std::string addr : {"[::]:8080", "10.1.2.3:80", "[2001:db8::1]:80"}) {
    EXPECT_FALSE(ExposureOf({}, {"--transport", "http", "--addr", addr}).ok()) << addr;
  }
  EXPECT_FALSE(ExposureOf({{"MCP_EXEC_TRANSPORT", "http"},
                           {"MCP_EXEC_AUTH_TOKEN", ""},
                           {"MCP_EXEC_ALLOW_UNAUTHENTICATED", "0"}})
                   .ok());
}

TEST(ServeExposure, LoopbackAndStdioNeedNoToken) {
  for (const std::string addr : {"127.0.0.1:8080", "localhost:0", "127.3.2.1:80", "[::1]:9"}) {
    auto r = ExposureOf({{"MCP_EXEC_TRANSPORT", "http"}, {"MCP_EXEC_ADDR", addr}});
    ASSERT_TRUE(r.ok()) << addr << ": " << r.error().message;
    EXPECT_EQ(*r, Exposure::kLoopback) << addr;
  }
  // stdio never listens: the default address does not matter.
  auto r = ExposureOf({});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, Exposure::kStdio);
}

TEST(ServeExposure, OffLoopbackWithATokenOrByChoice) {
  EXPECT_EQ(*ExposureOf({{"MCP_EXEC_TRANSPORT", "http"}, {"MCP_EXEC_AUTH_TOKEN", "t"}}),
            Exposure::kAuthenticated);
  TokenFile file("from-file\n");
  auto c = Resolve({{"MCP_EXEC_TRANSPORT", "http"}}, {"--auth-token-file", file.Path()});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->auth_token, "from-file");
  EXPECT_EQ(*CheckExposure(*c), Exposure::kAuthenticated);
  c = Resolve({{"MCP_EXEC_TRANSPORT", "http"}, {"MCP_EXEC_AUTH_TOKEN_FILE", file.Path()}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->auth_token, "from-file");

  EXPECT_EQ(*ExposureOf({{"MCP_EXEC_TRANSPORT", "http"}, {"MCP_EXEC_ALLOW_UNAUTHENTICATED", "1"}}),
            Exposure::kOpenByChoice);
  EXPECT_EQ(*ExposureOf({}, {"--transport", "sse", "--allow-unauthenticated"}),
            Exposure::kOpenByChoice);
}

TEST(ServeExposure, TokenGivenBothWaysOrAnUnusableFileStopsServe) {
  TokenFile file("from-file\n");
  auto r = Resolve({{"MCP_EXEC_AUTH_TOKEN", "direct"}}, {"--auth-token-file", file.Path()});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("given twice"));
  r = Resolve({{"MCP_EXEC_AUTH_TOKEN_FILE", file.Path()}}, {"--auth-token", "direct"});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("given twice"));
  // Even over stdio, which ignores the token: a broken setting is not silently dropped.
  r = Resolve({{"MCP_EXEC_AUTH_TOKEN_FILE", file.Path() + ".missing"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("MCP_EXEC_AUTH_TOKEN_FILE"));
}

TEST(ServeExposure, OnlyServeReadsTheTokenFile) {
  // `run` shares the environment of a deployment but never listens: a token file it may not
  // read (root's, say) must not stop it.
  auto c = ResolveConfig("/r", Env({{"MCP_EXEC_AUTH_TOKEN_FILE", "/nonexistent/token"}}),
                         ConfigFlags{});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->auth_token.empty());
}

TEST(ServeExposure, AllowUnauthenticatedIsASwitch) {
  ConfigFlags flags = ServeFlags({"--allow-unauthenticated", "--addr", ":1"});
  EXPECT_EQ(flags.values["MCP_EXEC_ALLOW_UNAUTHENTICATED"], "1");
  EXPECT_EQ(flags.values["MCP_EXEC_ADDR"], ":1");
}

}  // namespace
}  // namespace mcpexec::cli
