#include "cli/run_command.h"

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cli/output_dir.h"
#include "config/settings.h"
#include "exec/exec.h"
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
  const std::vector<std::string> engines = RunEngineChoices();
  std::string engine_list;
  for (const std::string& engine : engines) {
    engine_list += (engine_list.empty() ? "" : " | ") + engine;
  }
  run->add_option("--engine", o.engine,
                  engine_list + ": run in the sandbox that engine gives `serve`'s runs, for "
                  "comparing them; pool and zygote prepare one with MCP_EXEC_PRELOAD imported, "
                  "so they are no faster here (default " + o.engine + ")")
      ->check(CLI::IsMember(engines));
  run->add_flag("--session", o.session,
                "Run the program as the first call of a new session in that engine's sandbox, "
                "as exec with session \"new\" does, and end it: for comparing them");
  AddConfigFlags(run, Command::kRun, o.config);
  run->footer(
      "Exit status: the program's own; 128+N when it died of signal N; 124 when it ran out of "
      "time; 125 when the sandbox could not be set up.");
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

int ExitStatusFor(const sandbox::RunResult& result) {
  if (result.outcome == sandbox::Outcome::kTimedOut) return kExitTimedOut;
  return result.exit_code & 0xff;
}

int RunCommand(const std::string& default_rootfs, const RunOptions& options) {
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
  auto plan = exec::PrepareSandboxes(*config);
  if (!plan.ok()) {
    std::cerr << "mcp-exec: " << ErrorText(plan.error()) << "\n";
    return kExitSetupFailed;
  }
  // --engine's choices are MCP_EXEC_ENGINE's (AddRunCommand checks them), parsed as it is.
  config->engine = config::EngineFromName(options.engine).value_or(config::EngineKind::kCold);
  auto engine = exec::StartEngine(*config, *plan, exec::EngineUse::kOneShot);
  if (!engine.ok()) {
    std::cerr << "mcp-exec: " << ErrorText(engine.error()) << "\n";
    return kExitSetupFailed;
  }
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
  std::cout << exec::ResultToJson(*result, files).dump() << std::endl;
  return ExitStatusFor(*result);
}

}  // namespace mcpexec::cli
