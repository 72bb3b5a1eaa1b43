// The subscriptions/listen streams of the stateless era (2026-07-28): requests that stay open and
// carry the notifications their filter asked for, here the tasks extension's notifications/tasks
// for the tasks named in `taskIds`. Every message of one carries the request's id as
// io.modelcontextprotocol/subscriptionId in _meta, the acknowledgement first. A client ends one
// with notifications/cancelled or by closing its stream (no answer then); a stopping server ends
// each with its response. Shared by the sessions of a server, since a stateless HTTP request is a
// session of its own and the tasks it listens to were made by other requests of its caller.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/message_sink.h"
#include "mcp/tasks.h"

namespace mcpexec::mcp {

class Subscriptions {
 public:
  // Open subscriptions of one caller at most: each holds a request's stream and a set of ids.
  static constexpr size_t kMaxPerCaller = 64;
  // A task's result (or error) is inlined in its notification up to this size; a larger one is
  // left out, for tasks/get, so that what a client has not read yet stays small.
  static constexpr size_t kMaxInlineBytes = 64 * 1024;
  // The params of notifications/tasks for a task as it is now (the era's DetailedTask), with its
  // result or error when `with_payload`.
  using TaskParams = nlohmann::json (*)(const TaskView& view, bool with_payload);

  explicit Subscriptions(TaskParams task_params) : task_params_(task_params) {}

  struct Listen {
    std::string caller;
    nlohmann::json request_id;
    std::shared_ptr<MessageSink> sink;
    nlohmann::json honored;  // the filter as agreed: the acknowledgement's `notifications`
    // Those of the named tasks that are the caller's, once each; their ids are what `honored`
    // lists.
    std::vector<std::shared_ptr<Task>> tasks;
    nlohmann::json closing_result;  // the response a stopping server ends it with
  };
  enum class Refusal {
    kTooMany,   // its caller has kMaxPerCaller open
    kStopping,  // EndAll has run: the server stops
    kDropped,   // the acknowledgement or a task's state was dropped: the client does not read
  };
  // Opens one: sends the acknowledgement, then each task's state as it is now (a task that ended
  // before the client listened is told too), and from then on notifications/tasks each time one
  // of them changes, never an older state after a newer one. Returns its handle.
  std::variant<uint64_t, Refusal> Open(Listen listen);
  // Ends one without an answer (the client cancelled it or went away). No effect on an unknown
  // handle.
  void Close(uint64_t handle);
  // A task of `owner` changed status (TaskStore's ChangeNotice). A subscription whose
  // notification is dropped (its client is 4 MiB behind) ends: its request is answered with an
  // error that says so, and a client that listens again is told each task as it is then.
  void TaskChanged(const std::string& owner, const TaskView& view);
  // The server is stopping: each open one gets its response, then is forgotten, and Open refuses.
  void EndAll();

  size_t OpenCount() const;

 private:
  struct Stream {
    std::string caller;
    nlohmann::json request_id;
    std::shared_ptr<MessageSink> sink;
    std::map<std::string, uint64_t> sent;  // task id: the version of the last state sent
    nlohmann::json closing_result;
  };
  // notifications/tasks with `params`, on `stream`; false when it was dropped.
  static bool SendTask(const Stream& stream, nlohmann::json params);
  // The subscription's end after a dropped notification, sent without the lock.
  static void AnswerDropped(const Stream& stream);

  const TaskParams task_params_;
  mutable std::mutex mu_;
  std::map<uint64_t, Stream> open_;
  std::map<std::string, size_t> per_caller_;
  uint64_t next_handle_ = 0;
  bool stopping_ = false;
};

}  // namespace mcpexec::mcp
