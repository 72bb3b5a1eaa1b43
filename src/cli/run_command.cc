#include "cli/run_command.h"

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cli/output_dir.h"
#include "config/settings.h"
#include "exec/environment_engines.h"
#include "exec/exec.h"
#include "exec/packages_config.h"
#include "limits/limits.h"
#include "sandbox/sandbox.h"

namespace mcpexec::cli {

std::vector<std::string> RunEngineChoices() {
  std::vector<std::string> engines =
      config::SettingChoices(*config::FindSetting("MCP_EXEC_ENGINE"));
  std::erase(engines, config::EngineName(config::EngineKind::kAuto));
  return engines;
}

CLI::App* AddRunCommand(CLI::App& app, RunOptions& o) {
  CLI::App* run = app.add_subcommand("run", "Run Python code in a fresh sandbox and print the "
                                            "result as one JSON object");
  auto* code = run->add_option("--code", o.code, "The Python code to run");
  auto* file = run->add_option("--file", o.file, "Read the code from this file");
  auto* source = run->add_option("source", o.source, "'-' reads the code from standard input");
  code->excludes(file)->excludes(source);
  file->excludes(source);
  run->add_option("--stdin", o.stdin_text, "Text given to the program on its standard input");
  run->add_option("--timeout", o.timeout_s,
                  "Wall-clock limit in seconds (default MCP_EXEC_DEFAULT_TIMEOUT_S, clamped to "
                  "[1, MCP_EXEC_MAX_TIMEOUT_S])");
  run->add_option("--input", o.inputs,
                  "PATH=LOCALFILE: put a copy of LOCALFILE at /tmp/PATH before the program "
                  "starts (repeatable)")
      ->expected(1)
      ->take_all();
  run->add_option("--output-dir", o.output_dir,
                  "Write the files the program left in /tmp/outputs under this directory");
  run->add_option("--environment", o.environment,
                  "Run in this environment, as a server's call naming it does: its image "
                  "(default: the rootfs; another NAME: NAME in MCP_EXEC_ENVIRONMENTS_DIR, by "
                  "default `environments` beside the rootfs), its env.txt variables and, with "
                  "--engine pool or zygote, its preloads. Without it: "
                  "MCP_EXEC_DEFAULT_ENVIRONMENT's (default default). Not with --rootfs, which "
                  "runs in the directory it names as default. `mcp-exec env list` lists them")
      ->type_name("NAME");
  const std::vector<std::string> engines = RunEngineChoices();
  std::string engine_list;
  for (const std::string& engine : engines) {
    engine_list += (engine_list.empty() ? "" : " | ") + engine;
  }
  run->add_option("--engine", o.engine,
                  engine_list + ": run in the sandbox that engine gives `serve`'s runs, for "
                  "comparing them; pool and zygote prepare one with the environment's preloads "
                  "imported (default's: MCP_EXEC_PRELOAD), so they are no faster here (default " +
                  o.engine + ")")
      ->check(CLI::IsMember(engines));
  run->add_flag("--session", o.session,
                "Run the program as the first call of a new session in that engine's sandbox, "
                "as exec with session \"new\" does, and end it: for comparing them");
  run->add_option("--packages", o.packages,
                  "Requirements to add to the environment, as exec's packages argument: "
                  "installed from MCP_EXEC_WHEELHOUSE (--wheelhouse) in an installer sandbox, "
                  "or found in MCP_EXEC_PACKAGE_CACHE; with --engine zygote the run is a fork with "
                  "the layer mounted, else cold (repeatable)")
      ->type_name("REQ")
      ->expected(1)
      ->take_all();
  AddConfigFlags(run, Command::kRun, o.config);
  run->footer(
      "Exit status: the program's own; 128+N when it died of signal N; 124 when it ran out of "
      "time; 125 when the sandbox could not be set up (among them an environment that is not "
      "built, or corrupt).");
  return run;
}

namespace {

// `what` names the file in messages: "--input data/x.csv=./x.csv".
Result<std::string> ReadLocalFile(const std::string& path, uint64_t limit, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError(ErrorCode::kNotFound, "cannot read " + what);
  std::string data;
  char buf[65536];
  while (data.size() <= limit && in.read(buf, sizeof buf).gcount() > 0) {
    data.append(buf, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return MakeError(ErrorCode::kNotFound, "cannot read " + what);
  return data;
}

}  // namespace

Result<exec::ExecRequest> ResolveRunRequest(const RunOptions& o, std::istream& code_input,
                                            uint64_t max_input_file_bytes) {
  exec::ExecRequest request;
  if (o.code) {
    request.code = *o.code;
  } else if (o.file) {
    std::ifstream in(*o.file, std::ios::binary);
    if (!in) return MakeError(ErrorCode::kNotFound, "cannot read --file " + *o.file);
    request.code.assign(std::istreambuf_iterator<char>(in), {});
  } else if (o.source && *o.source == "-") {
    request.code.assign(std::istreambuf_iterator<char>(code_input), {});
  } else if (o.source) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "unexpected argument '" + *o.source + "': use --code, --file or -");
  } else {
    return MakeError(ErrorCode::kInvalidArgument, "no code given: use --code, --file or -");
  }
  request.stdin_data = o.stdin_text.value_or("");
  request.timeout_s = o.timeout_s;
  for (const std::string& input : o.inputs) {
    const size_t eq = input.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == input.size()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "--input " + input + ": expected PATH=LOCALFILE, e.g. data/in.csv=./in.csv");
    }
    MCPEXEC_ASSIGN_OR_RETURN(std::string content,
                             ReadLocalFile(input.substr(eq + 1), max_input_file_bytes,
                                           "--input " + input));
    request.files.push_back({input.substr(0, eq), std::move(content)});
  }
  return request;
}

