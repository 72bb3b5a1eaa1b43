// `mcp-exec doctor`: checks that this host can run sandboxes with the configuration `run` would
// use (user namespaces, a limits backend, seccomp, the rootfs and its Python stack), prints one
// OK / WARN / FAIL line per check with the fixes, and exits 0 only when nothing failed.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/config_flags.h"
#include "cli/doctor_checks.h"

namespace mcpexec::cli {

struct DoctorOptions {
  ConfigFlags config;
};

// Registers the `doctor` subcommand, with the flags of `run`.
CLI::App* AddDoctorCommand(CLI::App& app, DoctorOptions& options);

// Forks a child that unshares new user, mount, pid and net namespaces and makes a mount in
// them. Call while the process has one thread.
doctor::UsernsProbe ProbeUserNamespaces();

// Reads prctl(PR_GET_SECCOMP) and /proc/sys/kernel/seccomp/actions_avail.
doctor::SeccompKernel ReadSeccompKernel();

// Runs the checks in order, printing each on stdout as it completes. Returns 0 when none
// failed, 1 when one did, 2 for an invalid configuration (reported on stderr).
int DoctorCommand(const std::string& default_rootfs, const DoctorOptions& options);

}  // namespace mcpexec::cli
