// Environments: what an image's metadata says, and which images a server offers.
#include "exec/environments.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace mcpexec::exec {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A directory with a `rootfs` and an `environments` beside it, removed at the end.
class EnvironmentsTest : public ::testing::Test {
 protected:
  EnvironmentsTest() {
    char tmpl[] = "/tmp/mcp-exec-envs-XXXXXX";
    dir_ = mkdtemp(tmpl);
    fs::create_directories(dir_ + "/rootfs");
    config_ = config::Defaults(dir_ + "/rootfs");
  }
  ~EnvironmentsTest() override { fs::remove_all(dir_); }

  // An image `name` under environments/, with metadata that says so.
  std::string AddImage(const std::string& name, const std::string& packages_json =
                                                    R"([{"name":"numpy","version":"1.24.2"}])") {
    const std::string image = dir_ + "/environments/" + name;
    WriteMetadata(image, name, packages_json);
    return image;
  }

  static void WriteMetadata(const std::string& image, const std::string& name,
                            const std::string& packages_json) {
    const std::string meta = image + kEnvironmentMetadataDir;
    fs::create_directories(meta);
    std::ofstream(meta + "/name") << name << "\n";
    std::ofstream(meta + "/hash") << "0123456789abcdef\n";
    std::ofstream(meta + "/packages.json") << packages_json;
    std::ofstream(meta + "/preload.txt") << "# the heavy ones\nnumpy\n\nscipy.optimize\n";
    std::ofstream(meta + "/env.txt") << "# none but one\nOMP_NUM_THREADS=1\n";
  }

  Result<Offer> Discover() {
    warnings_.clear();
    return DiscoverEnvironments(config_, warnings_);
  }

  std::string dir_;
  config::Config config_;
  std::vector<std::string> warnings_;
};

TEST(EnvironmentMetadata, PackagesAreNamesWithVersions) {
  auto packages = ParsePackages(R"([{"name":"numpy","version":"1.24.2"},
                                    {"name":"scipy","version":"1.10.1","extra":1}])");
  ASSERT_TRUE(packages.ok()) << packages.error().message;
  EXPECT_THAT(*packages, ElementsAre(Package{"numpy", "1.24.2"}, Package{"scipy", "1.10.1"}));
  EXPECT_THAT(*ParsePackages("[]"), IsEmpty());
  EXPECT_THAT(ParsePackages("{}").error().message, HasSubstr("not a JSON array"));
  EXPECT_THAT(ParsePackages("[1").error().message, HasSubstr("not a JSON array"));
  EXPECT_THAT(ParsePackages(R"([{"name":"x"}])").error().message, HasSubstr("entry 0"));
  EXPECT_THAT(ParsePackages(R"([{"name":"x","version":""}])").error().message,
              HasSubstr("entry 0"));
  EXPECT_THAT(ParsePackages(R"([{"name":"x","version":"1"},"y"])").error().message,
              HasSubstr("entry 1"));
}

TEST(EnvironmentMetadata, PreloadIsOneModuleALine) {
  auto modules = ParsePreload("# comment\nnumpy\n  matplotlib.pyplot  \r\n\n");
  ASSERT_TRUE(modules.ok()) << modules.error().message;
  EXPECT_THAT(*modules, ElementsAre("numpy", "matplotlib.pyplot"));
  EXPECT_THAT(*ParsePreload(""), IsEmpty());
  EXPECT_THAT(ParsePreload("numpy\nnot-a-module\n").error().message,
              HasSubstr("line 2: \"not-a-module\" is not one module name"));
  EXPECT_THAT(ParsePreload("numpy, scipy\n").error().message, HasSubstr("line 1"));
}

