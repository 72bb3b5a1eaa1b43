// The MCP server: lifecycle (initialize, initialized), ping, tools/list, tools/call, progress,
// cancellation and logging (logging/setLevel), over any transport; and the stateless revision
// (2026-07-28), whose requests (server/discover, tools/list, tools/call) each carry their
// revision and log level in params._meta and need no handshake. Transports hand it one message
// at a time through a Session and give it a MessageSink for the replies; it never touches
// sockets or files.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/unique_fd.h"
#include "jsonrpc/message.h"
#include "mcp/log_level.h"
#include "mcp/message_sink.h"
#include "mcp/subscriptions.h"
#include "mcp/tasks.h"
#include "mcp/tool.h"
#include "mcp/worker_pool.h"

namespace mcpexec::mcp {

struct ServerInfo {
  std::string name = "mcp-exec";
  std::string version;
  std::string instructions;  // optional text for the client's model
};

class Session;
class StandaloneRelay;

// notifications/tasks/status (2025-11-25) with the ended task, to where its notifications went
// (server_tasks.cc); the store's TaskStore::EndNotice.
void TellTaskEnded(const TaskView& view, MessageSink& to);
// The params of the tasks extension's notifications/tasks (the stateless era) for `view`: the
// task, with its awaited input, and its result or error when `with_payload`, inlined as
// tasks/get has them (server_tasks.cc).
nlohmann::json TaskNotificationParams(const TaskView& view, bool with_payload);

// Shared by every session: the tools and the pool their calls run on. Thread-safe.
class Server {
 public:
  Server(ServerInfo info, std::vector<std::shared_ptr<Tool>> tools, WorkerPool& pool,
         TaskLimits task_limits = {});

  // A session for one client connection (stdio) or one Mcp-Session-Id (HTTP). `id` appears in
  // logs; it is not interpreted. Its calls' caller (ToolCallContext::caller) is `shared_caller`
  // when given (the stateless HTTP requests, one session each, are one caller), else its own.
  std::shared_ptr<Session> NewSession(std::string id, std::string shared_caller = "");

  const ServerInfo& Info() const { return info_; }
  Tool* FindTool(std::string_view name) const;
  const std::vector<std::shared_ptr<Tool>>& Tools() const { return tools_; }
  WorkerPool& Pool() { return pool_; }
  TaskStore& Tasks() { return tasks_; }
  // The open subscriptions/listen streams. A stopping server ends them (EndAll) while it can
  // still answer.
  Subscriptions& Listening() { return listening_; }

 private:
  ServerInfo info_;
  std::vector<std::shared_ptr<Tool>> tools_;
  WorkerPool& pool_;
  Subscriptions listening_;  // before tasks_, whose changes it is told of
  TaskStore tasks_;
};

enum class Handled {
  kResponding,  // a response will be sent to the sink (maybe later, from a worker)
  kNoResponse,  // a notification or a client response: nothing will be sent
};

// One client's conversation. Thread-safe; Handle() may be called concurrently.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Server& server, std::string id, std::string shared_caller = "");
  ~Session();

  // Handles one incoming message (the text of one JSON-RPC message). Replies to a request, and
  // the progress notifications of a tools/call, go to `sink`. Malformed input is answered
  // with a JSON-RPC error; nothing throws.
  Handled Handle(std::string_view text, std::shared_ptr<MessageSink> sink);
  // The same for a message the transport has already classified with jsonrpc::Parse, so that
  // a body is parsed once.
  Handled Handle(jsonrpc::Incoming incoming, std::shared_ptr<MessageSink> sink);

  // Cancels every call still running; their responses are dropped. Called when the client goes
  // away (stdin EOF, HTTP DELETE, SSE disconnect).
  void Close();

  // Cancels one running call, as notifications/cancelled does: its response is dropped. For
  // transports whose stream for that request went away (a Streamable HTTP client that hung up).
  void Cancel(const jsonrpc::Id& request_id);

  // Streamable HTTP's standalone stream (a GET on the endpoint): while one is attached, the
  // notifications of this session's tasks go there once the request that made the task has been
  // answered, unless a tasks/result waits for the task: its progress, log messages and end. The
  // newest wins: one attached before is ended with `end` (as one that refuses a message is: its
  // client fell behind). Detached with the same sink when it ends.
  void AttachStandaloneStream(std::shared_ptr<MessageSink> stream, std::function<void()> end);
  void DetachStandaloneStream(const MessageSink* stream);
  // Ends the one attached, if any (true then).
  bool EndStandaloneStream();

