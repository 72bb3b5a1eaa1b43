#include "config/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "../support/temp_dir.h"

namespace mcpexec::config {
namespace {

using ::testing::HasSubstr;

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
           {"MCP_EXEC_ALLOW_UNAUTHENTICATED", "yes"},
           {"MCP_EXEC_ROOTFS", ""}}) {
    Config c = Defaults("/r");
    auto r = ApplyEnv(Env({{name, value}}), c);
    ASSERT_FALSE(r.ok()) << name << "=" << value;
    EXPECT_NE(r.error().message.find(name), std::string::npos) << r.error().message;
  }
}

TEST(Config, FileLimitsHaveTheirDefaultsAndParse) {
  Config c = Defaults("/r");
  ASSERT_TRUE(ApplyEnv(Env({}), c).ok());
  EXPECT_EQ(c.max_input_files, 64u);
  EXPECT_EQ(c.max_input_file_bytes, 16u << 20);
  EXPECT_EQ(c.max_output_files, 16u);
  EXPECT_EQ(c.max_output_file_bytes, 1u << 20);
  EXPECT_EQ(c.max_result_bytes, 1'000'000u);
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_MAX_INPUT_FILES", "3"},
                            {"MCP_EXEC_MAX_INPUT_FILE_BYTES", "2k"},
                            {"MCP_EXEC_MAX_OUTPUT_FILES", "0"},
                            {"MCP_EXEC_MAX_OUTPUT_FILE_BYTES", "1g"},
                            {"MCP_EXEC_MAX_RESULT_BYTES", "500000"}}),
                       c)
                  .ok());
  EXPECT_EQ(c.max_input_files, 3u);
  EXPECT_EQ(c.max_input_file_bytes, 2048u);
  EXPECT_EQ(c.max_output_files, 0u);
  EXPECT_EQ(c.max_output_file_bytes, 1u << 30);
  EXPECT_EQ(c.max_result_bytes, 500'000u);
  EXPECT_TRUE(Validate(c).ok());
}

TEST(Config, BadFileLimitsNameTheVariable) {
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"MCP_EXEC_MAX_INPUT_FILES", "many"},
           {"MCP_EXEC_MAX_INPUT_FILES", "-1"},
           {"MCP_EXEC_MAX_INPUT_FILES", "100001"},
           {"MCP_EXEC_MAX_INPUT_FILES", "1k"},
           {"MCP_EXEC_MAX_INPUT_FILE_BYTES", "0"},
           {"MCP_EXEC_MAX_INPUT_FILE_BYTES", "16q"},
           {"MCP_EXEC_MAX_OUTPUT_FILES", ""},
           {"MCP_EXEC_MAX_OUTPUT_FILES", "1.5"},
           {"MCP_EXEC_MAX_OUTPUT_FILE_BYTES", "-1"},
           {"MCP_EXEC_MAX_OUTPUT_FILE_BYTES", "lots"},
           {"MCP_EXEC_MAX_RESULT_BYTES", ""},
           {"MCP_EXEC_MAX_RESULT_BYTES", "1t"}}) {
    Config c = Defaults("/r");
    auto r = ApplyEnv(Env({{name, value}}), c);
    ASSERT_FALSE(r.ok()) << name << "=" << value;
    EXPECT_THAT(r.error().message, HasSubstr(name)) << value;
  }
  // Output files are read into memory: at most 1 GiB each.
  Config c = Defaults("/r");
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_MAX_OUTPUT_FILE_BYTES", "1025m"}}), c).ok());
  auto r = Validate(c);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("MCP_EXEC_MAX_OUTPUT_FILE_BYTES is at most 1g"));
}

