// main() of the test programs that launch real sandboxes (integration, adversarial): HostSetup
// runs once around all tests (test user, binary copy, rootfs check) and cleans up after them.
#include <gtest/gtest.h>

#include "../support/sandbox_runner.h"

namespace {

class HostEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { mcpexec::testing::HostSetup::Get().SetUp(); }
  void TearDown() override { mcpexec::testing::HostSetup::Get().TearDown(); }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new HostEnvironment);
  return RUN_ALL_TESTS();
}