  const std::string& Id() const { return id_; }
  bool Initialized() const { return initialized_.load(); }
  // The negotiated version; empty before initialize.
  std::string ProtocolVersion() const;
  // Whether the client has asked (logging/setLevel) for notifications/message of `level`.
  // False until it has sent logging/setLevel.
  bool WantsLog(LogLevel level) const;

 private:
  struct InFlight;
  // How a tools/call is answered: in a session (the handshake era), or on its own (stateless),
  // with the log level its request asked for (none: no notifications/message).
  struct CallEra {
    bool stateless = false;
    std::optional<LogLevel> log_level;
    // Stateless: the request declared the tasks extension in its client capabilities.
    bool tasks_extension = false;
  };

  using Sink = std::shared_ptr<MessageSink>;
  // One row of the method table (server_methods.cc).
  struct Method {
    const char* name;
    unsigned eras;  // bits: 1 the handshake era, 2 the stateless one
    // In the handshake era: only once initialized, with params an object or absent. In the
    // stateless era: only with a revision named in _meta, whose log level is then read.
    bool needs_session;
    Handled (Session::*handler)(const jsonrpc::Request&, Sink, const CallEra&);
    const char* capability;  // announced by initialize and server/discover; nullptr for none
  };

  // Every method, in both eras.
  static std::span<const Method> Methods();
  // The method `name` of the era (stateless or not), or nullptr when that era has none.
  static const Method* FindMethod(std::string_view name, bool stateless);
  // The capabilities object initialize (for `version`) and server/discover (stateless) announce:
  // one entry for each capability a method of the table belongs to, and `tasks` where the
  // revision has them.
  static nlohmann::json Capabilities(bool stateless, std::string_view version, bool tasks);

  // Sends `message` as the final reply to a request.
  static Handled Reply(const Sink& sink, const nlohmann::json& message);
  // A request id as the key of in_flight_ and task_waits_.
  static std::string IdKey(const jsonrpc::Id& id);
  Handled HandleStateless(const jsonrpc::Request& request, Sink sink);
  Handled Run(const Method& method, const jsonrpc::Request& request, Sink sink,
              const CallEra& era);
  // The tool error a call gets when the worker pool's queue is full, and its text.
  nlohmann::json Busy(const CallEra& era) const;
  std::string BusyMessage() const;
  // The answer to a task request that makes no task (a limit, or the pool's queue is full).
  nlohmann::json RefusedTask(const jsonrpc::Id& id, const std::string& why,
                             const CallEra& era) const;
  // `result` with what every result of the stateless era carries: resultType and serverInfo.
  nlohmann::json Stateless(nlohmann::json result) const;

  // The handlers of the method table. Each answers the request through `sink`.
  Handled Initialize(const jsonrpc::Request& request, Sink sink, const CallEra& era);
  Handled Ping(const jsonrpc::Request& request, Sink sink, const CallEra& era);
  Handled Discover(const jsonrpc::Request& request, Sink sink, const CallEra& era);
  Handled ToolsList(const jsonrpc::Request& request, Sink sink, const CallEra& era);
  Handled SetLogLevel(const jsonrpc::Request& request, Sink sink, const CallEra& era);
  Handled CallTool(const jsonrpc::Request& request, Sink sink, const CallEra& era);
  // The task methods (server_tasks.cc): tasks/get and tasks/cancel in both eras, tasks/result
  // and tasks/list in 2025-11-25, tasks/update in the stateless one.
  Handled TasksGet(const jsonrpc::Request& request, Sink sink, const CallEra& era);
  Handled TasksResult(const jsonrpc::Request& request, Sink sink, const CallEra& era);
  Handled TasksList(const jsonrpc::Request& request, Sink sink, const CallEra& era);
  Handled TasksCancel(const jsonrpc::Request& request, Sink sink, const CallEra& era);
  Handled TasksUpdate(const jsonrpc::Request& request, Sink sink, const CallEra& era);
  // subscriptions/listen (server_subscriptions.cc), in the stateless era.
  Handled SubscriptionsListen(const jsonrpc::Request& request, Sink sink, const CallEra& era);
  // Ends this session's subscriptions without an answer (Close, or the session is gone).
  void CloseSubscriptions();
  // standalone_, as what it is to a task.
  Sink StandaloneSink() const;

