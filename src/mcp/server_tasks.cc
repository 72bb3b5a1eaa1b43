// Tasks on the wire, in both eras.
//   2025-11-25: tools/call with params.task {ttl} answers {task: Task}; tasks/get answers the
//     Task, tasks/result the call's own result once the task has ended (it waits), tasks/list
//     pages the caller's tasks, tasks/cancel answers the cancelled Task.
//   Stateless (the io.modelcontextprotocol/tasks extension, declared in each request's
//     _meta client capabilities): the server decides; a task-capable tool's call answers a flat
//     {resultType: "task", taskId, ...}; tasks/get inlines the result or error once ended, or
//     the input the run waits for; tasks/update answers it; tasks/cancel and tasks/update
//     answer an empty {resultType: "complete"}.
// In both, tasks/cancel answers only once the run has stopped: every process of it is dead.
// 2025-11-25: when a task ends, notifications/tasks/status with the Task goes where the run's
// notifications went (the connection on stdio and SSE, a waiting tasks/result's stream on
// Streamable HTTP), before any tasks/result is answered.
#include "log/log.h"
#include "mcp/protocol.h"
#include "mcp/server.h"

namespace mcpexec::mcp {
namespace {

using nlohmann::json;

constexpr size_t kTasksPageSize = 50;

// The Task fields both eras share; the TTL and poll interval go under each era's names.
json TaskFields(const TaskView& view, bool stateless) {
  json task = {{"taskId", view.id},
               {"status", TaskStatusName(view.status)},
               {"createdAt", log::IsoTime(view.created)},
               {"lastUpdatedAt", log::IsoTime(view.updated)},
               {stateless ? "ttlMs" : "ttl", view.ttl_ms},
               {stateless ? "pollIntervalMs" : "pollInterval", view.poll_interval_ms}};
  if (!view.status_message.empty()) task["statusMessage"] = view.status_message;
  return task;
}

// The stateless tasks/get answer: the task, with its result or error once it has ended (unless
// not `with_payload`).
json DetailedTask(const TaskView& view, bool with_payload = true) {
  json task = TaskFields(view, true);
  if (!with_payload && (view.status == TaskStatus::kCompleted || view.status == TaskStatus::kFailed)) {
    return task;
  }
  if (view.status == TaskStatus::kCompleted && !view.payload.is_null()) {
    task["result"] = view.payload;
  } else if (view.status == TaskStatus::kFailed) {
    task["error"] = view.payload;
  } else if (view.status == TaskStatus::kInputRequired) {
    task["inputRequests"] = view.input_requests;
  }
  return task;
}

// The 2025-11-25 tasks/result answer: what the tools/call would have answered, tied to its task.
json PayloadResponse(const jsonrpc::Id& id, const TaskView& view) {
  const json related = {{std::string(kMetaRelatedTask), {{"taskId", view.id}}}};
  if (view.status == TaskStatus::kFailed) {
    const json& error = view.payload;
    return jsonrpc::MakeError(id, error.value("code", jsonrpc::kInternalError),
                              error.value("message", std::string("the task failed")),
                              json{{"_meta", related}});
  }
  json result = view.payload.is_object() ? view.payload : ToolError("the task was cancelled");
  result["_meta"].update(related);
  return jsonrpc::MakeResult(id, std::move(result));
}

// Requests that wait for a task's end hold a reply each: a few per task are enough.
json TooManyWaiters(const jsonrpc::Id& id) {
  return jsonrpc::MakeError(id, jsonrpc::kInvalidRequest,
                            std::to_string(TaskStore::kMaxWaiters) +
                                " requests already wait for this task; wait for one to answer");
}

}  // namespace

json TaskNotificationParams(const TaskView& view, bool with_payload) {
  return DetailedTask(view, with_payload);
}

void TellTaskEnded(const TaskView& view, MessageSink& to) {
  // Only a 2025-11-25 task has somewhere its notifications go: the stateless extension sends
  // none for a task's run. The full Task, as the revision's TaskStatusNotification has it.
  to.Send(jsonrpc::MakeNotification("notifications/tasks/status", TaskFields(view, false)), false);
}

json Session::RefusedTask(const jsonrpc::Id& id, const std::string& why, const CallEra& era) const {
  // The stateless era's call may answer a tool result. A 2025-11-25 task request must be
  // answered with a CreateTaskResult or an error: the official 1.x SDK reads nothing else, and
  // would show its own parse error instead of `why`.
  if (era.stateless) return jsonrpc::MakeResult(id, Stateless(ToolError(why)));
  return jsonrpc::MakeError(id, jsonrpc::kInternalError, why);
}

bool Session::HandshakeTasks() const {
  return server_.Tasks().Enabled() && ProtocolVersion() == kTasksProtocolVersion;
}

std::variant<Session::PlainCall, Session::TaskCall, json> Session::CallMode(
    const jsonrpc::Request& request, const Tool& tool, const CallEra& era) const {
  const TaskSupport support = tool.Tasks();
  // Turned off, tasks are not announced: task metadata is ignored and every call runs plainly.
  if (!server_.Tasks().Enabled()) return PlainCall{};
  if (era.stateless) {
    // The server decides: every call of a task-capable tool is a task for a client that
    // declared the extension. params.task is a 2025-11-25 field: ignored here.
    if (era.tasks_extension && support != TaskSupport::kForbidden) return TaskCall{};
    if (support == TaskSupport::kRequired) {
      return jsonrpc::MakeError(
          request.id, kMissingRequiredClientCapability, "Missing required client capability",
          json{{"requiredCapabilities",
                {{"extensions", {{std::string(kTasksExtension), json::object()}}}}}});
    }
    return PlainCall{};
  }
  if (!HandshakeTasks()) return PlainCall{};  // older revisions have no params.task
  const auto task = request.params.find("task");
  if (task == request.params.end()) {
    if (support == TaskSupport::kRequired) {
      return jsonrpc::MakeError(request.id, jsonrpc::kMethodNotFound,
                                "Task augmentation required for tools/call requests");
    }
    return PlainCall{};
  }
  if (!task->is_object()) {
    return jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                              "tools/call params.task must be an object ({\"ttl\": ms})");
  }
  if (support == TaskSupport::kForbidden) {
    return jsonrpc::MakeError(request.id, jsonrpc::kMethodNotFound,
                              "tool " + tool.Name() + " does not run as a task");
  }
  TaskCall call;
  const auto ttl = task->find("ttl");
  if (ttl != task->end() && !ttl->is_null()) {
    if (!ttl->is_number() || ttl->get<double>() < 0 || ttl->get<double>() > 9.0e15) {
      return jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                                "tools/call params.task.ttl must be a number of milliseconds, "
                                "0 or more");
    }
    call.ttl_ms = static_cast<int64_t>(ttl->get<double>());
  }
  return call;
}