// Input files arrive inside the JSON-RPC message: the largest message grows with what the
// workspace can take, up to the input limits.
TEST(Config, MaxMessageBytesMakesRoomForInputFiles) {
  Config c = Defaults("/r");
  const uint64_t with_files = MaxMessageBytes(c);
  c.max_input_files = 0;
  const uint64_t without = MaxMessageBytes(c);
  EXPECT_EQ(with_files - without, 2 * c.workspace_bytes);
  c.max_input_files = 2;
  c.max_input_file_bytes = 1000;
  EXPECT_EQ(MaxMessageBytes(c) - without, 2 * 2000u);
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

TEST(Config, FigureMaxPxIsAPixelCountFrom64To8192) {
  Config c = Defaults("/r");
  EXPECT_EQ(c.figure_max_px, 1568);
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_FIGURE_MAX_PX", "800"}}), c).ok());
  EXPECT_EQ(c.figure_max_px, 800);
  for (const char* edge : {"64", "8192"}) {
    EXPECT_TRUE(ApplyEnv(Env({{"MCP_EXEC_FIGURE_MAX_PX", edge}}), c).ok()) << edge;
  }
  for (const char* bad : {"63", "8193", "0", "-1", "1568px", ""}) {
    auto r = ApplyEnv(Env({{"MCP_EXEC_FIGURE_MAX_PX", bad}}), c);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.find("MCP_EXEC_FIGURE_MAX_PX: "), 0u) << r.error().message;
  }
  auto r = ApplyEnv(Env({{"MCP_EXEC_FIGURE_MAX_PX", "10000"}}), c);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, ::testing::HasSubstr("outside [64, 8192]"));
  EXPECT_EQ(c.figure_max_px, 8192) << "a refused value must not be stored";
}

TEST(Config, EngineVariablesHaveTheirDefaultsAndParse) {
  Config c = Defaults("/r");
  EXPECT_EQ(c.engine, EngineKind::kAuto);
  EXPECT_EQ(c.pool_size, 2);
  EXPECT_EQ(c.preload, (std::vector<std::string>{"numpy", "pandas", "matplotlib.pyplot"}));
  EXPECT_EQ(c.zygote_max_forks, 10000);
  EXPECT_EQ(c.zygote_max_age_s, 600);
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_ENGINE", "zygote"},
                            {"MCP_EXEC_ZYGOTE_MAX_FORKS", "5"},
                            {"MCP_EXEC_ZYGOTE_MAX_AGE_S", "30"}}),
                       c)
                  .ok());
  EXPECT_EQ(c.engine, EngineKind::kZygote);
  EXPECT_EQ(c.zygote_max_forks, 5);
  EXPECT_EQ(c.zygote_max_age_s, 30);
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_ENGINE", "pool"},
                            {"MCP_EXEC_POOL_SIZE", "8"},
                            {"MCP_EXEC_PRELOAD", " scipy.stats ,_private,numpy2 "}}),
                       c)
                  .ok());
  EXPECT_EQ(c.engine, EngineKind::kPool);
  EXPECT_EQ(c.pool_size, 8);
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_ENGINE", "auto"}}), c).ok());
  EXPECT_EQ(c.engine, EngineKind::kAuto);
  EXPECT_EQ(c.preload, (std::vector<std::string>{"scipy.stats", "_private", "numpy2"}));
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_PRELOAD", ""}}), c).ok());
  EXPECT_TRUE(c.preload.empty()) << "an empty list preloads nothing";

  for (const auto& [name, bad] : std::vector<std::pair<std::string, std::string>>{
           {"MCP_EXEC_ENGINE", "warm"},
           {"MCP_EXEC_ENGINE", ""},
           {"MCP_EXEC_POOL_SIZE", "0"},
           {"MCP_EXEC_POOL_SIZE", "65"},
           {"MCP_EXEC_ZYGOTE_MAX_FORKS", "0"},
           {"MCP_EXEC_ZYGOTE_MAX_AGE_S", "0"},
           {"MCP_EXEC_ZYGOTE_MAX_AGE_S", "86401"},
           {"MCP_EXEC_PRELOAD", "numpy,,pandas"},
           {"MCP_EXEC_PRELOAD", "numpy,"},
           {"MCP_EXEC_PRELOAD", "os; import socket"},
           {"MCP_EXEC_PRELOAD", "1numpy"},
           {"MCP_EXEC_PRELOAD", "numpy."},
           {"MCP_EXEC_PRELOAD", ".numpy"},
           {"MCP_EXEC_PRELOAD", "a..b"},
           {"MCP_EXEC_PRELOAD", "a b"}}) {
    auto r = ApplyEnv(Env({{name, bad}}), c);
    ASSERT_FALSE(r.ok()) << name << "=" << bad;
    EXPECT_EQ(r.error().message.find(name + ": "), 0u) << r.error().message;
  }
}

