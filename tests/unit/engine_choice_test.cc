#include "exec/engine_choice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace mcpexec::exec {
namespace {

using ::testing::ElementsAre;

// A host on which each engine either starts (its name comes back) or fails with `failures`.
struct Host {
  std::map<std::string, Error> failures;
  std::vector<std::string> tried = {};

  Result<std::string> Choose(std::vector<PassedOver>& passed_over) {
    return ChooseAuto<std::string>(
        [&](const char* name) -> Result<std::string> {
          tried.push_back(name);
          if (auto f = failures.find(name); f != failures.end()) return f->second;
          return std::string(name);
        },
        passed_over);
  }
};

Error HostError(const char* what) { return MakeError(ErrorCode::kUnavailable, what); }

TEST(EngineChoice, TheZygoteWhereItStartsAndNothingElseIsTried) {
  Host host;
  std::vector<PassedOver> passed_over;
  auto chosen = host.Choose(passed_over);
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(*chosen, "zygote");
  EXPECT_THAT(host.tried, ElementsAre("zygote"));
  EXPECT_TRUE(passed_over.empty());
}

TEST(EngineChoice, ThePoolWhenTheZygoteDoesNotStartWithWhy) {
  Host host{{{"zygote", HostError("no nested user namespace")}}};
  std::vector<PassedOver> passed_over;
  auto chosen = host.Choose(passed_over);
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(*chosen, "pool");
  EXPECT_THAT(host.tried, ElementsAre("zygote", "pool"));
  ASSERT_EQ(passed_over.size(), 1u);
  EXPECT_EQ(passed_over[0].engine, "zygote");
  EXPECT_EQ(passed_over[0].error.message, "no nested user namespace");
}

TEST(EngineChoice, ColdWhenNoWarmEngineStarts) {
  Host host{{{"zygote", HostError("a")}, {"pool", HostError("b")}}};
  std::vector<PassedOver> passed_over;
  auto chosen = host.Choose(passed_over);
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(*chosen, "cold");
  EXPECT_THAT(host.tried, ElementsAre("zygote", "pool", "cold"));
  EXPECT_EQ(passed_over.size(), 2u);
}

TEST(EngineChoice, APreloadThatCannotBeImportedIsAnErrorNotASlowerEngine) {
  Host host{{{"zygote", MakeError(ErrorCode::kInvalidArgument, "import numpyx")}}};
  std::vector<PassedOver> passed_over;
  auto chosen = host.Choose(passed_over);
  ASSERT_FALSE(chosen.ok());
  EXPECT_EQ(chosen.error().message, "import numpyx");
  EXPECT_THAT(host.tried, ElementsAre("zygote"));
}

TEST(EngineChoice, ColdFailingIsTheChoicesError) {
  Host host{{{"zygote", HostError("a")}, {"pool", HostError("b")}, {"cold", HostError("c")}}};
  std::vector<PassedOver> passed_over;
  auto chosen = host.Choose(passed_over);
  ASSERT_FALSE(chosen.ok());
  EXPECT_EQ(chosen.error().message, "c");
}

}  // namespace
}  // namespace mcpexec::exec
