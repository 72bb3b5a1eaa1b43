// The server the conformance suite runs against: `mcp-exec serve`, the same code, plus the
// fixture tools the suite's task scenarios call on its reference server. The tasks machinery
// they exercise is mcp-exec's own (src/mcp/tasks.*, server_tasks.cc); only the tools are the
// suite's. Usage: mcp-exec-conformance serve [the options of mcp-exec serve].
//   greet {name}                 never a task: "Hello, {name}!"
//   slow_compute {seconds, label} may be a task: waits `seconds` (cancellable), then answers
//   failing_job {}               only as a task: a tool error after about 1 s
//   protocol_error_job {}        may be a task: the tool fails (an exception), the task "failed"
//   confirm_delete {filename}    may be a task: asks the client one question mid-task
//   multi_input {}               may be a task: asks two at once
//   test_tool_with_task {}       may be a task: asks for a name before it runs (SEP-2322 rounds)
#include <poll.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <stdexcept>
#include <string>

#include "cli/default_rootfs.h"
#include "cli/serve_command.h"
#include "mcp/tool.h"
#include "sandbox/teardown.h"

namespace {

using mcpexec::mcp::TaskSupport;
using mcpexec::mcp::Tool;
using mcpexec::mcp::ToolCallContext;
using nlohmann::json;

json Text(const std::string& text) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", false}};
}

// True when the call was cancelled within `ms`.
bool CancelledWithin(const ToolCallContext& context, int ms) {
  pollfd fd = {context.cancel_fd, POLLIN, 0};
  return poll(&fd, 1, ms) > 0;
}

class FixtureTool : public Tool {
 public:
  FixtureTool(std::string name, TaskSupport tasks, json properties)
      : name_(std::move(name)), tasks_(tasks), properties_(std::move(properties)) {}
  std::string Name() const override { return name_; }
  TaskSupport Tasks() const override { return tasks_; }
  json Definition() const override {
    return {{"name", name_},
            {"description", "conformance fixture"},
            {"inputSchema", {{"type", "object"}, {"properties", properties_}}}};
  }

 private:
  const std::string name_;
  const TaskSupport tasks_;
  const json properties_;
};

class Greet : public FixtureTool {
 public:
  Greet() : FixtureTool("greet", TaskSupport::kForbidden, {{"name", {{"type", "string"}}}}) {}
  json Call(const json& arguments, const ToolCallContext&) override {
    return Text("Hello, " + arguments.value("name", std::string("world")) + "!");
  }
};

class SlowCompute : public FixtureTool {
 public:
  SlowCompute()
      : FixtureTool("slow_compute", TaskSupport::kOptional,
                    {{"seconds", {{"type", "integer"}}}, {"label", {{"type", "string"}}}}) {}
  json Call(const json& arguments, const ToolCallContext& context) override {
    const json seconds = arguments.value("seconds", json(0));
    const int ms = seconds.is_number() ? std::clamp(static_cast<int>(seconds.get<double>() * 1000), 0, 600'000) : 0;
    if (CancelledWithin(context, ms)) return mcpexec::mcp::ToolError("cancelled");
    return Text("computed " + arguments.value("label", std::string()) + " in " +
                std::to_string(ms) + " ms");
  }
};

class FailingJob : public FixtureTool {
 public:
  FailingJob() : FixtureTool("failing_job", TaskSupport::kRequired, json::object()) {}
  json Call(const json&, const ToolCallContext& context) override {
    if (CancelledWithin(context, 1000)) return mcpexec::mcp::ToolError("cancelled");
    return mcpexec::mcp::ToolError("failing_job failed, as it always does");
  }
};

class ProtocolErrorJob : public FixtureTool {
 public:
  ProtocolErrorJob() : FixtureTool("protocol_error_job", TaskSupport::kOptional, json::object()) {}
  json Call(const json&, const ToolCallContext&) override {
    throw std::runtime_error("protocol_error_job: the tool broke");
  }
};

// An elicitation request with one field of `type`, as inputRequests holds it.
json Ask(const std::string& message, const std::string& field, const std::string& type) {
  const json schema = {{"type", "object"},
                       {"properties", {{field, {{"type", type}}}}},
                       {"required", json::array({field})}};
  return {{"method", "elicitation/create"},
          {"params", {{"mode", "form"}, {"message", message}, {"requestedSchema", schema}}}};
}

// What the client answered for `key`, field `field` of its content, as text.
std::string Answered(const json& answers, const std::string& key, const std::string& field) {
  const json* content = nullptr;
  if (answers.is_object() && answers.contains(key) && answers[key].is_object() &&
      answers[key].contains("content")) {
    content = &answers[key]["content"];
  }
  if (content == nullptr || !content->is_object() || !content->contains(field)) return "(none)";
  const json& value = (*content)[field];
  return value.is_string() ? value.get<std::string>() : value.dump();
}

class ConfirmDelete : public FixtureTool {
 public:
  ConfirmDelete()
      : FixtureTool("confirm_delete", TaskSupport::kOptional, {{"filename", {{"type", "string"}}}}) {}
  json Call(const json& arguments, const ToolCallContext& context) override {
    if (!context.request_input) return mcpexec::mcp::ToolError("confirm_delete asks as a task only");
    const std::string file = arguments.value("filename", std::string("?"));
    auto answers = context.request_input({{"confirm", Ask("Delete " + file + "?", "confirm", "boolean")}});
    if (!answers) return mcpexec::mcp::ToolError("cancelled");
    return Text("confirm for " + file + ": " + Answered(*answers, "confirm", "confirm"));
  }
};

class MultiInput : public FixtureTool {
 public:
  MultiInput() : FixtureTool("multi_input", TaskSupport::kOptional, json::object()) {}
  json Call(const json&, const ToolCallContext& context) override {
    if (!context.request_input) return mcpexec::mcp::ToolError("multi_input asks as a task only");
    auto answers = context.request_input({{"name", Ask("Your name?", "name", "string")},
                                          {"confirm", Ask("Go on?", "confirm", "boolean")}});
    if (!answers) return mcpexec::mcp::ToolError("cancelled");
    return Text("name " + Answered(*answers, "name", "name") + ", confirm " +
                Answered(*answers, "confirm", "confirm"));
  }
};

class ToolWithTask : public FixtureTool {
 public:
  ToolWithTask() : FixtureTool("test_tool_with_task", TaskSupport::kOptional, json::object()) {}
  json InputNeeded(const json&, const json& responses) const override {
    if (responses.is_object() && responses.contains("user_name")) return nullptr;
    return {{"user_name", Ask("Your name?", "name", "string")}};
  }
  json Call(const json&, const ToolCallContext& context) override {
    return Text("Hello, " + Answered(context.input_responses, "user_name", "name") + "!");
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mcp-exec serve with the conformance suite's fixture tools"};
  app.require_subcommand(1);
  mcpexec::cli::ServeOptions options;
  mcpexec::cli::AddServeCommand(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  options.extra_tools = {std::make_shared<Greet>(), std::make_shared<SlowCompute>(),
                         std::make_shared<FailingJob>(), std::make_shared<ProtocolErrorJob>(),
                         std::make_shared<ConfirmDelete>(), std::make_shared<MultiInput>(),
                         std::make_shared<ToolWithTask>()};
  const int status =
      mcpexec::cli::ServeCommand(mcpexec::cli::kDefaultRootfs, "conformance-fixtures", options);
  mcpexec::sandbox::Teardown::Shared().Drain();
  return status;
}