// MCP_EXEC_POOL_MAX: unset, 8 or the pool's size if larger; set, at least the pool's size.
TEST(Config, PoolMaxFollowsThePoolSizeUnlessSetAndIsNeverBelowIt) {
  Config c = Defaults("/r");
  EXPECT_EQ(c.pool_max, 0);
  EXPECT_EQ(PoolMax(c), 8);
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_POOL_SIZE", "12"}}), c).ok());
  EXPECT_EQ(PoolMax(c), 12);
  EXPECT_TRUE(Validate(c).ok());
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_POOL_MAX", "20"}}), c).ok());
  EXPECT_EQ(PoolMax(c), 20);
  EXPECT_TRUE(Validate(c).ok());
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_POOL_MAX", "4"}}), c).ok());
  auto r = Validate(c);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message,
              HasSubstr("MCP_EXEC_POOL_MAX (4) is below MCP_EXEC_POOL_SIZE (12)"));
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_POOL_MAX", "12"}}), c).ok());
  EXPECT_TRUE(Validate(c).ok()) << "as many as the size is allowed";
  for (const char* bad : {"0", "65", "x"}) {
    Config d = Defaults("/r");
    auto e = ApplyEnv(Env({{"MCP_EXEC_POOL_MAX", bad}}), d);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_THAT(e.error().message, HasSubstr("MCP_EXEC_POOL_MAX")) << bad;
  }
}

TEST(Config, EnvironmentVariablesHaveTheirDefaultsAndParse) {
  Config c = Defaults("/r");
  EXPECT_TRUE(c.environments.empty()) << "unset: default and every built image";
  EXPECT_EQ(c.default_environment, "default");
  EXPECT_EQ(c.environments_dir, "");
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_ENVIRONMENTS", " default , data,x-1_2 "},
                            {"MCP_EXEC_DEFAULT_ENVIRONMENT", "data"},
                            {"MCP_EXEC_ENVIRONMENTS_DIR", "/srv/envs"}}),
                       c)
                  .ok());
  EXPECT_EQ(c.environments, (std::vector<std::string>{"default", "data", "x-1_2"}));
  EXPECT_EQ(c.default_environment, "data");
  EXPECT_EQ(c.environments_dir, "/srv/envs");
  EXPECT_TRUE(Validate(c).ok());
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_ENVIRONMENTS", ""}}), c).ok());
  EXPECT_TRUE(c.environments.empty());

  for (const std::string& bad : std::vector<std::string>{"data,,x", "data,", "Data", "-x", "a b", "x/y", "data,data",
                                 std::string(33, 'a')}) {
    auto r = ApplyEnv(Env({{"MCP_EXEC_ENVIRONMENTS", bad}}), c);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.find("MCP_EXEC_ENVIRONMENTS: "), 0u) << r.error().message;
  }
  EXPECT_TRUE(IsEnvironmentName(std::string(32, 'a')));
  EXPECT_TRUE(IsEnvironmentName("0"));
  EXPECT_FALSE(IsEnvironmentName("_x"));
}

// MCP_EXEC_ENVIRONMENT_IDLE_S: seconds, 0 (never) to a day, 600 by default.
TEST(Config, EnvironmentIdleHasItsDefaultAndParses) {
  Config c = Defaults("/r");
  EXPECT_EQ(c.environment_idle_s, 600);
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_ENVIRONMENT_IDLE_S", "0"}}), c).ok());
  EXPECT_EQ(c.environment_idle_s, 0) << "0: never released";
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_ENVIRONMENT_IDLE_S", "86400"}}), c).ok());
  EXPECT_EQ(c.environment_idle_s, 86400);
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_ENVIRONMENT_IDLE_S", "1"}}), c).ok());
  EXPECT_EQ(c.environment_idle_s, 1);
  EXPECT_TRUE(Validate(c).ok());
  for (const char* bad : {"-1", "86401", "", "10s", "1.5", "ten"}) {
    auto r = ApplyEnv(Env({{"MCP_EXEC_ENVIRONMENT_IDLE_S", bad}}), c);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.find("MCP_EXEC_ENVIRONMENT_IDLE_S: "), 0u) << r.error().message;
  }
  EXPECT_EQ(c.environment_idle_s, 1) << "a refused value must not be stored";
}

TEST(Config, TheDefaultEnvironmentMustBeANameAndAmongThoseListed) {
  Config c = Defaults("/r");
  c.default_environment = "Data";
  EXPECT_THAT(Validate(c).error().message,
              HasSubstr("MCP_EXEC_DEFAULT_ENVIRONMENT: \"Data\" is not an environment name"));
  c.default_environment = "data";
  EXPECT_TRUE(Validate(c).ok()) << "unlisted: whether it is built is known at start";
  c.environments = {"default", "gpu"};
  EXPECT_THAT(Validate(c).error().message,
              HasSubstr("the default environment \"data\" (MCP_EXEC_DEFAULT_ENVIRONMENT) is not "
                        "one of MCP_EXEC_ENVIRONMENTS"));
  c.environments = {"default", "data"};
  EXPECT_TRUE(Validate(c).ok());
}