Handled Session::StartTask(Tool* tool, json arguments, const TaskCall& call,
                           const jsonrpc::Request& request, Sink sink, const CallEra& era) {
  TaskStore& store = server_.Tasks();
  auto created = store.Create(caller_, call.ttl_ms);
  if (!created.ok()) {
    log::Warn("task refused", {{"session", id_}, {"error", created.error().message}});
    return Reply(sink, RefusedTask(request.id, created.error().message, era));
  }
  std::shared_ptr<Task> task = std::move(*created);
  // A connection that closed meanwhile has had its tasks dropped; this one would be out of reach.
  if (closed_.load()) {
    store.Discard(task);
    return Handled::kNoResponse;
  }
  ToolCallContext context;
  context.session_id = id_;
  context.caller = caller_;
  context.request_id = "task:" + task->Id().substr(0, 8);
  context.cancel_fd = task->CancelFd();
  context.mark_cancelled = [task](const std::string& why) { TaskStore::MarkCancelled(task, why); };
  if (era.stateless) {
    context.input_responses = request.params.value("inputResponses", json());
    context.request_input = [task](const json& requests) { return task->AwaitInput(requests); };
  }
  // 2025-11-25: the call's progress token stays valid for the task's life, and its messages
  // carry the task's id. The stateless extension has no notifications for a task's run.
  if (!era.stateless) {
    const json related = {{std::string(kMetaRelatedTask), {{"taskId", task->Id()}}}};
    const json* meta = nullptr;
    if (auto m = request.params.find("_meta"); m != request.params.end() && m->is_object()) {
      meta = &*m;
    }
    const json token = meta != nullptr ? meta->value("progressToken", json()) : json();
    if (IsProgressToken(token)) {
      context.report_progress = [task, token, related](double progress,
                                                       const std::string& message) {
        if (auto to = task->NotificationSink()) {
          to->Send(jsonrpc::MakeNotification("notifications/progress",
                                             {{"progressToken", token},
                                              {"progress", progress},
                                              {"message", message},
                                              {"_meta", related}}),
                   false);
        }
      };
    }
    std::weak_ptr<Session> weak = weak_from_this();
    context.log = [weak, task, related](LogLevel level, const std::string& logger,
                                        const std::string& data) {
      auto self = weak.lock();
      if (!self || !self->WantsLog(level)) return;
      if (auto to = task->NotificationSink()) {
        to->Send(jsonrpc::MakeNotification("notifications/message", {{"level", LogLevelName(level)},
                                                                      {"logger", logger},
                                                                      {"data", data},
                                                                      {"_meta", related}}),
                 false);
      }
    };
  }
  const std::string session_id = id_;
  // The handle shows the task as it was made: the run may end before the answer is written.
  const TaskView view = task->View();
  auto run = [&store, tool, arguments = std::move(arguments), context, task, session_id] {
    try {
      store.Finish(task, TaskStatus::kCompleted, tool->Call(arguments, context));
    } catch (const std::exception& e) {
      log::Error("task failed", {{"session", session_id},
                                 {"task", context.request_id},
                                 {"error", e.what()}});
      store.Finish(task, TaskStatus::kFailed,
                   {{"code", jsonrpc::kInternalError},
                    {"message", "internal error while running the tool"}});
    }
  };
  if (!server_.Pool().TrySubmit(std::move(run))) {
    store.Discard(task);
    log::Warn("server busy", {{"session", id_}, {"task", context.request_id}});
    return Reply(sink, RefusedTask(request.id, BusyMessage(), era));
  }
  log::Debug("task started", {{"session", id_}, {"task", context.request_id}});
  if (era.stateless) {
    json result = Stateless(TaskFields(view, true));
    result["resultType"] = "task";
    return Reply(sink, jsonrpc::MakeResult(request.id, std::move(result)));
  }
  Reply(sink, jsonrpc::MakeResult(request.id, {{"task", TaskFields(view, false)}}));
  // The run's notifications follow the handle, never precede it: until now they had nowhere to
  // go. A tasks/result that already waits keeps them. A Streamable HTTP reply ends with the
  // handle: its queue is not kept (it counts against the session's open requests), and they go
  // to the session's standalone stream while one is open.
  task->SetHomeSink(sink->OpenAfterFinal() ? sink : StandaloneSink());
  return Handled::kResponding;
}

