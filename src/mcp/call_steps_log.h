// The debug line of a tool call's steps (base/call_steps.h): msg "call steps", with the time
// each step took in microseconds, one field per step. Written by whichever thread holds the
// call's record once its reply is written (or, on HTTP, queued for the connection);
// only at MCP_EXEC_LOG_LEVEL=debug, where the transports make records.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>

#include "base/call_steps.h"

namespace mcpexec::mcp {

// A record for a request whose text was read just now (kRead marked), when debug lines are on;
// nullopt otherwise, so that a transport builds nothing for its requests then.
std::optional<CallSteps> StartCallSteps();

// The line's fields: "tool", "session" and "request_id"; "sandbox" once the run had one; and
// each step's duration in whole microseconds, named after the step it ends:
//   parse_us      the request read -> parsed (kRead -> kParsed)
//   dispatch_us   parsed -> handed to the worker pool: method table, tools/call's params,
//                 the call registered (-> kQueued)
//   queue_us      waiting for a worker (-> kStarted)
//   validate_us   the tool's arguments read and checked, the environment and its engine
//                 chosen, a package layer prepared when asked (-> kValidated)
//   take_us       the run's sandbox had: a ready one taken, one forked or made (-> kTaken)
//   send_us       the program and its files written into the sandbox, `G` sent (-> kSent)
//   run_us        the program's run, to the end init reports and the pipes' EOF (-> kEnded)
//   collect_us    outputs collected, the cgroup's accounting read, the result made, the
//                 sandbox's remains handed to the teardown (-> kCollected)
//   result_us     the tool's result assembled: metrics, the `exec` line, the content
//                 (-> kAnswered)
//   serialize_us  the JSON-RPC response made and serialized; held back first when a progress
//                 notification went out less than 25 ms before (-> kSerialized)
//   write_us      to the reply's write(2): stdio's line, by its sender, or by the writer
//                 thread after a hand-off (-> kWriting). The write itself is not counted:
//                 the line's steps end within the client's wait.
// A step whose start or end was not marked is left out, never 0: HTTP has no write_us (the
// connection writes the reply after the line); a call that failed early has only the steps
// it went through.
nlohmann::json CallStepsFields(const CallSteps& steps);

// Writes the line for `steps`, unless it is no tool call's (no tool named) or was handed off
// to another thread, which writes it.
void LogCallSteps(const CallSteps& steps);

}  // namespace mcpexec::mcp
