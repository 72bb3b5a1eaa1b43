// `mcp-exec env list|show|build` and doctor's environments check (docs/environments.md), as
// root and as the unprivileged user, over a scratch layout: `rootfs` (a link to the test rootfs)
// and beside it `environments/` with an image "x" (its metadata only: listing and showing run no
// sandbox), an image "y" whose metadata disagrees with the tree tools/build-rootfs would have
// named it by (corrupt), and no "data" image.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using nlohmann::json;

void WriteMetadata(const std::string& image, const std::string& name, const std::string& hash,
                   const std::string& packages) {
  const std::string meta = image + "/usr/share/mcp-exec/environment";
  fs::create_directories(meta);
  std::ofstream(meta + "/name") << name << "\n";
  std::ofstream(meta + "/hash") << hash << "\n";
  std::ofstream(meta + "/packages.json") << packages;
  std::ofstream(meta + "/preload.txt") << "only_in_" << name << "\n";
  std::ofstream(meta + "/env.txt") << "MARK=" << name << "\n";
}

class EnvCommandTest : public SandboxTest {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/mcp-exec-test-env-cli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_symlink(HostSetup::Get().Rootfs(), dir_ + "/rootfs");
    WriteMetadata(dir_ + "/environments/x", "x", std::string(64, 'a'),
                  R"([{"name":"only_in_x","version":"0.1"},{"name":"numpy","version":"1.24.2"}])");
    // Named as tools/build-rootfs names a tree of recipe hash 0123..., holding another's.
    const std::string tree = dir_ + "/trees/env-y-0123456789abcdef";
    WriteMetadata(tree, "y", std::string(64, 'f'), "[]");
    fs::create_symlink(tree, dir_ + "/environments/y");
    for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
      if (!entry.is_symlink()) {
        fs::permissions(entry.path(), fs::perms(entry.is_directory() ? 0755 : 0644));
      }
    }
    fs::permissions(dir_, fs::perms(0755));
  }

  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  Outcome Env(std::vector<std::string> args, std::vector<std::string> env = {}) const {
    std::vector<std::string> argv = {runner_.Binary(), "env"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--rootfs", dir_ + "/rootfs"});
    return runner_.RunCommand(argv, WithEnv(std::move(env)));
  }

  // Whether this test's user may run the checkout's rootfs tool. A checkout in a directory only
  // root may enter (a CI's `mktemp -d`) hides it from the unprivileged user, whom `env build`
  // then tells which tool it cannot run, and whose `env list` names the images alone.
  bool ToolReachable() const {
    const std::string tool = std::string(MCPEXEC_ENGINE_TESTS_DIR) + "/../../tools/build-rootfs";
    return runner_.RunCommand({"/bin/sh", "-c", "test -r \"$1\" && test -x \"$1\"", "sh", tool},
                              WithEnv({}))
               .exit_status == 0;
  }

  static json ByName(const json& list, const std::string& name) {
    for (const json& e : list) {
      if (e.value("name", "") == name) return e;
    }
    return json();
  }

  static std::string dir_;
};

std::string EnvCommandTest::dir_;

TEST_P(EnvCommandTest, ListNamesEveryEnvironmentWithItsImageHashAndPackages) {
  const Outcome r = Env({"list", "--json"});
  ASSERT_EQ(r.exit_status, 0) << r.Describe();
  const json list = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(list.is_array()) << r.out;

  const json def = ByName(list, "default");
  EXPECT_EQ(def["offered"], true) << def;
  EXPECT_EQ(def["built"], true) << def;
  EXPECT_EQ(def["image"], dir_ + "/rootfs");
  EXPECT_GT(def["disk_bytes"].get<uint64_t>(), uint64_t{100} << 20) << "the rootfs is 500 MB";

  const json x = ByName(list, "x");
  EXPECT_EQ(x["offered"], true) << x;
  EXPECT_EQ(x["packages"], 2);
  EXPECT_EQ(x["hash"], std::string(64, 'a'));
  EXPECT_EQ(x["image"], dir_ + "/environments/x");
  EXPECT_EQ(x["problem"], "");

  // Built, but not what its tree's name says: never offered.
  const json y = ByName(list, "y");
  EXPECT_EQ(y["offered"], false) << y;
  EXPECT_EQ(y["built"], false) << y;
  EXPECT_THAT(y["problem"].get<std::string>(), HasSubstr("corrupt")) << y;

  // A recipe the rootfs tool knows, with no image here; without the tool, only the images.
  const json data = ByName(list, "data");
  if (ToolReachable()) {
    ASSERT_TRUE(data.is_object()) << r.out;
    EXPECT_EQ(data["offered"], false) << r.out;
    EXPECT_EQ(data["built"], false);
    EXPECT_THAT(data["problem"].get<std::string>(), HasSubstr("is not built"));
  } else {
    EXPECT_TRUE(data.is_null()) << r.out;
  }

  const Outcome table = Env({"list"});
  ASSERT_EQ(table.exit_status, 0) << table.Describe();
  EXPECT_THAT(table.out, HasSubstr("NAME"));
  EXPECT_THAT(table.out, HasSubstr("aaaaaaaaaaaaaaaa"));
}

