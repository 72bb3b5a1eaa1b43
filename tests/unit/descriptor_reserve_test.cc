#include "cli/descriptor_reserve.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace mcpexec::cli {
namespace {

using config::EngineKind;
using limits::Backend;

// The defaults on a 2-CPU host: 2 runs at once, 8 sessions, 2 ready (8 after a burst), auto.
config::Config TwoCpuDefaults() {
  config::Config c = config::Defaults("/rootfs");
  c.max_concurrency = 2;
  return c;
}

// What one more of something costs: the reserve with `change` made, less the reserve without.
long long Cost(const std::function<void(config::Config&)>& change, Backend backend,
               size_t environments = 1) {
  config::Config c = TwoCpuDefaults();
  const auto before = static_cast<long long>(DescriptorReserve(c, environments, backend));
  change(c);
  return static_cast<long long>(DescriptorReserve(c, environments, backend)) - before;
}

// The figures themselves, so that a change of a per-unit count shows up here and in the docs
// (docs/deploy.md quotes them): base 32, 2 runs (each with its output walk), 66 calls (2
// running, 64 queued), 8 sessions (each keeping a zygote), one zygote engine (2 zygotes, 8
// ready, one being made) and the teardown's 64 remains.
TEST(DescriptorReserve, DefaultsOnTwoCpusPerBackend) {
  const config::Config c = TwoCpuDefaults();
  // 32 + 2 x (24 + 35) + 66 x 1 + 8 x (16 + 10) + (8 x 10 + 59 + 2 x 10) + 64 x 1
  EXPECT_EQ(DescriptorReserve(c, 1, Backend::kRlimit), 647u);
  // Every sandbox adds its 5 cgroup files, a starting one on cgroup v1 its 4 join files too;
  // a finished run's remains hold none (RunCgroup::CloseFiles):
  // 32 + 2 x 68 + 66 x 1 + 8 x (21 + 15) + (8 x 15 + 68 + 2 x 15) + 64 x 1
  EXPECT_EQ(DescriptorReserve(c, 1, Backend::kCgroup1), 804u);
  EXPECT_EQ(DescriptorReserve(c, 1, Backend::kCgroup2), 792u);
}

// The container of docs/deploy.md runs with --ulimit nofile=1024:1024 and the rlimit backend:
// with `default` and `data` offered, the defaults must leave some 200 descriptors for
// connections (50 served at once).
TEST(DescriptorReserve, TheContainersDefaultsLeaveRoomForConnectionsUnder1024) {
  EXPECT_LE(DescriptorReserve(TwoCpuDefaults(), 2, Backend::kRlimit), 1024u - 200u);
}

TEST(DescriptorReserve, EachSessionRunAndReadySandboxCountsWithItsCgroup) {
  auto session = [](config::Config& c) { ++c.max_sessions; };
  auto run = [](config::Config& c) { ++c.max_concurrency; };
  auto ready = [](config::Config& c) { c.pool_max = config::PoolMax(c) + 1; };
  EXPECT_EQ(Cost(session, Backend::kRlimit), 16 + 10) << "with the zygote it keeps";
  EXPECT_EQ(Cost(session, Backend::kCgroup1), 21 + 15);
  EXPECT_EQ(Cost(run, Backend::kRlimit), 24 + 35 + 1) << "its output walk and its call";
  EXPECT_EQ(Cost(run, Backend::kCgroup1), 68 + 1) << "a starting run joins through 4 tasks files";
  EXPECT_EQ(Cost(run, Backend::kCgroup2), 64 + 1);
  auto queued = [](config::Config& c) { ++c.max_queue; };
  EXPECT_EQ(Cost(queued, Backend::kCgroup1), 1) << "a queued call's cancel eventfd";
  EXPECT_EQ(Cost(ready, Backend::kRlimit), 10);
  EXPECT_EQ(Cost(ready, Backend::kCgroup1), 15);
  EXPECT_EQ(Cost(ready, Backend::kRlimit, 3), 30) << "each environment has its own pool";
}

TEST(DescriptorReserve, EachEnvironmentHasAnEngineOfItsOwn) {
  const config::Config c = TwoCpuDefaults();
  const size_t one = DescriptorReserve(c, 1, Backend::kCgroup1);
  const size_t engine = 8 * 15 + 68 + 2 * 15;
  EXPECT_EQ(DescriptorReserve(c, 2, Backend::kCgroup1), one + engine);
  EXPECT_EQ(DescriptorReserve(c, 4, Backend::kCgroup1), one + 3 * engine);
  EXPECT_EQ(DescriptorReserve(c, 0, Backend::kCgroup1), one) << "default is always offered";
}

TEST(DescriptorReserve, TheEngineKindDecidesWhatIsHeldReady) {
  config::Config c = TwoCpuDefaults();
  const size_t zygote = DescriptorReserve(c, 2, Backend::kRlimit);
  c.engine = EngineKind::kZygote;
  EXPECT_EQ(DescriptorReserve(c, 2, Backend::kRlimit), zygote) << "auto counts as zygote";
  c.engine = EngineKind::kPool;
  EXPECT_EQ(DescriptorReserve(c, 2, Backend::kRlimit), zygote - 2 * (2 * 10) - 8 * 10)
      << "a pool has no zygotes, and its sessions keep none";
  c.engine = EngineKind::kCold;
  EXPECT_EQ(DescriptorReserve(c, 2, Backend::kRlimit), 32u + 2 * 59 + 66 + 8 * 16 + 64)
      << "a cold engine holds nothing between runs, whatever MCP_EXEC_POOL_MAX says";
  c.max_sessions = 0;
  EXPECT_EQ(DescriptorReserve(c, 2, Backend::kRlimit), 32u + 2 * 59 + 66 + 64);
}

TEST(DescriptorReserve, PackagesAddALayeredSandboxPerPoolSizeToAZygote) {
  auto wheelhouse = [](config::Config& c) { c.wheelhouse = "/wheels"; };
  auto index = [](config::Config& c) { c.package_index = "https://pypi.example/simple"; };
  EXPECT_EQ(Cost(wheelhouse, Backend::kRlimit), 2 * 10);
  EXPECT_EQ(Cost(index, Backend::kCgroup1, 2), 2 * 2 * 15);
  auto pool_with_packages = [](config::Config& c) {
    c.engine = EngineKind::kPool;
    c.wheelhouse = "/wheels";
  };
  auto pool = [](config::Config& c) { c.engine = EngineKind::kPool; };
  EXPECT_EQ(Cost(pool_with_packages, Backend::kRlimit), Cost(pool, Backend::kRlimit))
      << "a pool mounts a layer in a sandbox made for the run, never ahead";
}

TEST(DescriptorReserve, GrowsWithEverySetting) {
  const std::vector<std::function<void(config::Config&)>> growths = {
      [](config::Config& c) { c.max_concurrency *= 2; },
      [](config::Config& c) { c.max_queue *= 2; },
      [](config::Config& c) { c.max_sessions = 1024; },
      [](config::Config& c) { c.pool_max = 64; },
      [](config::Config& c) {
        c.pool_size = 64;
        c.pool_max = 64;
      },
  };
  for (Backend backend : {Backend::kRlimit, Backend::kCgroup1, Backend::kCgroup2}) {
    for (size_t i = 0; i < growths.size(); ++i) {
      EXPECT_GT(Cost(growths[i], backend), 0)
          << "growth " << i << " on " << limits::BackendName(backend);
    }
  }
}

}  // namespace
}  // namespace mcpexec::cli
