#include "mcp/server.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "base/call_steps.h"
#include "log/log.h"
#include "mcp/call_steps_log.h"
#include "mcp/protocol.h"

namespace mcpexec::mcp {
using nlohmann::json;

std::string Session::IdKey(const jsonrpc::Id& id) { return id.dump(); }

json ToolError(const std::string& message) {
  return {{"content", json::array({{{"type", "text"}, {"text", message}}})}, {"isError", true}};
}

// A tools/call that has been accepted and has not answered yet.
// A response follows its request's last progress notification by at least this much. The
// official TypeScript SDK handles a notification in a microtask but a response at once, so a
// progress notification read together with its request's response (one read of the pipe or the
// stream) finds its token gone, and the client reports an error. A run's result can come within
// a millisecond of the notification that carried its last output.
constexpr auto kResponseAfterProgress = std::chrono::milliseconds(25);

struct Session::InFlight {
  UniqueFd cancel;  // eventfd, written once to cancel
  std::atomic<bool> cancelled{false};
  // When the last progress notification was queued (steady_clock), 0 for none.
  std::atomic<int64_t> last_progress_ns{0};

  // Waits until the response may follow the last progress notification.
  void AwaitResponseGap() const {
    const int64_t last = last_progress_ns.load();
    if (last == 0) return;
    const auto since = std::chrono::steady_clock::now().time_since_epoch() -
                       std::chrono::nanoseconds(last);
    if (since < kResponseAfterProgress) std::this_thread::sleep_for(kResponseAfterProgress - since);
  }
};

Server::Server(ServerInfo info, std::vector<std::shared_ptr<Tool>> tools, WorkerPool& pool,
               TaskLimits task_limits)
    : info_(std::move(info)),
      tools_(std::move(tools)),
      pool_(pool),
      listening_(&TaskNotificationParams),
      tasks_(task_limits, &TellTaskEnded, [this](const std::string& owner, const TaskView& view) {
        listening_.TaskChanged(owner, view);
      }) {}

std::shared_ptr<Session> Server::NewSession(std::string id, std::string shared_caller) {
  return std::make_shared<Session>(*this, std::move(id), std::move(shared_caller));
}

Tool* Server::FindTool(std::string_view name) const {
  for (const auto& tool : tools_) {
    if (tool->Name() == name) return tool.get();
  }
  return nullptr;
}

namespace {

// A caller of its own for each session that does not share one.
std::string NextCaller() {
  static std::atomic<uint64_t> next{0};
  return "session#" + std::to_string(++next);
}

}  // namespace

// Forwards to the standalone stream attached now; drops what comes while none is. A stream that
// refuses a message (its client fell behind) is ended, so that the client sees the loss and
// opens another.
class StandaloneRelay final : public MessageSink {
 public:
  bool Send(const json& message, bool final) override {
    Stream to;
    {
      std::lock_guard lock(mu_);
      to = stream_;
    }
    if (!to.sink) return false;
    if (to.sink->Send(message, final)) return true;
    End(to.sink.get());
    return false;
  }
  // Ends the stream attached now (only when it is `only`, if given); true when there was one.
  bool End(const MessageSink* only = nullptr) {
    Stream ended;
    {
      std::lock_guard lock(mu_);
      if (!stream_.sink || (only != nullptr && stream_.sink.get() != only)) return false;
      ended = std::exchange(stream_, Stream{});
    }
    if (ended.end) ended.end();
    return true;
  }
  bool OpenAfterFinal() const override { return true; }