TEST(EnvironmentMetadata, EnvFileIsKeyValueLinesTheSandboxAccepts) {
  auto vars = ParseEnvFile("# c\nOMP_NUM_THREADS=1\nEMPTY=\nURL=a=b\n");
  ASSERT_TRUE(vars.ok()) << vars.error().message;
  EXPECT_THAT(*vars, ElementsAre("OMP_NUM_THREADS=1", "EMPTY=", "URL=a=b"));
  EXPECT_THAT(*ParseEnvFile(""), IsEmpty());
  EXPECT_THAT(ParseEnvFile("A=1\nMPLBACKEND=Agg\n").error().message,
              AllOf(HasSubstr("line 2"), HasSubstr("set by mcp-exec itself")));
  EXPECT_THAT(ParseEnvFile("PYTHONPATH=/x\n").error().message, HasSubstr("set by mcp-exec"));
  EXPECT_THAT(ParseEnvFile("JUSTAWORD\n").error().message, HasSubstr("is not KEY=VALUE"));
  EXPECT_THAT(ParseEnvFile(std::string("A=x\0y\n", 6)).error().message, HasSubstr("NUL"));
}

TEST_F(EnvironmentsTest, TheDirectoryIsBesideTheRootfsAsConfigured) {
  config_.rootfs = "/var/lib/mcp-exec/rootfs";
  EXPECT_EQ(EnvironmentsDir(config_), "/var/lib/mcp-exec/environments");
  config_.rootfs = "build/rootfs/";
  EXPECT_EQ(EnvironmentsDir(config_), "build/environments");
  config_.rootfs = "rootfs";
  EXPECT_EQ(EnvironmentsDir(config_), "environments");
  config_.environments_dir = "/srv/images";
  EXPECT_EQ(EnvironmentsDir(config_), "/srv/images");
}

TEST_F(EnvironmentsTest, AnImageIsReadFromItsMetadata) {
  const std::string image = AddImage("data");
  auto env = ReadEnvironment("data", image, config_);
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_TRUE(env->has_metadata);
  EXPECT_EQ(env->image, image);
  EXPECT_EQ(env->hash, "0123456789abcdef");
  EXPECT_THAT(env->packages, ElementsAre(Package{"numpy", "1.24.2"}));
  EXPECT_THAT(env->preload, ElementsAre("numpy", "scipy.optimize"));
  EXPECT_THAT(env->env, ElementsAre("OMP_NUM_THREADS=1"));
}

// "default" keeps MCP_EXEC_PRELOAD whatever its image's preload.txt says, and may predate
// the metadata.
TEST_F(EnvironmentsTest, TheDefaultKeepsTheConfiguredPreloadAndMayLackMetadata) {
  config_.preload = {"decimal"};
  auto bare = ReadEnvironment("default", config_.rootfs, config_);
  ASSERT_TRUE(bare.ok()) << bare.error().message;
  EXPECT_FALSE(bare->has_metadata);
  EXPECT_THAT(bare->packages, IsEmpty());
  EXPECT_THAT(bare->preload, ElementsAre("decimal"));
  WriteMetadata(config_.rootfs, "default", R"([{"name":"numpy","version":"1"}])");
  auto described = ReadEnvironment("default", config_.rootfs, config_);
  ASSERT_TRUE(described.ok()) << described.error().message;
  EXPECT_TRUE(described->has_metadata);
  EXPECT_THAT(described->preload, ElementsAre("decimal"));
  EXPECT_THAT(described->env, ElementsAre("OMP_NUM_THREADS=1"));
}

TEST_F(EnvironmentsTest, AnImageWithoutGoodMetadataIsRefusedNamingTheFile) {
  EXPECT_EQ(ReadEnvironment("x", dir_ + "/environments/x", config_).error().code,
            ErrorCode::kNotFound);
  fs::create_directories(dir_ + "/environments/bare");
  EXPECT_THAT(ReadEnvironment("bare", dir_ + "/environments/bare", config_).error().message,
              HasSubstr("has no /usr/share/mcp-exec/environment"));
  const std::string misnamed = AddImage("misnamed");
  EXPECT_TRUE(ReadEnvironment("misnamed", misnamed, config_).ok());
  std::ofstream(misnamed + kEnvironmentMetadataDir + "/name") << "other\n";
  EXPECT_THAT(ReadEnvironment("misnamed", misnamed, config_).error().message,
              AllOf(HasSubstr("/name"), HasSubstr("says \"other\"")));
  const std::string broken = AddImage("broken", "not json");
  EXPECT_THAT(ReadEnvironment("broken", broken, config_).error().message,
              AllOf(HasSubstr("packages.json"), HasSubstr(broken)));
  const std::string unhashed = AddImage("unhashed");
  fs::remove(unhashed + kEnvironmentMetadataDir + "/hash");
  EXPECT_THAT(ReadEnvironment("unhashed", unhashed, config_).error().message,
              HasSubstr("cannot read " + unhashed + kEnvironmentMetadataDir + "/hash"));
}