  // How a tools/call asks to run (server_tasks.cc): plainly, as a task with an optional
  // requested TTL, or not at all (the JSON-RPC error to answer with).
  struct PlainCall {};
  struct TaskCall {
    std::optional<int64_t> ttl_ms;
  };
  std::variant<PlainCall, TaskCall, nlohmann::json> CallMode(const jsonrpc::Request& request,
                                                             const Tool& tool,
                                                             const CallEra& era) const;
  // Makes the task, starts its run on the pool and answers with the task's handle.
  Handled StartTask(Tool* tool, nlohmann::json arguments, const TaskCall& call,
                    const jsonrpc::Request& request, Sink sink, const CallEra& era);
  // The task a tasks/* request names when it is this session's caller's, else the error to
  // answer with (an unknown id and another caller's are the same error). Also checks that the
  // era has tasks and, stateless, that the request declared the extension.
  std::variant<std::shared_ptr<Task>, nlohmann::json> FindTask(const jsonrpc::Request& request,
                                                               const CallEra& era);
  // Whether this session's handshake revision has tasks (2025-11-25), and they are on.
  bool HandshakeTasks() const;

  // The steps of CallTool. The tool and the arguments the request names, or the error to
  // answer with.
  struct ToolTarget {
    Tool* tool = nullptr;
    nlohmann::json arguments;
  };
  std::variant<ToolTarget, nlohmann::json> FindCallTarget(const jsonrpc::Request& request) const;
  // Registers the call as running under its id; nullptr when the session is closed, or when a
  // call of that id runs already (`duplicate` is then set).
  std::shared_ptr<InFlight> Admit(const std::string& key, bool& duplicate);
  // What the tool is given: ids, the cancel descriptor, and the progress and log callbacks,
  // which send nothing once the call is cancelled.
  ToolCallContext ContextFor(const jsonrpc::Request& request, const Sink& sink,
                             const std::shared_ptr<InFlight>& flight, const CallEra& era);
  // Runs the call on the pool, or answers that the server is busy.
  void Submit(Tool* tool, nlohmann::json arguments, ToolCallContext context,
              const jsonrpc::Request& request, Sink sink, std::shared_ptr<InFlight> flight,
              const CallEra& era);
  void HandleNotification(const jsonrpc::Notification& notification);
  void CancelAll();  // every call still running
  struct TaskWait;
  // Drops the waits Cancel or Close took out of task_waits_.
  void StopWaiting(const std::vector<TaskWait>& waits);

  Server& server_;
  const std::string id_;
  const std::string caller_;
  const bool own_caller_;  // the caller is this session alone: it is gone when the session closes
  std::atomic<bool> initialized_{false};
  std::atomic<bool> closed_{false};
  // The least severe LogLevel the client wants, as an int; -1 before logging/setLevel.
  std::atomic<int> min_log_level_{-1};
  mutable std::mutex mu_;
  std::string protocol_version_;
  std::map<std::string, std::shared_ptr<InFlight>> in_flight_;  // by serialized request id
  // The tasks/result requests waiting for their task's end, by serialized request id: Cancel
  // and Close drop them, so that a client that gave up on one frees its place.
  struct TaskWait {
    std::weak_ptr<Task> task;
    uint64_t tag = 0;     // this session's, new for each wait: an id may be reused once answered
    uint64_t number = 0;  // TaskStore::WhenDone's; 0 until it is known
    const MessageSink* sink = nullptr;  // the request's, which the task may send notifications to
  };
  std::map<std::string, TaskWait> task_waits_;
  uint64_t task_wait_tags_ = 0;
  // The subscriptions/listen requests open, by serialized request id: their Subscriptions
  // handle, 0 while it is being opened.
  std::map<std::string, uint64_t> subscriptions_;
  // What the tasks of a Streamable HTTP session send to once their creating request has its
  // answer: the standalone stream attached now, or nothing.
  const std::shared_ptr<StandaloneRelay> standalone_;
};

}  // namespace mcpexec::mcp