  void Attach(std::shared_ptr<MessageSink> sink, std::function<void()> end) {
    Stream replaced;
    {
      std::lock_guard lock(mu_);
      replaced = std::exchange(stream_, Stream{std::move(sink), std::move(end)});
    }
    if (replaced.end) replaced.end();
  }
  void Detach(const MessageSink* sink) {
    Stream gone;  // released without the lock
    std::lock_guard lock(mu_);
    if (stream_.sink.get() == sink) gone = std::exchange(stream_, Stream{});
  }
 private:
  struct Stream {
    std::shared_ptr<MessageSink> sink;
    std::function<void()> end;  // ends the stream (its client is told nothing more comes)
  };
  std::mutex mu_;
  Stream stream_;
};

Session::Session(Server& server, std::string id, std::string shared_caller)
    : server_(server),
      id_(std::move(id)),
      caller_(shared_caller.empty() ? NextCaller() : shared_caller),
      own_caller_(shared_caller.empty()),
      standalone_(std::make_shared<StandaloneRelay>()) {}

void Session::AttachStandaloneStream(std::shared_ptr<MessageSink> stream,
                                     std::function<void()> end) {
  standalone_->Attach(std::move(stream), std::move(end));
}

void Session::DetachStandaloneStream(const MessageSink* stream) { standalone_->Detach(stream); }

bool Session::EndStandaloneStream() { return standalone_->End(); }

Session::Sink Session::StandaloneSink() const { return standalone_; }

// Not Close(): a session a call's worker releases last may outlive the server's tools.
Session::~Session() {
  closed_ = true;
  CloseSubscriptions();
  CancelAll();
}

std::string Session::ProtocolVersion() const {
  std::lock_guard lock(mu_);
  return protocol_version_;
}

Handled Session::Handle(std::string_view text, std::shared_ptr<MessageSink> sink) {
  jsonrpc::Incoming incoming = jsonrpc::Parse(text);
  MarkStep(Step::kParsed);
  return Handle(std::move(incoming), std::move(sink));
}

Handled Session::Handle(jsonrpc::Incoming incoming, std::shared_ptr<MessageSink> sink) {
  if (auto* invalid = std::get_if<jsonrpc::Invalid>(&incoming)) {
    log::Warn("invalid message", {{"session", id_}, {"error", invalid->error_response["error"]}});
    sink->Send(invalid->error_response, true);
    return Handled::kResponding;
  }
  if (std::holds_alternative<jsonrpc::Response>(incoming)) return Handled::kNoResponse;
  if (auto* note = std::get_if<jsonrpc::Notification>(&incoming)) {
    HandleNotification(*note);
    return Handled::kNoResponse;
  }
  const auto& request = std::get<jsonrpc::Request>(incoming);
  auto reply = [&](json message) {
    sink->Send(message, true);
    return Handled::kResponding;
  };
  try {
    // A request that names its revision in _meta is of the stateless era, unless an
    // initialized session names its own handshake revision there; server/discover exists in
    // that era only.
    const json* meta_version = MetaField(request.params, kMetaProtocolVersion);
    const bool session_revision = meta_version != nullptr && initialized_.load() &&
                                  meta_version->is_string() &&
                                  IsSupportedProtocolVersion(meta_version->get<std::string>());
    const Method* method = FindMethod(request.method, false);
    const bool stateless_only = method == nullptr && FindMethod(request.method, true) != nullptr;
    if (stateless_only || (meta_version != nullptr && !session_revision)) {
      return HandleStateless(request, std::move(sink));
    }
    if (method != nullptr && !method->needs_session) {
      return Run(*method, request, std::move(sink), CallEra{});
    }
    if (!initialized_.load()) {
      return reply(jsonrpc::MakeError(request.id, jsonrpc::kInvalidRequest,
                                      "the session is not initialized: send initialize first"));
    }
    if (!request.params.is_null() && !request.params.is_object()) {
      return reply(jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                                      "params must be an object"));
    }
    if (method != nullptr) return Run(*method, request, std::move(sink), CallEra{});
    return reply(jsonrpc::MakeError(request.id, jsonrpc::kMethodNotFound,
                                    "Method not found: " + request.method));
  } catch (const std::exception& e) {
    log::Error("request failed", {{"session", id_}, {"method", request.method},
                                  {"request_id", request.id}, {"error", e.what()}});
    return reply(jsonrpc::MakeError(request.id, jsonrpc::kInternalError, "Internal error"));
  }
}