std::variant<std::shared_ptr<Task>, json> Session::FindTask(const jsonrpc::Request& request,
                                                            const CallEra& era) {
  if (era.stateless && !era.tasks_extension) {
    return jsonrpc::MakeError(
        request.id, kMissingRequiredClientCapability, "Missing required client capability",
        json{{"requiredCapabilities",
              {{"extensions", {{std::string(kTasksExtension), json::object()}}}}}});
  }
  if (!era.stateless && !HandshakeTasks()) {
    return jsonrpc::MakeError(request.id, jsonrpc::kMethodNotFound,
                              "Method not found: " + request.method + " (tasks need revision " +
                                  std::string(kTasksProtocolVersion) + ")");
  }
  const json id = request.params.is_object() ? request.params.value("taskId", json()) : json();
  if (!id.is_string()) {
    return jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                              request.method + " needs params.taskId (a string)");
  }
  std::shared_ptr<Task> task = server_.Tasks().Find(caller_, id.get<std::string>());
  if (!task) {
    return jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                              "Failed to retrieve task: Task not found (unknown, expired, or "
                              "not this client's)");
  }
  return task;
}

Handled Session::TasksGet(const jsonrpc::Request& request, Sink sink, const CallEra& era) {
  auto found = FindTask(request, era);
  if (auto* error = std::get_if<json>(&found)) return Reply(sink, *error);
  const TaskView view = std::get<std::shared_ptr<Task>>(found)->View();
  json result = era.stateless ? Stateless(DetailedTask(view)) : TaskFields(view, false);
  return Reply(sink, jsonrpc::MakeResult(request.id, std::move(result)));
}

