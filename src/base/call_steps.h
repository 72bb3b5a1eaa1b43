// CallSteps: when each step of one tool call happened, from its request read to its reply
// written out (steady_clock, CLOCK_MONOTONIC), for the debug line that says where a call's time
// goes (mcp/call_steps_log.h; docs/engine.md#where-a-call-spends-its-time). A record is made
// only when that line is wanted (MCP_EXEC_LOG_LEVEL=debug).
//
// Why a thread-local slot rather than a record passed down: the steps happen in layers that
// know nothing of each other (a transport reads and writes, the MCP server dispatches, the
// exec tool validates, an engine takes a sandbox, the supervisor runs it), behind interfaces
// that every implementation and test shares (Session::Handle, Tool::Call, Engine::Run,
// Sandbox::Run, MessageSink::Send). A parameter for a debug line would run through all of
// them. Instead, while a thread works on a call, the call's record sits in that thread's slot
// (CallStepsScope), and each layer marks its step there without knowing who reads it. The
// record belongs to the call, not to the thread: its owner holds it as a value, and where the
// call moves to another thread (the worker pool's queue, the stdio writer's queue), the code
// that moves it copies the record along (HandOffSteps). With no record in the slot (debug
// off, or a thread that serves no call: a refill thread, the zygote's) a mark is a load and a
// branch. Nothing between clone and execve marks: the child never touches the slot.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace mcpexec {

// A call's steps, in the order they happen. Each is the moment the step before it ends.
enum class Step : uint8_t {
  kRead,        // the request's text is whole: its line read (stdio), its body (HTTP)
  kParsed,      // its JSON parsed and classified as a JSON-RPC message
  kQueued,      // dispatched: the method's checks passed, the call handed to the worker pool
  kStarted,     // a worker starts the call
  kValidated,   // the tool has checked its arguments and asks its engine for the run
  kTaken,       // the run has its sandbox (CallSteps::sandbox says how)
  kSent,        // the program is in the sandbox, told to start
  kEnded,       // the sandbox reported the run's end, its output pipes closed
  kCollected,   // outputs and accounting read, the run's result made
  kAnswered,    // the tool's result assembled: Tool::Call returned
  kSerialized,  // the reply's text made, by the transport
  // The reply's writing begins: stdio's line handed to write(2), from which moment its client
  // may have it. The write's end is not a step: the writing thread may run again only after
  // the client has read the line, and a call's steps end within what its client waits.
  kWriting,
};
inline constexpr size_t kStepCount = static_cast<size_t>(Step::kWriting) + 1;

struct CallSteps {
  using Clock = std::chrono::steady_clock;

  // When each step happened; the clock's epoch for a step not reached (or not measured here).
  std::array<Clock::time_point, kStepCount> at{};
  // How the run got its sandbox at kTaken (a static string): "ready" (prepared ahead),
  // "forked" (from the zygote, on the request path), "cold" (made for it), "session" (a
  // session's); null before.
  const char* sandbox = nullptr;
  // Copied to the thread the call moved to, which reports it: none is reported from here.
  bool handed_off = false;
  // What the report names: set once the server knows the request is a tool call.
  std::string tool;
  std::string session;
  std::string request_id;

  bool Reached(Step step) const { return at[static_cast<size_t>(step)] != Clock::time_point(); }
  Clock::time_point At(Step step) const { return at[static_cast<size_t>(step)]; }
};

namespace call_steps_internal {
// The calling thread's record, or null: what CallStepsScope sets.
extern constinit thread_local CallSteps* current;
}  // namespace call_steps_internal

// The calling thread's record, or null.
inline CallSteps* CurrentSteps() { return call_steps_internal::current; }

// Marks `step` now in the calling thread's record; nothing when it has none.
inline void MarkStep(Step step) {
  if (CallSteps* steps = call_steps_internal::current) {
    steps->at[static_cast<size_t>(step)] = CallSteps::Clock::now();
  }
}

// Marks kTaken, the run's sandbox had `how` (a static string: see CallSteps::sandbox).
inline void MarkTaken(const char* how) {
  if (CallSteps* steps = call_steps_internal::current) {
    steps->sandbox = how;
    steps->at[static_cast<size_t>(Step::kTaken)] = CallSteps::Clock::now();
  }
}

// A copy of the calling thread's record, for the thread the call moves to, which reports it;
// the original is marked handed off. nullopt when the thread has none.
std::optional<CallSteps> HandOffSteps();

// Puts a record in the calling thread's slot for the scope's life, and puts back what was
// there before at its end. The record must outlive the scope. Not copyable.
class CallStepsScope {
 public:
  explicit CallStepsScope(CallSteps* steps) : previous_(call_steps_internal::current) {
    call_steps_internal::current = steps;
  }
  // The record `steps` holds, if any.
  explicit CallStepsScope(std::optional<CallSteps>& steps)
      : CallStepsScope(steps ? &*steps : nullptr) {}
  ~CallStepsScope() { call_steps_internal::current = previous_; }
  CallStepsScope(const CallStepsScope&) = delete;
  CallStepsScope& operator=(const CallStepsScope&) = delete;

 private:
  CallSteps* const previous_;
};

}  // namespace mcpexec
