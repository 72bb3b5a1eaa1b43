// `mcp-exec run`: one sandboxed run from the command line, its result printed as JSON.
#pragma once

#include <CLI/CLI.hpp>

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "cli/config_flags.h"
#include "config/config.h"
#include "exec/environments.h"
#include "exec/exec.h"
#include "sandbox/run_result.h"

namespace mcpexec::cli {

// Exit status of `mcp-exec run` when the sandbox could not be set up, as `docker run` does.
inline constexpr int kExitSetupFailed = 125;
// Exit status when the program ran out of time, as timeout(1) does.
inline constexpr int kExitTimedOut = 124;

struct RunOptions {
  std::optional<std::string> code;
  std::optional<std::string> file;
  std::optional<std::string> source;  // positional: "-" reads the code from standard input
  std::optional<std::string> stdin_text;
  std::optional<long long> timeout_s;
  std::vector<std::string> inputs;         // --input PATH=LOCALFILE, repeatable
  // --environment NAME: the environment (docs/environments.md) a server's call naming it runs
  // in. Unset: MCP_EXEC_DEFAULT_ENVIRONMENT's, or with --rootfs "default" in the image it names.
  std::optional<std::string> environment;
  std::optional<std::string> output_dir;   // --output-dir DIR
  // --engine: a one-shot run in the sandbox that engine gives a server's runs (MCP_EXEC_ENGINE
  // is for `serve`; `run` is cold unless told). One of RunEngineChoices().
  std::string engine = config::EngineName(config::EngineKind::kCold);
  // --session: the program is the first call of a new session (the sandbox exec's session
  // argument gives), which ends with the run: for the test suites, which run in it too.
  bool session = false;
  // --packages REQ...: requirements added to the environment, as exec's packages argument
  // (docs/packages.md); the run is then cold, in its environment's image with their layer.
  std::vector<std::string> packages;
  ConfigFlags config;
};

// `run --engine`'s choices: MCP_EXEC_ENGINE's in the table's order (config/settings.cc), but
// auto, which `run` refuses: a one-shot run has nothing to keep warm, so it names its engine.
std::vector<std::string> RunEngineChoices();

// Registers the `run` subcommand and its flags on `app`.
CLI::App* AddRunCommand(CLI::App& app, RunOptions& options);

// The request: code from --code, --file or "-" (exactly one), stdin from --stdin, input files
// from --input, each read up to `max_input_file_bytes` + 1 (past that it is refused later).
Result<exec::ExecRequest> ResolveRunRequest(const RunOptions& options, std::istream& code_input,
                                            uint64_t max_input_file_bytes = 16ull << 20);

// The environment a run of these options has, as a server with `config` offers it
// (FindEnvironments): --environment's, or with --rootfs "default" (its image the one --rootfs
// names), or else MCP_EXEC_DEFAULT_ENVIRONMENT's. An environment not offered (not built, corrupt,
// left out of MCP_EXEC_ENVIRONMENTS) is an error that says why, names the offered ones and the
// fix.
Result<exec::Environment> ChooseRunEnvironment(const config::Config& config,
                                               const RunOptions& options);

// The process exit status for a finished run: the program's status, 124 on timeout.
int ExitStatusFor(const sandbox::RunResult& result);

// Runs the command: prints the result JSON on stdout and returns the exit status; set-up and
// usage errors go to stderr.
int RunCommand(const std::string& default_rootfs, const RunOptions& options);

}  // namespace mcpexec::cli