Handled Session::TasksResult(const jsonrpc::Request& request, Sink sink, const CallEra& era) {
  auto found = FindTask(request, era);
  if (auto* error = std::get_if<json>(&found)) return Reply(sink, *error);
  auto task = std::get<std::shared_ptr<Task>>(found);
  const std::string key = IdKey(request.id);
  uint64_t tag;
  {
    std::lock_guard lock(mu_);
    tag = ++task_wait_tags_;
    if (in_flight_.count(key) != 0 || subscriptions_.count(key) != 0 ||
        !task_waits_.emplace(key, TaskWait{task, tag, 0, sink.get()}).second) {
      return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kInvalidRequest,
                                            "a request with this id is still running"));
    }
  }
  // Waits without a thread: the answer goes out when the run ends. Meanwhile the run's
  // notifications follow this request, whose stream stays open until then.
  std::weak_ptr<Session> weak = weak_from_this();
  const auto number = server_.Tasks().WhenDone(
      task, TaskStore::kWaitForResult, [weak, key, tag, sink, id = request.id](const TaskView& view) {
        if (auto self = weak.lock()) {
          std::lock_guard lock(self->mu_);
          auto wait = self->task_waits_.find(key);
          if (wait != self->task_waits_.end() && wait->second.tag == tag) {
            self->task_waits_.erase(wait);
          }
        }
        sink->Send(PayloadResponse(id, view), true);
      });
  bool dropped_meanwhile = false;  // by Cancel or Close, before the wait's number was known
  {
    std::lock_guard lock(mu_);
    auto wait = task_waits_.find(key);
    if (wait == task_waits_.end() || wait->second.tag != tag) {
      dropped_meanwhile = number && *number != 0;
    } else if (!number) {
      task_waits_.erase(wait);
    } else {
      wait->second.number = *number;
    }
  }
  if (dropped_meanwhile) {
    server_.Tasks().StopWaiting(task, *number);  // no effect once it has ended
    return Handled::kResponding;                  // given up: nothing is answered
  }
  if (!number) return Reply(sink, TooManyWaiters(request.id));
  // A reply in JSON holds its answer alone: the notifications stay where they went.
  if (sink->CarriesNotifications()) task->SetNotificationSink(sink);
  return Handled::kResponding;
}

Handled Session::TasksList(const jsonrpc::Request& request, Sink sink, const CallEra& era) {
  if (!HandshakeTasks() || era.stateless) {
    return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kMethodNotFound,
                                          "Method not found: tasks/list"));
  }
  const json cursor = request.params.is_object() ? request.params.value("cursor", json()) : json();
  if (!cursor.is_null() && !cursor.is_string()) {
    return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                                          "tasks/list params.cursor must be a string"));
  }
  std::vector<TaskView> page;
  std::string next;
  if (!server_.Tasks().List(caller_, cursor.is_string() ? cursor.get<std::string>() : "",
                            kTasksPageSize, page, next)) {
    return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                                          "tasks/list params.cursor is not one this server gave"));
  }
  json tasks = json::array();
  for (const TaskView& view : page) tasks.push_back(TaskFields(view, false));
  json result = {{"tasks", std::move(tasks)}};
  if (!next.empty()) result["nextCursor"] = next;
  return Reply(sink, jsonrpc::MakeResult(request.id, std::move(result)));
}

Handled Session::TasksCancel(const jsonrpc::Request& request, Sink sink, const CallEra& era) {
  auto found = FindTask(request, era);
  if (auto* error = std::get_if<json>(&found)) return Reply(sink, *error);
  auto task = std::get<std::shared_ptr<Task>>(found);
  TaskStore& store = server_.Tasks();
  // The run is asked to stop first, however many requests wait for the task.
  if (!store.RequestCancel(task)) {
    // Ended already. 2025-11-25 says so; the extension acknowledges a cancel of an ended task
    // as it does any other.
    if (era.stateless) return Reply(sink, jsonrpc::MakeResult(request.id, Stateless(json::object())));
    return Reply(sink, jsonrpc::MakeError(
                           request.id, jsonrpc::kInvalidParams,
                           std::string("Cannot cancel task: already in terminal status '") +
                               TaskStatusName(task->View().status) + "'"));
  }
  log::Info("task cancel requested", {{"session", id_}, {"task", "task:" + task->Id().substr(0, 8)}});
  // The answer waits for the run to return: its processes are dead by then.
  auto self = shared_from_this();
  const auto waiting = store.WhenDone(
      task, TaskStore::kWaitForCancel,
      [self, sink, id = request.id, stateless = era.stateless](const TaskView& view) {
        json result = stateless ? self->Stateless(json::object()) : TaskFields(view, false);
        sink->Send(jsonrpc::MakeResult(id, std::move(result)), true);
      });
  if (!waiting) return Reply(sink, TooManyWaiters(request.id));
  return Handled::kResponding;
}

Handled Session::TasksUpdate(const jsonrpc::Request& request, Sink sink, const CallEra& era) {
  auto found = FindTask(request, era);
  if (auto* error = std::get_if<json>(&found)) return Reply(sink, *error);
  const json responses =
      request.params.is_object() ? request.params.value("inputResponses", json()) : json();
  if (!responses.is_object()) {
    return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                                          "tasks/update needs params.inputResponses (an object)"));
  }
  // Keys the run does not wait for are ignored; the run resumes once none is left.
  std::get<std::shared_ptr<Task>>(found)->Answer(responses);
  return Reply(sink, jsonrpc::MakeResult(request.id, Stateless(json::object())));
}

}  // namespace mcpexec::mcp
