// subscriptions/listen (2026-07-28): a request that stays open and carries the notifications its
// filter asks for. Of the filter's fields this server honors `taskIds` (the tasks extension's
// notifications/tasks) alone: its tools and their list never change, and it has no prompts or
// resources. Subscriptions (subscriptions.h) holds the open ones.
#include <algorithm>
#include <set>

#include "log/log.h"
#include "mcp/protocol.h"
#include "mcp/server.h"

namespace mcpexec::mcp {
namespace {

using nlohmann::json;

// Ids one request may name: more than a caller can have tasks (MCP_EXEC_MAX_TASKS' default).
constexpr size_t kMaxListenTaskIds = 1000;

}  // namespace

Handled Session::SubscriptionsListen(const jsonrpc::Request& request, Sink sink,
                                     const CallEra& era) {
  const json filter =
      request.params.is_object() ? request.params.value("notifications", json()) : json();
  if (!filter.is_object()) {
    return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                                          "subscriptions/listen needs params.notifications "
                                          "(an object)"));
  }
  const json task_ids = filter.value("taskIds", json());
  if (!task_ids.is_null()) {
    const bool strings = task_ids.is_array() &&
                         std::all_of(task_ids.begin(), task_ids.end(),
                                     [](const json& id) { return id.is_string(); });
    if (!strings || task_ids.size() > kMaxListenTaskIds) {
      return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kInvalidParams,
                                            "params.notifications.taskIds must be an array of "
                                            "at most " + std::to_string(kMaxListenTaskIds) +
                                                " task ids (strings)"));
    }
    if (!era.tasks_extension) {
      return Reply(sink, jsonrpc::MakeError(
                             request.id, kMissingRequiredClientCapability,
                             "Missing required client capability",
                             json{{"requiredCapabilities",
                                   {{"extensions", {{std::string(kTasksExtension), json::object()}}}}}}));
    }
  }
  // A Streamable HTTP reply in JSON has room for the final response alone: a stream that only
  // its end would answer could tell the client nothing.
  if (!sink->CarriesNotifications()) {
    return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kInvalidRequest,
                                          "subscriptions/listen answers with an event stream: "
                                          "accept text/event-stream"));
  }
  Subscriptions::Listen listen;
  listen.caller = caller_;
  listen.request_id = request.id;
  listen.sink = sink;
  listen.honored = json::object();
  listen.closing_result = Stateless(json::object());
  // Only this caller's tasks are honored, each once: another caller's id is left out as an
  // unknown one is.
  if (!task_ids.is_null() && server_.Tasks().Enabled()) {
    json honored = json::array();
    std::set<std::string> seen;
    for (const json& id : task_ids) {
      if (!seen.insert(id.get<std::string>()).second) continue;
      if (auto task = server_.Tasks().Find(caller_, id.get<std::string>())) {
        honored.push_back(task->Id());
        listen.tasks.push_back(std::move(task));
      }
    }
    listen.honored["taskIds"] = std::move(honored);
  }
  const std::string key = IdKey(request.id);
  {
    std::lock_guard lock(mu_);
    if (closed_.load() || in_flight_.count(key) != 0 || task_waits_.count(key) != 0 ||
        !subscriptions_.emplace(key, 0).second) {
      return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kInvalidRequest,
                                            closed_.load() ? "the session is closed"
                                                           : "a request with this id is still running"));
    }
  }
  const json closing = listen.closing_result;
  std::variant<uint64_t, Subscriptions::Refusal> opened;
  try {
    opened = server_.Listening().Open(std::move(listen));
  } catch (...) {
    std::lock_guard lock(mu_);
    subscriptions_.erase(key);
    throw;
  }
  const uint64_t* handle = std::get_if<uint64_t>(&opened);
  bool cancelled_meanwhile = false;
  {
    std::lock_guard lock(mu_);
    auto it = subscriptions_.find(key);
    if (it == subscriptions_.end()) {
      cancelled_meanwhile = true;
    } else if (handle == nullptr) {
      subscriptions_.erase(it);
    } else {
      it->second = *handle;
    }
  }
  if (handle != nullptr) {
    if (cancelled_meanwhile) server_.Listening().Close(*handle);
    log::Debug("subscription opened", {{"session", id_}, {"request_id", request.id}});
    return Handled::kResponding;
  }
  if (cancelled_meanwhile) return Handled::kResponding;
  switch (std::get<Subscriptions::Refusal>(opened)) {
    case Subscriptions::Refusal::kTooMany:
      return Reply(sink, jsonrpc::MakeError(request.id, jsonrpc::kInvalidRequest,
                                            std::to_string(Subscriptions::kMaxPerCaller) +
                                                " subscriptions of this client are open; close "
                                                "one first"));
    case Subscriptions::Refusal::kStopping: {
      // Ended at once, as the open ones were.
      json result = closing;
      result["_meta"][std::string(kMetaSubscriptionId)] = request.id;
      return Reply(sink, jsonrpc::MakeResult(request.id, std::move(result)));
    }
    case Subscriptions::Refusal::kDropped:
      break;
  }
  return Reply(sink, jsonrpc::MakeError(request.id, kSubscriptionFellBehind,
                                        "the subscription could not be acknowledged: the client "
                                        "does not read what the server sends"));
}

}  // namespace mcpexec::mcp