Result<exec::Environment> ChooseRunEnvironment(const config::Config& config,
                                               const RunOptions& options) {
  const bool rootfs_flag = options.config.values.contains("MCP_EXEC_ROOTFS");
  const std::string name = options.environment ? *options.environment
                           : rootfs_flag       ? std::string(exec::kDefaultEnvironment)
                                               : config.default_environment;
  // The other environments' problems are not this run's: `env list` shows them.
  std::vector<std::string> warnings;
  MCPEXEC_ASSIGN_OR_RETURN(exec::Offer offer, exec::FindEnvironments(config, warnings));
  if (const exec::Environment* env = offer.Find(name)) return *env;
  const bool from_default = !options.environment && !rootfs_flag;
  const std::string what = "environment \"" + name + "\"" +
                           (from_default ? " (MCP_EXEC_DEFAULT_ENVIRONMENT)" : "") +
                           " is not offered: ";
  const std::string offered =
      ". Offered here: " + (offer.environments.empty() ? "none" : offer.NameList()) +
      " (`mcp-exec env list` shows every environment)" +
      (from_default ? "; or name another with --environment or MCP_EXEC_DEFAULT_ENVIRONMENT" : "");
  auto image = exec::ReadEnvironment(name, exec::EnvironmentImage(config, name), config);
  if (image.ok()) {
    std::string listed;
    for (const std::string& n : config.environments) listed += (listed.empty() ? "" : ",") + n;
    return MakeError(ErrorCode::kNotFound, what + "it is built, but MCP_EXEC_ENVIRONMENTS (" +
                                               listed + ") leaves it out; add it there" + offered);
  }
  return MakeError(ErrorCode::kNotFound, what + image.error().message + "; `mcp-exec env build " +
                                             name + "` builds it" + offered);
}

int ExitStatusFor(const sandbox::RunResult& result) {
  if (result.outcome == sandbox::Outcome::kTimedOut) return kExitTimedOut;
  return result.exit_code & 0xff;
}