Handled Session::HandleStateless(const jsonrpc::Request& request,
                                 std::shared_ptr<MessageSink> sink) {
  auto reply = [&](json message) {
    sink->Send(message, true);
    return Handled::kResponding;
  };
  if (!request.params.is_null() && !request.params.is_object()) {
    return reply(
        jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams, "params must be an object"));
  }
  // server/discover is answered without a revision too: it is how a client finds one.
  const json* version = MetaField(request.params, kMetaProtocolVersion);
  if (version != nullptr &&
      (!version->is_string() || !IsStatelessProtocolVersion(version->get<std::string>()))) {
    return reply(jsonrpc::MakeError(
        request.id, kUnsupportedProtocolVersion, "Unsupported protocol version",
        json{{"supported", AllProtocolVersions()},
             {"requested", version->is_string() ? *version : json(version->dump())}}));
  }
  // A request that names its revision carries everything that revision requires of it: the
  // client's capabilities too (basic/index: a request missing a required field is malformed).
  const json* capabilities = MetaField(request.params, kMetaClientCapabilities);
  if (version != nullptr && (capabilities == nullptr || !capabilities->is_object())) {
    return reply(jsonrpc::MakeError(
        request.id, jsonrpc::kInvalidParams,
        "params._meta needs \"" + std::string(kMetaClientCapabilities) + "\" (an object)"));
  }
  const Method* method = FindMethod(request.method, true);
  CallEra era;
  era.stateless = true;
  if (method != nullptr && !method->needs_session) return Run(*method, request, sink, era);
  // A method of this era alone (tasks/update, subscriptions/listen) sent without a revision,
  // as in a handshake session: that revision has no such method.
  if (version == nullptr) {
    return reply(jsonrpc::MakeError(
        request.id, jsonrpc::kMethodNotFound,
        "Method not found: " + request.method + " (a method of revision " +
            std::string(kStatelessProtocolVersions[0]) + ": name it in params._meta)"));
  }
  if (capabilities != nullptr) {
    const auto extensions = capabilities->find("extensions");
    era.tasks_extension = extensions != capabilities->end() && extensions->is_object() &&
                          extensions->contains(std::string(kTasksExtension));
  }
  if (const json* level = MetaField(request.params, kMetaLogLevel)) {
    era.log_level = level->is_string() ? ParseLogLevel(level->get<std::string>()) : std::nullopt;
    if (!era.log_level) {
      return reply(jsonrpc::MakeError(
          request.id, jsonrpc::kInvalidParams,
          "params._meta \"" + std::string(kMetaLogLevel) +
              "\" is one of debug, info, notice, warning, error, critical, alert, emergency"));
    }
  }
  if (method != nullptr) return Run(*method, request, std::move(sink), era);
  // ping, initialize and logging/setLevel among them: the stateless revision has none of them.
  return reply(jsonrpc::MakeError(
      request.id, jsonrpc::kMethodNotFound,
      "Method not found: " + request.method + " (in revision " + version->get<std::string>() +
          ")"));
}

bool Session::WantsLog(LogLevel level) const {
  const int min = min_log_level_.load();
  return min >= 0 && static_cast<int>(level) >= min;
}

void Session::HandleNotification(const jsonrpc::Notification& note) {
  if (note.method == "notifications/cancelled") {
    if (note.params.is_object() && note.params.contains("requestId")) {
      Cancel(note.params["requestId"]);
    }
    return;
  }
  if (note.method != "notifications/initialized") {
    log::Debug("notification ignored", {{"session", id_}, {"method", note.method}});
  }
}

Handled Session::CallTool(const jsonrpc::Request& request, Sink sink, const CallEra& era) {
  auto target = FindCallTarget(request);
  if (auto* error = std::get_if<json>(&target)) {
    sink->Send(*error, true);
    return Handled::kResponding;
  }
  auto& [tool, arguments] = std::get<ToolTarget>(target);
  if (era.stateless) {
    // SEP-2322: a tool may first ask for input; the client retries with inputResponses.
    const json responses = request.params.value("inputResponses", json());
    if (!responses.is_null() && !responses.is_object()) {
      return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                                            "tools/call params.inputResponses must be an object"));
    }
    const json needed = tool->InputNeeded(arguments, responses);
    if (needed.is_object() && !needed.empty()) {
      json result = Stateless({{"inputRequests", needed}});
      result["resultType"] = "input_required";
      return Reply(sink, jsonrpc::MakeResult(request.id, std::move(result)));
    }
  }
  auto mode = CallMode(request, *tool, era);
  if (auto* error = std::get_if<json>(&mode)) {
    sink->Send(*error, true);
    return Handled::kResponding;
  }
  if (auto* task = std::get_if<TaskCall>(&mode)) {
    return StartTask(tool, std::move(arguments), *task, request, std::move(sink), era);
  }
  bool duplicate = false;
  std::shared_ptr<InFlight> flight = Admit(IdKey(request.id), duplicate);
  if (duplicate) {
    sink->Send(jsonrpc::MakeError(request.id, jsonrpc::kInvalidRequest,
                                  "a request with this id is still running"),
               true);
    return Handled::kResponding;
  }
  if (flight == nullptr) return Handled::kNoResponse;  // closed
  ToolCallContext context = ContextFor(request, sink, flight, era);
  Submit(tool, std::move(arguments), std::move(context), request, std::move(sink),
         std::move(flight), era);
  return Handled::kResponding;
}

