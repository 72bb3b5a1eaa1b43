// The built-in seccomp filter: seccomp-profiles/default.json, compiled to BPF for this host by
// tools/seccomp-bpf-gen when the binary is built.
#include "default_seccomp_program.h"
#include "sandbox/seccomp_filter.h"
#include "sandbox/spec.h"

namespace mcpexec::sandbox {

Result<SeccompFilter> FilterForProfile(const std::string& profile) {
  if (profile == kSeccompDefault) {
    return SeccompFilter::FromInstructions(
        kDefaultSeccompProgram, sizeof kDefaultSeccompProgram / sizeof kDefaultSeccompProgram[0],
        "built-in profile seccomp-profiles/default.json, compiled at build time");
  }
  return LoadSeccompFilter(profile);
}

}  // namespace mcpexec::sandbox