TEST(Config, TimeoutIsClampedToOneAndTheMaximum) {
  Config c = Defaults("/r");
  EXPECT_EQ(EffectiveTimeoutSeconds(c, std::nullopt), 30);
  EXPECT_EQ(EffectiveTimeoutSeconds(c, 0), 1);
  EXPECT_EQ(EffectiveTimeoutSeconds(c, -7), 1);
  EXPECT_EQ(EffectiveTimeoutSeconds(c, 299), 299);
  EXPECT_EQ(EffectiveTimeoutSeconds(c, 100000), 300);
}

using ::testing::AllOf;
using ::testing::Not;

TEST(Config, AuthVariablesParse) {
  Config c = Defaults("/r");
  EXPECT_TRUE(c.auth_token_file.empty());
  EXPECT_FALSE(c.allow_unauthenticated);
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_AUTH_TOKEN_FILE", "/run/credentials/token"},
                            {"MCP_EXEC_ALLOW_UNAUTHENTICATED", "1"}}),
                       c)
                  .ok());
  EXPECT_EQ(c.auth_token_file, "/run/credentials/token");
  EXPECT_TRUE(c.allow_unauthenticated);
  for (const char* off : {"0", ""}) {
    ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_ALLOW_UNAUTHENTICATED", off}}), c).ok());
    EXPECT_FALSE(c.allow_unauthenticated) << "'" << off << "'";
  }
  EXPECT_THAT(ApplyEnv(Env({{"MCP_EXEC_ALLOW_UNAUTHENTICATED", "true"}}), c).error().message,
              AllOf(HasSubstr("MCP_EXEC_ALLOW_UNAUTHENTICATED"), HasSubstr("1 or 0")));
}

TEST(Config, MetricsAuthIsTokenOrNone) {
  Config c = Defaults("/r");
  EXPECT_EQ(c.metrics_auth, MetricsAuth::kToken);
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_METRICS_AUTH", "none"}}), c).ok());
  EXPECT_EQ(c.metrics_auth, MetricsAuth::kNone);
  ASSERT_TRUE(ApplyEnv(Env({{"MCP_EXEC_METRICS_AUTH", "token"}}), c).ok());
  EXPECT_EQ(c.metrics_auth, MetricsAuth::kToken);
  EXPECT_THAT(ApplyEnv(Env({{"MCP_EXEC_METRICS_AUTH", "off"}}), c).error().message,
              AllOf(HasSubstr("MCP_EXEC_METRICS_AUTH"), HasSubstr("token, none")));
}

// A token file written with `content` and then given `mode`.
class TokenFile {
 public:
  TokenFile(const std::string& content, mode_t mode) : path_(dir_.Path() + "/token") {
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, content.data(), content.size()) != ssize_t(content.size()) ||
        fchmod(fd, mode) != 0 || close(fd) != 0) {
      std::abort();
    }
  }
  const std::string& Path() const { return path_; }

 private:
  testing::TempDir dir_;
  std::string path_;
};

Result<std::string> LoadFrom(const std::string& path) {
  Config c = Defaults("/r");
  c.auth_token_file = path;
  MCPEXEC_RETURN_IF_ERROR(LoadAuthToken(c));
  return c.auth_token;
}

TEST(AuthTokenFile, NoFileLeavesTheTokenAlone) {
  Config c = Defaults("/r");
  c.auth_token = "direct";
  ASSERT_TRUE(LoadAuthToken(c).ok());
  EXPECT_EQ(c.auth_token, "direct");
}

TEST(AuthTokenFile, OneTrailingNewlineIsStripped) {
  EXPECT_EQ(*LoadFrom(TokenFile("s3cret", 0600).Path()), "s3cret");
  EXPECT_EQ(*LoadFrom(TokenFile("s3cret\n", 0600).Path()), "s3cret");
  EXPECT_EQ(*LoadFrom(TokenFile("s3cret\r\n", 0400).Path()), "s3cret");
  EXPECT_EQ(*LoadFrom(TokenFile(" with spaces inside ", 0600).Path()), " with spaces inside ");
  // Only one: a second line break is a control character inside the token.
  EXPECT_THAT(LoadFrom(TokenFile("s3cret\n\n", 0600).Path()).error().message,
              HasSubstr("control character"));
  EXPECT_THAT(LoadFrom(TokenFile("two\nlines\n", 0600).Path()).error().message,
              HasSubstr("control character"));
}