TEST_P(EnvCommandTest, ShowListsThePackagesWithVersionsAndBadNamesAreRefused) {
  const Outcome r = Env({"show", "x", "--json"});
  ASSERT_EQ(r.exit_status, 0) << r.Describe();
  const json x = json::parse(r.out, nullptr, false);
  EXPECT_EQ(x["packages"], json::parse(R"([{"name":"only_in_x","version":"0.1"},
                                            {"name":"numpy","version":"1.24.2"}])"));
  EXPECT_EQ(x["preload"], json({"only_in_x"}));
  EXPECT_EQ(x["env"], json({"MARK=x"}));

  const Outcome text = Env({"show", "x"});
  ASSERT_EQ(text.exit_status, 0) << text.Describe();
  EXPECT_THAT(text.out, HasSubstr("only_in_x"));
  EXPECT_THAT(text.out, HasSubstr("1.24.2"));

  const Outcome missing = Env({"show", "nope"});
  EXPECT_EQ(missing.exit_status, 1) << missing.Describe();
  EXPECT_THAT(missing.err, HasSubstr("environment \"nope\": its image"));
  EXPECT_THAT(missing.err, HasSubstr("is not built"));

  const Outcome corrupt = Env({"show", "y"});
  EXPECT_EQ(corrupt.exit_status, 1) << corrupt.Describe();
  EXPECT_THAT(corrupt.err, HasSubstr("env-y-0123456789abcdef"));

  const Outcome bad = Env({"show", "Not/A-Name"});
  EXPECT_EQ(bad.exit_status, 2) << bad.Describe();
  EXPECT_THAT(bad.err, HasSubstr("is not an environment name"));
}

// `env build` hands over to the rootfs tool, whose refusal of a recipe it has not is the
// command's own.
TEST_P(EnvCommandTest, BuildRunsTheRootfsToolWhichNamesAnUnknownRecipe) {
  const Outcome r = Env({"build", "nosuchrecipe"});
  EXPECT_EQ(r.exit_status, 1) << r.Describe();
  if (ToolReachable()) {
    EXPECT_THAT(r.err, HasSubstr("unknown environment 'nosuchrecipe'"));
    EXPECT_THAT(r.err, HasSubstr("default"));
  } else {
    EXPECT_THAT(r.err, HasSubstr("cannot run the rootfs tool"));
    EXPECT_THAT(r.err, HasSubstr("tools/build-rootfs: Permission denied"));
  }
}

TEST_P(EnvCommandTest, DoctorNamesTheEnvironmentsItWouldNotOffer) {
  const Outcome r = runner_.RunCommand(
      {runner_.Binary(), "doctor", "--rootfs", dir_ + "/rootfs"},
      WithEnv({"MCP_EXEC_ENVIRONMENTS=default,x,y"}));
  EXPECT_THAT(r.out, HasSubstr("WARN environments: offered: default (the default"));
  EXPECT_THAT(r.out, HasSubstr("x (2 packages)"));
  EXPECT_THAT(r.out, HasSubstr("not offered: "));
  EXPECT_THAT(r.out, HasSubstr("corrupt"));

  const Outcome refused = runner_.RunCommand(
      {runner_.Binary(), "doctor", "--rootfs", dir_ + "/rootfs"},
      WithEnv({"MCP_EXEC_DEFAULT_ENVIRONMENT=y"}));
  EXPECT_EQ(refused.exit_status, 1) << refused.Describe();
  EXPECT_THAT(refused.out, HasSubstr("FAIL environments: the server would not start"));
}

// `run --environment` finds the images where `env` does, beside MCP_EXEC_ROOTFS, and refuses
// what `env list` says is not offered: the corrupt image y is never run.
TEST_P(EnvCommandTest, RunRefusesACorruptOrUnbuiltEnvironment) {
  auto run = [this](const std::string& name) {
    return runner_.RunCommand({runner_.Binary(), "run", "--environment", name, "--code", "1"},
                              WithEnv({"MCP_EXEC_ROOTFS=" + dir_ + "/rootfs"}));
  };
  const Outcome corrupt = run("y");
  EXPECT_EQ(corrupt.exit_status, 125) << corrupt.Describe();
  EXPECT_EQ(corrupt.out, "");
  EXPECT_THAT(corrupt.err, HasSubstr("environment \"y\" is not offered: "));
  EXPECT_THAT(corrupt.err, HasSubstr("the image's tree is env-y-0123456789abcdef: the image is "
                                     "corrupt or was replaced"));
  EXPECT_THAT(corrupt.err, HasSubstr("`mcp-exec env build y` builds it. Offered here: default, x"));

  const Outcome unbuilt = run("data");
  EXPECT_EQ(unbuilt.exit_status, 125) << unbuilt.Describe();
  EXPECT_THAT(unbuilt.err, HasSubstr("environment \"data\" is not offered: its image " + dir_ +
                                     "/environments/data is not built; `mcp-exec env build data` "
                                     "builds it. Offered here: default, x"));
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(EnvCommandTest);

}  // namespace
}  // namespace mcpexec::testing
