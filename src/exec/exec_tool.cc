#include "exec/exec_tool.h"

#include <poll.h>

#include <chrono>
#include <cmath>
#include <sstream>

#include "exec/exec.h"
#include "exec/live_output.h"
#include "log/log.h"

namespace mcpexec::exec {
namespace {

using nlohmann::json;

std::string Bytes(uint64_t n) {
  if (n % (1u << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n % (1u << 10) == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " bytes";
}

// Reads the arguments into a request; a message for the client when they are malformed.
Result<ExecRequest> ParseArguments(const json& args) {
  // The server checks this too, but json::value() throws on anything but an object, and a tool
  // must answer every input with a result.
  if (!args.is_object()) {
    return MakeError(ErrorCode::kInvalidArgument, "arguments must be an object");
  }
  ExecRequest request;
  const json code = args.value("code", json());
  if (!code.is_string()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     code.is_null() ? "code is required" : "code must be a string");
  }
  request.code = code.get<std::string>();
  if (args.contains("stdin") && !args["stdin"].is_null()) {
    if (!args["stdin"].is_string()) {
      return MakeError(ErrorCode::kInvalidArgument, "stdin must be a string");
    }
    request.stdin_data = args["stdin"].get<std::string>();
  }
  if (args.contains("timeout_s") && !args["timeout_s"].is_null()) {
    const json& t = args["timeout_s"];
    // Integral floats (10.0) are accepted: some clients send every number as a double.
    if (t.is_number_integer()) {
      request.timeout_s = t.get<long long>();
    } else if (t.is_number_float() && std::isfinite(t.get<double>()) &&
               std::floor(t.get<double>()) == t.get<double>() && std::fabs(t.get<double>()) < 1e9) {
      request.timeout_s = static_cast<long long>(t.get<double>());
    } else {
      return MakeError(ErrorCode::kInvalidArgument, "timeout_s must be a whole number of seconds");
    }
  }
  if (args.contains("files") && !args["files"].is_null()) {
    MCPEXEC_ASSIGN_OR_RETURN(request.files, ParseInputFiles(args["files"]));
  }
  for (const auto& [key, value] : args.items()) {
    if (key != "code" && key != "stdin" && key != "timeout_s" && key != "files") {
      return MakeError(ErrorCode::kInvalidArgument,
                       "unknown argument '" + key + "' (exec takes code, timeout_s, stdin, files)");
    }
  }
  return request;
}

// The CallToolResult: the structured result, its text, and then the files while the whole
// stays within MCP_EXEC_MAX_RESULT_BYTES. The room for files is measured with every file
// unreturned and given the longest reason, so returning one only shrinks the rest.
json ToolResult(const config::Config& config, const sandbox::RunResult& run) {
  std::vector<FileReport> files = ReportOutputs(config, run.outputs, ResultCapReason(config));
  auto shape = [](json structured, json items) {
    json content = json::array({{{"type", "text"}, {"text", structured.dump()}}});
    for (json& item : items) content.push_back(std::move(item));
    return json{{"content", std::move(content)},
                {"structuredContent", std::move(structured)},
                {"isError", false}};
  };
  const size_t base = shape(ResultToJson(run, files), json::array()).dump().size();
  const size_t room = config.max_result_bytes > base ? config.max_result_bytes - base : 0;
  json items = OutputContent(run.outputs, files, room);
  return shape(ResultToJson(run, files), std::move(items));
}

bool Cancelled(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  return fd >= 0 && poll(&pfd, 1, 0) > 0;
}

}  // namespace

ExecTool::ExecTool(config::Config config, std::shared_ptr<engine::Engine> engine,
                   std::shared_ptr<ExecMetrics> metrics)
    : config_(std::move(config)), engine_(std::move(engine)), metrics_(std::move(metrics)) {}

std::string ExecTool::Describe(const config::Config& c, limits::Backend backend, bool figures) {
  std::ostringstream d;
  d << "Run Python 3 code in a fresh, isolated sandbox and return its stdout, stderr and exit "
       "code. The sandbox has Python's standard library plus numpy, pandas, matplotlib, "
       "PyYAML, Jinja2 and Pillow. It has no network at all "
       "(no internet, no DNS, no access to the host's services) and runs as an unprivileged "
       "user with a read-only system. The working directory /tmp (also HOME) is an empty "
       "private space of "
    << Bytes(c.workspace_bytes)
    << " that is discarded after the run: nothing persists between calls, so send everything a "
       "program needs in one call; the files argument puts files there before it starts (up to "
    << c.max_input_files << " files of at most " << Bytes(c.max_input_file_bytes)
    << " each). Every file the program writes under /tmp/outputs/ (empty and writable at the "
       "start) comes back after the run: PNG, JPEG, GIF and WebP images as images, other files "
       "as embedded resources"
    << (figures ? "; matplotlib figures come back as images by themselves when the program "
                  "calls plt.show() or leaves them open"
                : "")
    << " (at most "
    << c.max_output_files << " files of up to " << Bytes(c.max_output_file_bytes)
    << " each, while the whole result stays under " << c.max_result_bytes
    << " bytes; the files field lists every file found and why any was not returned). Limits: "
       "wall-clock timeout "
    << c.default_timeout_s << " s by default (timeout_s, at most " << c.max_timeout_s
    << " s); stdout and stderr together are cut at " << Bytes(c.max_output_bytes)
    << " (then truncated is true); stdin (the stdin argument) up to "
    << Bytes(c.max_stdin_bytes)
    << ". Each run gets ";
  if (backend == limits::Backend::kRlimit) {
    d << "CPU time and process-count limits (" << c.pids_max
      << " processes) but no enforced memory limit";
  } else {
    d << Bytes(c.memory_max) << " of memory (no swap; a program that needs more is killed and "
      << "oom_killed is true), " << c.pids_max << " processes/threads and " << c.cpus
      << " CPU";
  }
  d << ". A non-zero exit_code, or a timeout (exit_code -1, timed_out true), is a normal "
       "result; exit_code 128+N with signal set means the program died of signal N.";
  return d.str();
}

json ExecTool::Definition() const {
  const json string = {{"type", "string"}};
  return {
      {"name", "exec"},
      {"title", "Run Python in a sandbox"},
      // Without an engine (only in tests) no limit is known to hold: say the least.
      {"description",
       Describe(config_, engine_ ? engine_->Plan().Limits().Kind() : limits::Backend::kRlimit,
                engine_ && engine_->Plan().CapturesFigures())},
      {"inputSchema",
       {{"type", "object"},
        {"properties",
         {{"code", {{"type", "string"}, {"description", "Python 3 source to run as main.py"}}},
          {"timeout_s",
           {{"type", "integer"},
            {"description", "Wall-clock limit in seconds (default " +
                                std::to_string(config_.default_timeout_s) + ", clamped to 1.." +
                                std::to_string(config_.max_timeout_s) + ")"}}},
          {"stdin", {{"type", "string"}, {"description", "Text given on standard input"}}},
          {"files",
           {{"type", "array"},
            {"description",
             "Files written under /tmp (the working directory) before the program starts"},
            {"items",
             {{"type", "object"},
              {"properties",
               {{"path",
                 {{"type", "string"},
                  {"description", "Relative to /tmp, e.g. data/input.csv; directories are "
                                  "created"}}},
                {"content", string},
                {"encoding",
                 {{"type", "string"},
                  {"enum", {"utf-8", "base64"}},
                  {"default", "utf-8"}}}}},
              {"required", {"path", "content"}},
              {"additionalProperties", false}}}}}}},
        {"required", {"code"}},
        {"additionalProperties", false}}},
      {"outputSchema",
       {{"type", "object"},
        {"properties",
         {{"stdout", string},
          {"stderr", string},
          {"exit_code", {{"type", "integer"}}},
          {"duration_ms", {{"type", "integer"}}},
          {"truncated", {{"type", "boolean"}}},
          {"timed_out", {{"type", "boolean"}}},
          {"signal", string},
          {"oom_killed", {{"type", "boolean"}}},
          {"memory_peak_bytes", {{"type", {"integer", "null"}}}},
          {"cpu_time_ms", {{"type", {"integer", "null"}}}},
          {"limits_backend", {{"type", "string"}, {"enum", {"cgroup2", "cgroup1", "rlimit"}}}},
          {"files",
           {{"type", "array"},
            {"items",
             {{"type", "object"},
              {"properties",
               {{"path", string},
                {"size", {{"type", "integer"}}},
                {"mime_type", {{"type", {"string", "null"}}}},
                {"returned", {{"type", "boolean"}}},
                {"reason", {{"type", {"string", "null"}}}}}},
              {"required", {"path", "size", "mime_type", "returned", "reason"}}}}}},
          {"files_not_listed", {{"type", "integer"}}},
          {"files_walk_incomplete", {{"type", "boolean"}}}}},
        {"required",
         {"stdout", "stderr", "exit_code", "duration_ms", "truncated", "timed_out"}}}},
      {"annotations",
       {{"title", "Run Python in a sandbox"},
        {"readOnlyHint", false},
        {"destructiveHint", false},
        {"idempotentHint", false},
        {"openWorldHint", false}}},
  };
}

json ExecTool::Call(const json& arguments, const mcp::ToolCallContext& context) {
  const auto started = std::chrono::steady_clock::now();
  auto record = [this](Outcome outcome, std::optional<std::chrono::nanoseconds> duration,
                       uint64_t output_bytes = 0) {
    if (metrics_) metrics_->Record(outcome, duration, output_bytes);
  };
  auto request = ParseArguments(arguments);
  if (!request.ok()) {
    record(Outcome::kInvalid, std::nullopt);
    return mcp::ToolError("invalid arguments: " + request.error().message);
  }
  if (auto valid = ValidateRequest(config_, *request); !valid.ok()) {
    record(Outcome::kInvalid, std::nullopt);
    return mcp::ToolError("invalid arguments: " + valid.error().message);
  }
  json meta = {{"session", context.session_id}, {"request_id", context.request_id}};
  if (Cancelled(context.cancel_fd)) {
    record(Outcome::kCancelled, std::nullopt);
    return mcp::ToolError("cancelled before it started");
  }

  sandbox::RunHooks hooks;
  hooks.cancel_fd = context.cancel_fd;
  // New output goes out at most every 100 ms (about 10 notifications a second); a silent run
  // still gets a progress notification every 500 ms, to show it is alive.
  hooks.progress_interval = std::chrono::milliseconds(500);
  hooks.output_interval = std::chrono::milliseconds(100);
  LiveOutput live;
  if (context.report_progress || context.log) {
    hooks.on_output = [&live](sandbox::Stream stream, std::string_view bytes) {
      live.Add(stream, bytes);
    };
    hooks.on_progress = [&live, &context](std::chrono::milliseconds elapsed, size_t output_bytes) {
      const LiveUpdate update = live.Take(elapsed, output_bytes);
      if (context.report_progress) context.report_progress(update.progress, update.message);
      if (!context.log) return;
      for (const LiveUpdate::StreamText& out : update.streams) {
        context.log(mcp::LogLevel::kInfo,
                    out.stream == sandbox::Stream::kStdout ? "stdout" : "stderr", out.text);
      }
    };
  }
  auto result = Execute(*engine_, config_, *request, hooks);
  const auto duration = std::chrono::steady_clock::now() - started;
  if (!result.ok()) {
    record(Outcome::kSetupError, duration);
    meta["error"] = result.error().message;
    log::Error("exec failed", meta);
    return mcp::ToolError(result.error().message);
  }
  const uint64_t output_bytes = result->stdout_data.size() + result->stderr_data.size();
  record(ClassifyRun(*result), duration, result->cancelled ? 0 : output_bytes);
  meta.update({{"exit_code", result->exit_code},
               {"duration_ms", result->duration.count()},
               {"output_bytes", output_bytes},
               {"truncated", result->truncated},
               {"timed_out", result->timed_out},
               {"cancelled", result->cancelled},
               {"oom_killed", result->oom_killed},
               {"limits_backend", result->limits_backend},
               {"warm", result->warm}});
  if (result->signal) meta["signal"] = sandbox::SignalName(*result->signal);
  log::Info("exec", meta);
  if (result->cancelled) return mcp::ToolError("cancelled");
  return ToolResult(config_, *result);
}

}  // namespace mcpexec::exec