int RunCommand(const std::string& default_rootfs, const RunOptions& options) {
  if (options.environment && options.config.values.contains("MCP_EXEC_ROOTFS")) {
    std::cerr << "mcp-exec: --environment and --rootfs both choose the image, give one: "
                 "--environment NAME runs in a named environment (its image and its "
                 "variables), --rootfs DIR in the directory DIR as the environment \"default\"\n";
    return 2;
  }
  if (options.environment && !config::IsEnvironmentName(*options.environment)) {
    std::cerr << "mcp-exec: --environment \"" << *options.environment
              << "\" is not an environment name (1 to 32 of a-z, 0-9, _ and -, starting with a "
                 "letter or digit)\n";
    return 2;
  }
  auto config = ResolveConfig(default_rootfs, config::ProcessEnv(), options.config);
  if (!config.ok()) {
    std::cerr << "mcp-exec: " << config.error().message << "\n";
    return 2;
  }
  auto request = ResolveRunRequest(options, std::cin, config->max_input_file_bytes);
  if (!request.ok()) {
    std::cerr << "mcp-exec: " << request.error().message << "\n";
    return 2;
  }
  auto valid = exec::ValidateRequest(*config, std::move(*request));
  if (!valid.ok()) {
    std::cerr << "mcp-exec: " << valid.error().message << "\n";
    return 2;
  }
  auto environment = ChooseRunEnvironment(*config, options);
  if (!environment.ok()) {
    std::cerr << "mcp-exec: " << ErrorText(environment.error()) << "\n";
    return kExitSetupFailed;
  }
  auto backend = limits::OpenBackend(exec::BackendOptionsFor(*config));
  if (!backend.ok()) {
    std::cerr << "mcp-exec: " << ErrorText(backend.error()) << "\n";
    return kExitSetupFailed;
  }
  // The cold plan a server compiles for this environment (EnvironmentEngines::Prepare).
  auto plan = exec::PrepareSandboxes(exec::SpecForEnvironment(*config, *environment), *backend);
  if (!plan.ok()) {
    std::cerr << "mcp-exec: " << ErrorText(plan.error()) << "\n";
    return kExitSetupFailed;
  }
  std::optional<packages::LayerRun> layer;
  if (!options.packages.empty()) {
    auto layers = exec::OpenPackageLayers(*config, *backend);
    if (!layers.ok()) {
      std::cerr << "mcp-exec: " << ErrorText(layers.error()) << "\n";
      return kExitSetupFailed;
    }
    auto prepared = exec::PrepareLayer(layers->get(), *config, *environment, options.packages, {});
    if (!prepared.ok()) {
      std::cerr << "mcp-exec: " << ErrorText(prepared.error()) << "\n";
      return prepared.error().code == ErrorCode::kInvalidArgument ? 2 : kExitSetupFailed;
    }
    layer = std::move(*prepared);
  }
  // --engine's choices are MCP_EXEC_ENGINE's (AddRunCommand checks them), parsed as it is.
  config->engine = config::EngineFromName(options.engine).value_or(config::EngineKind::kCold);
  auto engine = exec::StartEngine(*config, *plan, exec::EngineUse::kOneShot);
  if (!engine.ok()) {
    std::cerr << "mcp-exec: " << ErrorText(engine.error()) << "\n";
    return kExitSetupFailed;
  }
  // The engine's own sandbox with the layer mounted (a zygote's fork), else a cold one.
  if (layer) *engine = exec::EngineForLayer(std::move(*engine), *layer);
  auto result = options.session ? exec::ExecuteInSession(**engine, *config, *valid)
                                 : exec::Execute(**engine, *config, *valid);
  if (!result.ok()) {
    std::cerr << "mcp-exec: " << ErrorText(result.error()) << "\n";
    return kExitSetupFailed;
  }
  std::vector<exec::FileReport> files = exec::ReportOutputs(
      *config, result->outputs, "mcp-exec run writes files only with --output-dir");
  if (options.output_dir) {
    if (auto written = WriteOutputDir(*options.output_dir, result->outputs, files); !written.ok()) {
      std::cerr << "mcp-exec: " << written.error().message << "\n";
      return kExitSetupFailed;
    }
  }
  nlohmann::json out = exec::ResultToJson(*result, files);
  if (layer) out["packages"] = exec::PackagesJson(layer->packages);
  std::cout << out.dump() << std::endl;
  return ExitStatusFor(*result);
}

}  // namespace mcpexec::cli
