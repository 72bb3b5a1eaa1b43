// SandboxTest: the fixture of every sandbox behaviour test, parameterized over the two ways
// the binary runs (as the caller, and as an unprivileged user). A mode that cannot run on this
// host fails its tests with the reason; nothing is skipped.
#pragma once

#include <gtest/gtest.h>

#include "sandbox_runner.h"

namespace mcpexec::testing {

class SandboxTest : public ::testing::TestWithParam<RunMode> {
 protected:
  SandboxTest() : runner_(GetParam()) {}

  void SetUp() override {
    ASSERT_EQ(runner_.Problem(), "") << "cannot run the " << ModeName(GetParam())
                                     << " mode here";
  }

  SandboxRunner runner_;
};

inline std::string ModeParamName(const ::testing::TestParamInfo<RunMode>& info) {
  return ModeName(info.param);
}

}  // namespace mcpexec::testing

// Instantiates `suite` (a SandboxTest subclass) once per mode: Suite.Test/Caller and
// Suite.Test/Unprivileged.
#define MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(suite)                                       \
  INSTANTIATE_TEST_SUITE_P(, suite,                                                     \
                           ::testing::Values(::mcpexec::testing::RunMode::kCaller,      \
                                             ::mcpexec::testing::RunMode::kUnprivileged), \
                           ::mcpexec::testing::ModeParamName)
