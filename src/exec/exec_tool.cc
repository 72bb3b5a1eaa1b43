#include "exec/exec_tool.h"

#include <poll.h>

#include <chrono>
#include <sstream>

#include "base/call_steps.h"
#include "base/utf8.h"
#include "exec/exec.h"
#include "exec/live_output.h"
#include "exec/packages_config.h"
#include "exec/session_tools.h"
#include "log/log.h"

namespace mcpexec::exec {
namespace {

using nlohmann::json;

// The CallToolResult: the structured result, its text, and then the files while the whole
// stays within MCP_EXEC_MAX_RESULT_BYTES. The room for files is measured with every file
// unreturned and given the longest reason, so returning one only shrinks the rest. `fields` are
// the call's own: its environment, and a session's handle, expiry and value.
json ToolResult(const config::Config& config, const sandbox::RunResult& run, const json& fields) {
  std::vector<FileReport> files = ReportOutputs(config, run.outputs, ResultCapReason(config));
  auto shape = [&fields](json structured, json items) {
    structured.update(fields);
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

ExecTool::ExecTool(config::Config config, std::shared_ptr<EnvironmentEngines> environments,
                   std::shared_ptr<ExecMetrics> metrics,
                   std::shared_ptr<engine::SessionStore> sessions,
                   std::shared_ptr<packages::PackageLayers> packages)
    : config_(std::move(config)),
      environments_(std::move(environments)),
      metrics_(std::move(metrics)),
      sessions_(std::move(sessions)),
      packages_(std::move(packages)) {}

void ExecTool::CallerGone(const std::string& caller) {
  if (sessions_) sessions_->CloseAll(caller);
}

std::string ExecTool::DescribeEnvironments(const Offer& offer) {
  constexpr const char* kSeedSet = "numpy, pandas, matplotlib, PyYAML, Jinja2 and Pillow";
  const bool one_unlisted = offer.environments.size() <= 1 &&
                            (offer.environments.empty() || !offer.environments[0].has_metadata);
  if (one_unlisted) {
    return std::string("The sandbox has Python's standard library plus ") + kSeedSet + ".";
  }
  std::ostringstream d;
  d << "The sandbox has Python's standard library plus the packages of its environment (the "
       "environment argument; default \""
    << offer.default_name << "\"), with their versions:";
  for (const Environment& env : offer.environments) {
    d << " " << env.name << ": ";
    if (!env.has_metadata) {
      d << kSeedSet;
    } else {
      for (size_t i = 0; i < env.packages.size(); ++i) {
        d << (i == 0 ? "" : ", ") << env.packages[i].name << " " << env.packages[i].version;
      }
      if (env.packages.empty()) d << "none";
    }
    d << ".";
  }
  return d.str();
}

std::string ExecTool::Describe(const config::Config& c, limits::Backend backend, bool figures,
                               const Offer& offer) {
  std::ostringstream d;
  d << "Run Python 3 code in a fresh, isolated sandbox and return its stdout, stderr and exit "
       "code. "
    << DescribeEnvironments(offer)
    << " It has no network at all "
       "(no internet, no DNS, no access to the host's services) and runs as an unprivileged "
       "user with a read-only system. The working directory /tmp (also HOME) is an empty "
       "private space of "
    << ByteCount(c.workspace_bytes)
    << " that is discarded after the run: nothing persists between calls, so send everything a "
       "program needs in one call; the files argument puts files there before it starts ("
    << ArgumentBound("files", c)
    << "). Every file the program writes under /tmp/outputs/ (empty and writable at the "
       "start) comes back after the run: PNG, JPEG, GIF and WebP images as images, other files "
       "as embedded resources"
    << (figures ? "; matplotlib figures come back as images by themselves when the program "
                  "calls plt.show() or leaves them open"
                : "")
    << " (at most "
    << c.max_output_files << " files of up to " << ByteCount(c.max_output_file_bytes)
    << " each, while the whole result stays under " << c.max_result_bytes
    << " bytes; the files field lists every file found and why any was not returned). Limits: "
       "wall-clock timeout "
    << c.default_timeout_s << " s by default (timeout_s, " << ArgumentBound("timeout_s", c)
    << "); stdout and stderr together are cut at " << ByteCount(c.max_output_bytes)
    << " (then truncated is true); stdin (the stdin argument) " << ArgumentBound("stdin", c)
    << ". Each run gets ";
  if (backend == limits::Backend::kRlimit) {
    d << "CPU time and process-count limits (" << c.pids_max
      << " processes) but no enforced memory limit";
  } else {
    d << ByteCount(c.memory_max) << " of memory (no swap; a program that needs more is killed and "
      << "oom_killed is true), " << c.pids_max << " processes/threads and " << c.cpus
      << " CPU";
  }
  d << ". A non-zero exit_code, or a timeout (exit_code -1, timed_out true), is a normal "
       "result; exit_code 128+N with signal set means the program died of signal N.";
  if (c.max_sessions > 0) {
    d << " Sessions keep Python state across calls, as a notebook does: session \"new\" runs "
         "the code in a new session and returns its handle as session; later calls that pass "
         "that handle as session run in the same interpreter, with its variables, imports and "
         "/tmp files, and the value of a last expression comes back as result (its repr). A "
         "session has the limits above for its whole life; a call that runs out of time gets "
         "KeyboardInterrupt, and is killed with its session if it does not stop. A session "
         "ends after "
      << c.session_idle_s << " s without a call or " << c.session_max_age_s
      << " s in all (expires_at), when it runs out of memory, or with session_close; at most "
      << c.max_sessions << " are open at once.";
  }
  return d.str();
}

json ExecTool::Definition() const {
  const json string = {{"type", "string"}};
  const engine::Engine* engine = environments_ ? environments_->DefaultEngine().get() : nullptr;
  const Offer offer = environments_ ? environments_->Offered() : Offer{};
  return {
      {"name", "exec"},
      {"title", "Run Python in a sandbox"},
      // Without an engine (only in tests) no limit is known to hold: say the least.
      {"description",
       Describe(config_, engine ? engine->Plan().Limits().Kind() : limits::Backend::kRlimit,
                engine && engine->Plan().CapturesFigures(), offer)},
      {"inputSchema", InputSchema(config_, offer)},
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
          {"files_walk_incomplete", {{"type", "boolean"}}},
          {"session", string},
          {"expires_at", {{"type", "string"}, {"format", "date-time"}}},
          {"result", {{"type", {"string", "null"}}}},
          {"session_ended", string},
          {"environment", string},
          {"packages",
           {{"type", "array"},
            {"items",
             {{"type", "object"},
              {"properties", {{"name", string}, {"version", string}, {"sha256", string}}},
              {"required", {"name", "version", "sha256"}}}}}}}},
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
  auto record = [this](CallOutcome outcome, std::optional<std::chrono::nanoseconds> duration,
                       uint64_t output_bytes = 0) {
    if (metrics_) metrics_->Record(outcome, duration, output_bytes);
  };
  auto args = ReadArguments(arguments);
  auto request = args.ok() ? ValidateRequest(config_, std::move(args->request))
                           : Result<ValidRequest>(args.error());
  if (!request.ok()) {
    record(CallOutcome::kInvalid, std::nullopt);
    return mcp::ToolError("invalid arguments: " + request.error().message);
  }
  const SessionArgument& session = args->session;
  if (session.present && !sessions_) {
    record(CallOutcome::kInvalid, std::nullopt);
    return mcp::ToolError("sessions are off on this server (MCP_EXEC_MAX_SESSIONS=0): call exec "
                          "without session");
  }
  const std::string& requested = args->environment;
  if (!requested.empty() && (!environments_ || !environments_->Offered().Find(requested))) {
    record(CallOutcome::kInvalid, std::nullopt);
    return mcp::ToolError("invalid arguments: unknown environment \"" + requested +
                          "\": this server offers " +
                          (environments_ ? environments_->Offered().NameList() : "none"));
  }
  const std::string environment =
      !requested.empty() ? requested
                         : (environments_ ? environments_->Offered().default_name : "");
  json meta = {{"session", context.session_id},
               {"request_id", context.request_id},
               {"environment", environment}};
  if (Cancelled(context.cancel_fd)) {
    record(CallOutcome::kCancelled, std::nullopt);
    return mcp::ToolError("cancelled before it started");
  }
  json fields = {{"environment", environment}};
  std::optional<packages::LayerRun> layer;
  // The run's progress notifications follow the installer's, whose values they must exceed.
  double progress_base = 0;
  if (!args->packages.empty()) {
    if (session.present && !session.open) {
      record(CallOutcome::kInvalid, std::nullopt);
      return mcp::ToolError(
          "invalid arguments: packages are chosen when a session opens (session: \"new\"), and "
          "a session keeps them for its life: call this one without packages, or open a new "
          "session with the packages it needs");
    }
    auto prepared = PreparePackages(environment, args->packages, context);
    if (!prepared.ok()) {
      const bool callers = prepared.error().code == ErrorCode::kInvalidArgument;
      record(callers ? CallOutcome::kInvalid : CallOutcome::kSetupError,
             std::chrono::steady_clock::now() - started);
      meta["error"] = prepared.error().message;
      log::Info("packages refused", meta);
      return mcp::ToolError(ErrorText(prepared.error()));
    }
    layer = std::move(*prepared);
    progress_base = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const json list = PackagesJson(layer->packages);
    fields["packages"] = list;
    meta.update({{"packages", list},
                 {"packages_installed", layer->installed_now},
                 {"packages_ms", static_cast<long long>(progress_base * 1000)}});
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
    hooks.on_progress = [&live, &context, &progress_base](std::chrono::milliseconds elapsed,
                                                          size_t output_bytes) {
      const LiveUpdate update = live.Take(elapsed, output_bytes);
      if (context.report_progress) {
        context.report_progress(progress_base + update.progress, update.message);
      }
      if (!context.log) return;
      for (const LiveUpdate::StreamText& out : update.streams) {
        context.log(mcp::LogLevel::kInfo,
                    out.stream == sandbox::Stream::kStdout ? "stdout" : "stderr", out.text);
      }
    };
  }
  MarkStep(Step::kValidated);
  if (session.present) {
    return CallInSession(session.open ? "" : session.handle, requested, *request, hooks, context,
                         started, meta, layer ? &*layer : nullptr, fields);
  }
  const std::shared_ptr<engine::Engine> engine =
      layer ? EngineForLayer(environments_->EngineFor(environment), *layer)
            : environments_->EngineFor(environment);
  auto result = Execute(*engine, config_, *request, hooks);
  const auto duration = std::chrono::steady_clock::now() - started;
  if (!result.ok()) {
    record(CallOutcome::kSetupError, duration);
    meta["error"] = result.error().message;
    log::Error("exec failed", meta);
    return mcp::ToolError(ErrorText(result.error()));
  }
  const uint64_t output_bytes = result->stdout_data.size() + result->stderr_data.size();
  const bool cancelled = result->outcome == sandbox::Outcome::kCancelled;
  record(ClassifyRun(*result), duration, cancelled ? 0 : output_bytes);
  meta.update({{"exit_code", result->exit_code},
               {"duration_ms", result->duration.count()},
               {"output_bytes", output_bytes},
               {"truncated", result->truncated},
               {"timed_out", result->outcome == sandbox::Outcome::kTimedOut},
               {"cancelled", cancelled},
               {"oom_killed", result->oom_killed},
               {"limits_backend", result->limits_backend},
               {"warm", result->warm}});
  if (result->signal) meta["signal"] = sandbox::SignalName(*result->signal);
  log::Info("exec", meta);
  if (cancelled) return mcp::ToolError("cancelled");
  return ToolResult(config_, *result, fields);
}

Result<packages::LayerRun> ExecTool::PreparePackages(const std::string& environment,
                                                     const std::vector<std::string>& requested,
                                                     const mcp::ToolCallContext& context) {
  const Environment* env = environments_->Offered().Find(environment);
  if (env == nullptr) {
    return MakeError(ErrorCode::kInternal, "no environment \"" + environment + "\" offered");
  }
  packages::InstallerHooks hooks;
  hooks.cancel_fd = context.cancel_fd;
  if (context.report_progress) {
    hooks.on_progress = [&context](std::chrono::milliseconds elapsed) {
      context.report_progress(static_cast<double>(elapsed.count()) / 1000.0,
                              "installing packages");
    };
  }
  return PrepareLayer(packages_.get(), config_, *env, requested, hooks);
}

json ExecTool::CallInSession(const std::string& handle, const std::string& requested,
                             const ValidRequest& request,
                             const sandbox::RunHooks& hooks, const mcp::ToolCallContext& context,
                             std::chrono::steady_clock::time_point started, json meta,
                             const packages::LayerRun* layer, const json& call_fields) {
  auto refuse = [&](CallOutcome outcome, const Error& error) {
    if (metrics_) metrics_->Record(outcome, std::chrono::steady_clock::now() - started, 0);
    meta["error"] = error.message;
    log::Info("exec in a session refused", meta);
    return mcp::ToolError(ErrorText(error));
  };
  std::string name = handle;
  std::string environment = requested.empty() ? environments_->Offered().default_name : requested;
  if (!name.empty()) {
    // Unknown handles get the call's own error below.
    auto kept = sessions_->EnvironmentOf(context.caller, name);
    if (kept.ok() && !requested.empty() && requested != *kept) {
      return refuse(CallOutcome::kInvalid,
                    MakeError(ErrorCode::kInvalidArgument,
                              "this session runs in the environment \"" + *kept +
                                  "\", which it keeps for its life: call it without environment "
                                  "(or with \"" + *kept + "\"), or open a new session with "
                                  "session: \"new\" and environment: \"" + requested + "\""));
    }
    if (kept.ok()) environment = *kept;
    meta["environment"] = environment;
  }
  if (name.empty()) {
    const std::shared_ptr<engine::Engine> engine =
        layer ? EngineForLayer(environments_->EngineFor(environment), *layer)
              : environments_->EngineFor(environment);
    auto opened = sessions_->Open(context.caller, *engine, environment);
    if (!opened.ok()) {
      return refuse(opened.error().code == ErrorCode::kResourceExhausted ? CallOutcome::kInvalid
                                                                         : CallOutcome::kSetupError,
                    opened.error());
    }
    name = opened->handle;
  }
  MarkTaken("session");
  auto call = sessions_->Call(context.caller, name, ProgramFor(request),
                              LimitsFor(config_, request.Get()), hooks);
  const auto duration = std::chrono::steady_clock::now() - started;
  if (!call.ok()) {
    const ErrorCode code = call.error().code;
    const bool callers = code == ErrorCode::kNotFound || code == ErrorCode::kFailedPrecondition ||
                         code == ErrorCode::kUnavailable || code == ErrorCode::kInvalidArgument;
    return refuse(callers ? CallOutcome::kInvalid : CallOutcome::kSetupError, call.error());
  }
  if (context.after_response && !call->ended) {
    context.after_response([sessions = sessions_, caller = context.caller, name] {
      sessions->PrepareNextCall(caller, name);
    });
  }
  const sandbox::RunResult& run = call->result.run;
  const uint64_t output_bytes = run.stdout_data.size() + run.stderr_data.size();
  const bool cancelled = run.outcome == sandbox::Outcome::kCancelled;
  if (metrics_) metrics_->Record(ClassifyRun(run), duration, cancelled ? 0 : output_bytes);
  meta.update({{"in_session", true},
               {"opened", handle.empty()},
               {"exit_code", run.exit_code},
               {"duration_ms", run.duration.count()},
               {"output_bytes", output_bytes},
               {"truncated", run.truncated},
               {"timed_out", run.outcome == sandbox::Outcome::kTimedOut},
               {"cancelled", cancelled},
               {"oom_killed", run.oom_killed},
               {"limits_backend", run.limits_backend}});
  if (call->ended) meta["session_ended"] = *call->ended;
  log::Info("exec", meta);
  // Closing a session stops the call running in it: as a task, the call ends cancelled.
  if (call->ended == "closed" && context.mark_cancelled) {
    context.mark_cancelled("its session was closed while it ran");
  }
  if (cancelled) return mcp::ToolError("cancelled");
  json fields = call_fields;
  fields.update({{"environment", environment},
                 {"session", name},
                 {"expires_at", log::IsoTime(call->session.expires_at)},
                 {"result", call->result.value ? json(RepairUtf8(*call->result.value)) : json()}});
  if (call->ended) fields["session_ended"] = *call->ended;
  return ToolResult(config_, run, fields);
}

}  // namespace mcpexec::exec