TEST(AuthTokenFile, ModeAndOwnerRule) {
  for (const mode_t mode : {0600, 0400, 0200}) {
    EXPECT_EQ(TokenFileModeProblem(S_IFREG | mode, 1000), "") << std::oct << mode;
    EXPECT_EQ(TokenFileModeProblem(S_IFREG | mode, 0), "") << std::oct << mode;
  }
  // A group may read a root-owned file (a secret provisioned by root for a service's group).
  EXPECT_EQ(TokenFileModeProblem(S_IFREG | 0640, 0), "");
  EXPECT_EQ(TokenFileModeProblem(S_IFREG | 0440, 0), "");
  EXPECT_THAT(TokenFileModeProblem(S_IFREG | 0640, 1000),
              AllOf(HasSubstr("has mode 0640"), HasSubstr("its group"), HasSubstr("chmod 600")));
  for (const mode_t mode : {0620, 0610, 0660}) {
    EXPECT_THAT(TokenFileModeProblem(S_IFREG | mode, 0), HasSubstr("its group")) << std::oct << mode;
  }
  for (const mode_t mode : {0604, 0602, 0601, 0644, 0444, 0666}) {
    EXPECT_THAT(TokenFileModeProblem(S_IFREG | mode, 0), HasSubstr("others")) << std::oct << mode;
    EXPECT_THAT(TokenFileModeProblem(S_IFREG | mode, 1000), HasSubstr("others"))
        << std::oct << mode;
  }
}

TEST(AuthTokenFile, AFileOthersCanReadIsRefusedWithoutShowingTheToken) {
  TokenFile file("s3cret-token-value\n", 0644);
  auto r = LoadFrom(file.Path());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message,
              AllOf(HasSubstr(file.Path()), HasSubstr("MCP_EXEC_AUTH_TOKEN_FILE"),
                    HasSubstr("has mode 0644"), HasSubstr("chmod 600"),
                    Not(HasSubstr("s3cret-token-value"))));
}

TEST(AuthTokenFile, MissingEmptyOversizedOrNotAFileIsRefused) {
  testing::TempDir dir;
  EXPECT_THAT(LoadFrom(dir.Path() + "/missing").error().message,
              AllOf(HasSubstr(dir.Path() + "/missing"), HasSubstr("MCP_EXEC_AUTH_TOKEN_FILE"),
                    HasSubstr("ENOENT")));
  EXPECT_THAT(LoadFrom(TokenFile("", 0600).Path()).error().message, HasSubstr("is empty"));
  EXPECT_THAT(LoadFrom(TokenFile("\n", 0600).Path()).error().message, HasSubstr("is empty"));
  EXPECT_THAT(LoadFrom(TokenFile(std::string(kMaxAuthTokenBytes + 1, 'x'), 0600).Path())
                  .error()
                  .message,
              HasSubstr("larger than 4096 bytes"));
  EXPECT_TRUE(LoadFrom(TokenFile(std::string(kMaxAuthTokenBytes, 'x') + "\n", 0600).Path()).ok());
  ASSERT_EQ(chmod(dir.Path().c_str(), 0700), 0);
  EXPECT_THAT(LoadFrom(dir.Path()).error().message, HasSubstr("not a regular file or a pipe"));
}

TEST(AuthTokenFile, APipeIsReadOnce) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  ASSERT_EQ(write(fds[1], "from-a-pipe\n", 12), 12);
  close(fds[1]);
  EXPECT_EQ(*LoadFrom("/dev/fd/" + std::to_string(fds[0])), "from-a-pipe");
  close(fds[0]);
}

TEST(AuthTokenFile, ATokenGivenBothWaysIsAnError) {
  TokenFile file("tok-in-file-4711\n", 0600);
  Config c = Defaults("/r");
  c.auth_token = "tok-direct-0815";
  c.auth_token_file = file.Path();
  auto r = LoadAuthToken(c);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message,
              AllOf(HasSubstr("given twice"), HasSubstr("MCP_EXEC_AUTH_TOKEN "),
                    HasSubstr("MCP_EXEC_AUTH_TOKEN_FILE"), Not(HasSubstr("tok-direct-0815")),
                    Not(HasSubstr("tok-in-file-4711"))));
}

}  // namespace
}  // namespace mcpexec::config
