// SeccompFilter: a SeccompProfile compiled by libseccomp into the classic-BPF program the
// sandbox child loads with seccomp(SECCOMP_SET_MODE_FILTER) as its last step before execve.
// Compile once at start-up; the program is immutable and shared by every run.
//
// How a profile is applied:
//  - Architecture: only the host's own syscall ABI. The profile's `architectures` / `archMap`
//    (Docker adds x86 and x32 on x86_64) are not used: the sandbox runs 64-bit programs from its
//    own rootfs, and a foreign ABI (int 0x80, x32 syscall numbers) is a way around per-syscall
//    rules, so any call through one kills the process (SIGSYS).
//  - Capabilities: the program runs with none unless `caps` says otherwise, so an entry with
//    `includes.caps` applies only when every listed capability is held, and an entry with
//    `excludes.caps` is dropped when any listed one is held, as in Docker.
//  - `includes.arches` / `excludes.arches` are matched against the host architecture's Go name
//    ("amd64", "arm64") as Docker does, and also its libseccomp name ("x86_64", "aarch64").
//  - `minKernel` is compared with the running kernel's "<major>.<minor>".
//  - A rule whose action is the default action is dropped (libseccomp refuses those).
//  - A syscall name libseccomp does not know, or one that does not exist on this architecture,
//    is skipped and listed in Skipped(); a profile written for other kernels stays usable.
//  - An unconditional rule and another rule with a different action for the same syscall are
//    an error: libseccomp would let the unconditional one win and drop the other in silence.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "sandbox/seccomp_profile.h"

namespace mcpexec::sandbox {

struct SeccompCompileOptions {
  // Capabilities the sandboxed program keeps ("CAP_NET_RAW"). The sandbox drops all of them.
  std::vector<std::string> caps;
  // Kernel version for `minKernel`; nullopt: the running kernel's (uname(2)).
  std::optional<KernelVersion> kernel;
  // Architecture to compile for, an SCMP_ARCH_* token; 0: the host's. A program for another
  // architecture can be inspected but not loaded here (for tests and tools).
  uint32_t arch = 0;
};

// A syscall name of the profile that is not in the filter, and why.
struct SkippedSyscall {
  std::string name;
  std::string where;   // "syscalls[0]"
  std::string reason;  // "unknown to libseccomp 2.5.4", "not a syscall on x86_64"
};

// The compiled program. Move-only; immutable once built, so any number of threads may read it.
class SeccompFilter {
 public:
  SeccompFilter(SeccompFilter&&) noexcept = default;
  SeccompFilter& operator=(SeccompFilter&&) noexcept = default;
  SeccompFilter(const SeccompFilter&) = delete;
  SeccompFilter& operator=(const SeccompFilter&) = delete;
  ~SeccompFilter() = default;

  // The program in the form seccomp(2) takes. The pointer, and the instructions it points to,
  // stay valid and unchanged as long as this object (or the one it is moved into) lives.
  const sock_fprog* Program() const { return &data_->program; }
  const std::vector<sock_filter>& Instructions() const { return data_->instructions; }

  // Names the filter does not contain; the caller logs them (at debug level: expected when a
  // profile lists syscalls of other kernels or architectures).
  const std::vector<SkippedSyscall>& Skipped() const { return data_->skipped; }

  // One line per decision: the default action, each rule added, each entry left out and why.
  // For tests and debugging.
  const std::string& Describe() const { return data_->description; }

  // A filter from instructions compiled earlier (at build time, for the built-in profile).
  static SeccompFilter FromInstructions(const sock_filter* begin, size_t count,
                                        std::string description);

 private:
  friend Result<SeccompFilter> CompileSeccompFilter(const SeccompProfile&,
                                                    const SeccompCompileOptions&);
  struct Data {
    std::vector<sock_filter> instructions;
    sock_fprog program{};
    std::vector<SkippedSyscall> skipped;
    std::string description;
  };
  SeccompFilter() : data_(std::make_unique<Data>()) {}

  std::unique_ptr<Data> data_;  // on the heap, so that Program() survives moves
};

// Builds the filter (see the top of this file for the rules). Errors are kInvalidArgument and
// name the profile entry: a rule libseccomp rejects, conflicting rules, a program larger than
// the kernel's 4096 instructions; or kInternal / kResourceExhausted for libseccomp or memfd
// failures. Thread-safe.
Result<SeccompFilter> CompileSeccompFilter(const SeccompProfile& profile,
                                           const SeccompCompileOptions& options = {});

// LoadSeccompProfile() then CompileSeccompFilter(), with the path in every error.
Result<SeccompFilter> LoadSeccompFilter(const std::string& path,
                                        const SeccompCompileOptions& options = {});

// The filter a spec names: kSeccompDefault is seccomp-profiles/default.json as compiled for this
// host at build time (seccomp_default.cc); anything else is a profile file (LoadSeccompFilter).
Result<SeccompFilter> FilterForProfile(const std::string& profile);

}  // namespace mcpexec::sandbox