TEST_F(EnvironmentsTest, UnsetTheServerOffersDefaultAndEveryBuiltImage) {
  auto none = Discover();
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_THAT(none->Names(), ElementsAre("default"));
  AddImage("zeta");
  AddImage("data");
  fs::create_directories(dir_ + "/environments/Not_A_Name");
  fs::create_directories(dir_ + "/environments/halfway");  // no metadata
  auto offer = Discover();
  ASSERT_TRUE(offer.ok()) << offer.error().message;
  EXPECT_THAT(offer->Names(), ElementsAre("default", "data", "zeta"));
  EXPECT_EQ(offer->default_name, "default");
  EXPECT_EQ(offer->NameList(), "default, data, zeta");
  ASSERT_EQ(warnings_.size(), 2u);
  EXPECT_THAT(warnings_, ::testing::Contains(AllOf(HasSubstr("Not_A_Name"),
                                                   HasSubstr("not an environment name"))));
  EXPECT_THAT(warnings_, ::testing::Contains(
                             AllOf(HasSubstr("\"halfway\" is not offered"),
                                   HasSubstr("tools/build-rootfs --environment halfway"))));
}

TEST_F(EnvironmentsTest, AListedImageThatIsMissingIsNotOfferedWithAWarning) {
  AddImage("data");
  config_.environments = {"data", "gpu", "default"};
  auto offer = Discover();
  ASSERT_TRUE(offer.ok()) << offer.error().message;
  EXPECT_THAT(offer->Names(), ElementsAre("data", "default"));
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_THAT(warnings_[0], AllOf(HasSubstr("\"gpu\" is not offered"),
                                  HasSubstr(dir_ + "/environments/gpu is not built"),
                                  HasSubstr("`mcp-exec env build gpu`"),
                                  HasSubstr("tools/build-rootfs --environment gpu")));
}

TEST_F(EnvironmentsTest, TheDefaultEnvironmentMustBeOffered) {
  config_.environments = {"default", "gpu"};
  config_.default_environment = "gpu";
  auto offer = Discover();
  ASSERT_FALSE(offer.ok());
  EXPECT_THAT(offer.error().message,
              AllOf(HasSubstr("default environment \"gpu\" (MCP_EXEC_DEFAULT_ENVIRONMENT) is not "
                              "offered (offered: default)"),
                    HasSubstr("tools/build-rootfs --environment gpu")));
  AddImage("gpu");
  auto now = Discover();
  ASSERT_TRUE(now.ok()) << now.error().message;
  EXPECT_EQ(now->default_name, "gpu");
  EXPECT_EQ(now->Find("gpu")->image, dir_ + "/environments/gpu");
  EXPECT_EQ(now->Find("other"), nullptr);
}

TEST_F(EnvironmentsTest, MalformedMetadataInTheDefaultStopsTheServer) {
  WriteMetadata(config_.rootfs, "default", "{}");
  auto offer = Discover();
  ASSERT_FALSE(offer.ok());
  EXPECT_THAT(offer.error().message,
              AllOf(HasSubstr("\"default\" (MCP_EXEC_ROOTFS)"), HasSubstr("packages.json")));
}

TEST_F(EnvironmentsTest, TheDirectoryCanBeNamed) {
  const std::string elsewhere = dir_ + "/elsewhere";
  WriteMetadata(elsewhere + "/data", "data", "[]");
  config_.environments_dir = elsewhere;
  auto offer = Discover();
  ASSERT_TRUE(offer.ok()) << offer.error().message;
  EXPECT_THAT(offer->Names(), ElementsAre("default", "data"));
}

}  // namespace
}  // namespace mcpexec::exec