std::variant<Session::ToolTarget, json> Session::FindCallTarget(
    const jsonrpc::Request& request) const {
  const json& params = request.params;
  if (!params.is_object() || !params.contains("name") || !params["name"].is_string()) {
    return jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                              "tools/call needs params.name (a string)");
  }
  const std::string name = params["name"].get<std::string>();
  Tool* tool = server_.FindTool(name);
  if (tool == nullptr) {
    return jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams, "Unknown tool: " + name);
  }
  json arguments = params.value("arguments", json::object());
  if (!arguments.is_object()) {
    return jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                              "tools/call arguments must be an object");
  }
  return ToolTarget{tool, std::move(arguments)};
}

std::shared_ptr<Session::InFlight> Session::Admit(const std::string& key, bool& duplicate) {
  auto flight = std::make_shared<InFlight>();
  flight->cancel.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!flight->cancel.Valid()) throw std::runtime_error("eventfd failed");
  std::lock_guard lock(mu_);
  if (closed_.load()) return nullptr;
  if (task_waits_.count(key) != 0 || subscriptions_.count(key) != 0 ||
      !in_flight_.emplace(key, flight).second) {
    duplicate = true;
    return nullptr;
  }
  return flight;
}

ToolCallContext Session::ContextFor(const jsonrpc::Request& request, const Sink& sink,
                                    const std::shared_ptr<InFlight>& flight, const CallEra& era) {
  const json& params = request.params;
  ToolCallContext context;
  context.session_id = id_;
  context.caller = caller_;
  context.request_id = IdKey(request.id);
  context.cancel_fd = flight->cancel.Get();
  if (era.stateless) context.input_responses = params.value("inputResponses", json());
  const json token = params.contains("_meta") && params["_meta"].is_object()
                         ? params["_meta"].value("progressToken", json())
                         : json();
  if (IsProgressToken(token)) {
    context.report_progress = [sink, token, flight](double progress, const std::string& message) {
      if (flight->cancelled.load()) return;
      sink->Send(jsonrpc::MakeNotification(
                     "notifications/progress",
                     {{"progressToken", token}, {"progress", progress}, {"message", message}}),
                 false);
      flight->last_progress_ns.store(
          std::chrono::duration_cast<std::chrono::nanoseconds>(
              std::chrono::steady_clock::now().time_since_epoch())
              .count());
    };
  }
  auto self = shared_from_this();
  context.log = [self, sink, flight, era](LogLevel level, const std::string& logger,
                                          const std::string& data) {
    if (flight->cancelled.load()) return;
    const bool wanted = era.stateless ? era.log_level && level >= *era.log_level
                                      : self->WantsLog(level);
    if (!wanted) return;
    sink->Send(jsonrpc::MakeNotification(
                   "notifications/message",
                   {{"level", LogLevelName(level)}, {"logger", logger}, {"data", data}}),
               false);
  };
  return context;
}

