// mcp-exec: entry point. Parses the command line and hands over to the subcommand.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/default_rootfs.h"
#include "cli/doctor_command.h"
#include "cli/env_command.h"
#include "cli/packages_command.h"
#include "cli/run_command.h"
#include "cli/serve_command.h"
#include "log/log.h"
#include "sandbox/sealed_self.h"
#include "sandbox/teardown.h"

#ifndef MCPEXEC_VERSION
#error "MCPEXEC_VERSION must be defined by the build"
#endif

int main(int argc, char** argv, char** envp) {
  if (auto sealed = mcpexec::sandbox::ReexecFromSealedCopyIfWritable(argv, envp); !sealed.ok()) {
    mcpexec::log::Warn("cannot run from a sealed copy of the binary, which is writable by "
                       "non-root: install it root-owned and not group/other-writable",
                       {{"error", sealed.error().message}});
  }
  CLI::App app{"mcp-exec: run Python code in a fresh, rootless Linux-namespace sandbox"};
  app.set_version_flag("--version", std::string("mcp-exec ") + MCPEXEC_VERSION);
  app.require_subcommand(1);
  mcpexec::cli::RunOptions run_options;
  CLI::App* run = mcpexec::cli::AddRunCommand(app, run_options);
  mcpexec::cli::ServeOptions serve_options;
  CLI::App* serve = mcpexec::cli::AddServeCommand(app, serve_options);
  mcpexec::cli::DoctorOptions doctor_options;
  CLI::App* doctor = mcpexec::cli::AddDoctorCommand(app, doctor_options);
  mcpexec::cli::EnvOptions env_options;
  CLI::App* env = mcpexec::cli::AddEnvCommand(app, env_options);
  mcpexec::cli::PackagesOptions packages_options;
  CLI::App* packages = mcpexec::cli::AddPackagesCommand(app, packages_options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  const std::string rootfs = mcpexec::cli::kDefaultRootfs;
  int status = 2;
  if (run->parsed()) {
    status = mcpexec::cli::RunCommand(rootfs, run_options);
  } else if (serve->parsed()) {
    status = mcpexec::cli::ServeCommand(rootfs, MCPEXEC_VERSION, serve_options);
  } else if (doctor->parsed()) {
    status = mcpexec::cli::DoctorCommand(rootfs, doctor_options);
  } else if (env->parsed()) {
    status = mcpexec::cli::EnvCommand(rootfs, mcpexec::cli::kBuildRootfsTool, env_options);
  } else if (packages->parsed()) {
    status = mcpexec::cli::PackagesCommand(rootfs, packages_options);
  }
  // Runs answered before their sandboxes were gone: none is left behind at exit.
  mcpexec::sandbox::Teardown::Shared().Drain();
  return status;
}
