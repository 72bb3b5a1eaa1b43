// Test doubles for the MCP server: a sink that records what it is sent, and a tool that echoes,
// blocks until cancelled or released, reports progress and logs, as its arguments say.
#pragma once

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/unique_fd.h"
#include "mcp/server.h"

namespace mcpexec::mcp {

class RecordingSink : public MessageSink {
 public:
  bool OpenAfterFinal() const override { return true; }  // as stdio
  bool Send(const nlohmann::json& message, bool final) override {
    std::lock_guard lock(mu_);
    messages_.push_back(message);
    at_.push_back(std::chrono::steady_clock::now());
    finals_ += final ? 1 : 0;
    cv_.notify_all();
    return true;
  }
  // Waits for `n` final messages; returns every message received so far.
  std::vector<nlohmann::json> WaitFinals(
      int n, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return finals_ >= n; });
    return messages_;
  }
  std::vector<nlohmann::json> Messages() {
    std::lock_guard lock(mu_);
    return messages_;
  }
  // When each message was sent.
  std::vector<std::chrono::steady_clock::time_point> Times() {
    std::lock_guard lock(mu_);
    return at_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<nlohmann::json> messages_;
  std::vector<std::chrono::steady_clock::time_point> at_;
  int finals_ = 0;
};

// Echoes its arguments. {"progress_steps": N} reports progress N times first; {"block": true}
// makes it wait until it is cancelled or Release()d, after counting itself in WaitStarted(),
// then report {"progress_after": N} more;
// {"log": [{"level", "logger", "data"}, ...]} then sends those through context.log;
// {"padding": N} adds a string of N bytes to the result, as "padded";
// {"ask": {key: request, ...}} asks the client through context.request_input (counted in
// WaitStarted) and echoes the answers;
// {"after_response": N} hands N pieces of work to context.after_response, the i-th calling
// on_after_response(i).
// Its name and whether it runs as a task are the constructor's.
class FakeTool : public Tool {
 public:
  explicit FakeTool(TaskSupport tasks = TaskSupport::kForbidden, std::string name = "fake")
      : release_(eventfd(0, EFD_CLOEXEC)), tasks_(tasks), name_(std::move(name)) {}
  std::string Name() const override { return name_; }
  TaskSupport Tasks() const override { return tasks_; }
  nlohmann::json Definition() const override {
    return {{"name", name_}, {"inputSchema", {{"type", "object"}}}};
  }
  nlohmann::json Call(const nlohmann::json& arguments, const ToolCallContext& context) override {
    const int steps = arguments.value("progress_steps", 0);
    for (int i = 0; i < steps; ++i) {
      if (context.report_progress) context.report_progress(i + 1, "step");
    }
    if (arguments.value("block", false)) {
      Count(started_);
      pollfd fds[2] = {{context.cancel_fd, POLLIN, 0}, {release_.Get(), POLLIN, 0}};
      poll(fds, 2, 10000);  // bounded: a broken test fails instead of hanging
      if (fds[0].revents != 0) {
        Count(cancelled_);
        return ToolError("cancelled");
      }
      const int after = arguments.value("progress_after", 0);
      for (int i = 0; i < after; ++i) {
        if (context.report_progress) context.report_progress(steps + i + 1, "after");
      }
    }
    for (const nlohmann::json& line : arguments.value("log", nlohmann::json::array())) {
      const auto level = ParseLogLevel(line["level"].get<std::string>());
      if (context.log && level) {
        context.log(*level, line["logger"].get<std::string>(), line["data"].get<std::string>());
      }
    }
    nlohmann::json echo = arguments;
    if (arguments.contains("padding")) {
      echo["padded"] = std::string(arguments["padding"].get<size_t>(), 'p');
    }
    if (arguments.contains("ask")) {
      if (!context.request_input) return ToolError("no input can be asked here");
      Count(started_);
      auto answers = context.request_input(arguments["ask"]);
      if (!answers) {
        Count(cancelled_);
        return ToolError("cancelled");
      }
      echo["answers"] = *answers;
    }
    if (!context.input_responses.is_null()) echo["input_responses"] = context.input_responses;
    for (int i = 0; i < arguments.value("after_response", 0); ++i) {
      if (!context.after_response) return ToolError("no work can be handed over here");
      context.after_response([this, i] { on_after_response(i); });
    }
    return {{"content", nlohmann::json::array()}, {"structuredContent", echo}, {"isError", false}};
  }

  // {"need_input": true}: asks for "who" before it runs, until the call carries an answer.
  nlohmann::json InputNeeded(const nlohmann::json& arguments,
                             const nlohmann::json& responses) const override {
    if (!arguments.value("need_input", false)) return nullptr;
    if (responses.is_object() && responses.contains("who")) return nullptr;
    return {{"who", {{"method", "elicitation/create"}, {"params", {{"message", "who?"}}}}}};
  }

  // Waits (up to 5 s) until `n` calls have blocked, or have been cancelled; true when they have.
  bool WaitStarted(int n) { return WaitFor(started_, n); }
  bool WaitCancelled(int n) { return WaitFor(cancelled_, n); }
  int Cancelled() {
    std::lock_guard lock(mu_);
    return cancelled_;
  }
  // What the work a call hands over ({"after_response": N}) does; set before the call.
  std::function<void(int)> on_after_response = [](int) {};
  // Lets every blocked call (and every later one) return.
  void Release() {
    const uint64_t one = 1;
    ASSERT_EQ(write(release_.Get(), &one, sizeof one), 8);
  }

 private:
  void Count(int& counter) {
    std::lock_guard lock(mu_);
    ++counter;
    cv_.notify_all();
  }
  bool WaitFor(int& counter, int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return counter >= n; });
  }

  UniqueFd release_;
  const TaskSupport tasks_;
  const std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;
  int started_ = 0;
  int cancelled_ = 0;
};

}  // namespace mcpexec::mcp