void Session::Submit(Tool* tool, json arguments, ToolCallContext context,
                     const jsonrpc::Request& request, Sink sink, std::shared_ptr<InFlight> flight,
                     const CallEra& era) {
  const std::string key = context.request_id;
  MarkStep(Step::kQueued);
  std::optional<CallSteps> steps = HandOffSteps();
  if (steps) {
    steps->tool = tool->Name();
    steps->session = id_;
    steps->request_id = key;
  }
  auto task = [self = shared_from_this(), tool, arguments = std::move(arguments), context, sink,
               flight, key, id = request.id, era, steps = std::move(steps)]() mutable {
    const CallStepsScope in_call(steps);
    MarkStep(Step::kStarted);
    // Shared, so that a copy of the context kept past the call points at nothing freed.
    auto after = std::make_shared<std::vector<std::function<void()>>>();
    context.after_response = [after](std::function<void()> work) {
      after->push_back(std::move(work));
    };
    json result;
    try {
      result = tool->Call(arguments, context);
    } catch (const std::exception& e) {
      log::Error("tool failed", {{"session", self->id_}, {"request_id", key}, {"error", e.what()}});
      result = ToolError("internal error while running the tool");
    }
    MarkStep(Step::kAnswered);
    {
      std::lock_guard lock(self->mu_);
      self->in_flight_.erase(key);
    }
    if (era.stateless) result = self->Stateless(std::move(result));
    flight->AwaitResponseGap();
    if (!flight->cancelled.load()) sink->Send(jsonrpc::MakeResult(id, std::move(result)), true);
    if (steps) LogCallSteps(*steps);
    for (std::function<void()>& work : std::exchange(*after, {})) {
      try {
        work();
      } catch (const std::exception& e) {
        log::Error("work after a response failed",
                   {{"session", self->id_}, {"request_id", key}, {"error", e.what()}});
      }
    }
  };
  if (server_.Pool().TrySubmit(std::move(task))) return;
  {
    std::lock_guard lock(mu_);
    in_flight_.erase(key);
  }
  log::Warn("server busy", {{"session", id_}, {"request_id", key}});
  sink->Send(jsonrpc::MakeResult(request.id, Busy(era)), true);
}

std::string Session::BusyMessage() const {
  return "the server is busy: " + std::to_string(server_.Pool().Workers()) +
         " runs are in progress (MCP_EXEC_MAX_CONCURRENCY) and " +
         std::to_string(server_.Pool().QueueCapacity()) +
         " are waiting (MCP_EXEC_MAX_QUEUE); try again shortly";
}

json Session::Busy(const CallEra& era) const {
  json busy = ToolError(BusyMessage());
  return era.stateless ? Stateless(std::move(busy)) : busy;
}

void Session::Cancel(const jsonrpc::Id& request_id) {
  std::shared_ptr<InFlight> flight;
  std::vector<TaskWait> waits;
  uint64_t subscription = 0;
  {
    std::lock_guard lock(mu_);
    const std::string key = IdKey(request_id);
    if (auto wait = task_waits_.find(key); wait != task_waits_.end()) {
      waits.push_back(wait->second);  // a tasks/result: the task itself runs on
      task_waits_.erase(wait);
    }
    if (auto sub = subscriptions_.find(key); sub != subscriptions_.end()) {
      subscription = sub->second;
      subscriptions_.erase(sub);
    }
    auto it = in_flight_.find(key);
    if (it != in_flight_.end()) flight = it->second;
  }
  StopWaiting(waits);
  if (subscription != 0) server_.Listening().Close(subscription);
  if (!flight) return;  // finished already, or never ours: the race is allowed
  if (flight->cancelled.exchange(true)) return;
  const uint64_t one = 1;
  (void)!write(flight->cancel.Get(), &one, sizeof one);
  log::Info("request cancelled", {{"session", id_}, {"request_id", request_id}});
}

void Session::Close() {
  if (!closed_.exchange(true) && own_caller_) {
    for (const auto& tool : server_.Tools()) tool->CallerGone(caller_);
    // Nobody else can reach this caller's tasks: their runs stop and their results go.
    server_.Tasks().DropOwner(caller_);
  }
  std::vector<TaskWait> waits;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, wait] : task_waits_) waits.push_back(wait);
    task_waits_.clear();
  }
  StopWaiting(waits);
  CloseSubscriptions();
  CancelAll();
}

void Session::CloseSubscriptions() {
  std::map<std::string, uint64_t> subscriptions;
  {
    std::lock_guard lock(mu_);
    subscriptions.swap(subscriptions_);
  }
  for (const auto& [key, handle] : subscriptions) {
    if (handle != 0) server_.Listening().Close(handle);
  }
}

void Session::StopWaiting(const std::vector<TaskWait>& waits) {
  for (const TaskWait& wait : waits) {
    auto task = wait.task.lock();
    if (!task) continue;
    if (wait.number != 0) server_.Tasks().StopWaiting(task, wait.number);
    task->DropNotificationSink(wait.sink);
  }
}

void Session::CancelAll() {
  std::vector<json> ids;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, flight] : in_flight_) ids.push_back(json::parse(key));
  }
  for (const json& id : ids) Cancel(id);
}

}  // namespace mcpexec::mcp
