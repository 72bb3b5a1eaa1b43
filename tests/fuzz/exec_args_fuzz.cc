// The `exec` tool's arguments: the input is the JSON of tools/call's "arguments", given to
// ExecTool::Call as the server would. The call's cancel descriptor is already readable, so a
// valid request stops at "cancelled before it started", after ReadArguments and
// ValidateRequest and before anything is launched; the tool has no launch plan at all.
#include <sys/eventfd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "exec/exec_tool.h"

namespace {

using nlohmann::json;

mcpexec::exec::ExecTool& Tool() {
  static auto* tool = [] {
    auto config = mcpexec::config::Defaults("/nonexistent-rootfs");
    config.max_stdin_bytes = 64;  // so that inputs of the fuzzer's size can exceed it
    config.max_input_files = 3;  // likewise for the files argument
    config.max_input_file_bytes = 16;
    config.workspace_bytes = 64 << 10;
    return new mcpexec::exec::ExecTool(config, nullptr);
  }();
  return *tool;
}

int CancelledFd() {
  static const int fd = [] {
    const int fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) abort();
    return fd;
  }();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto arguments = json::parse(data, data + size, nullptr, false);
  if (arguments.is_discarded()) return 0;
  mcpexec::mcp::ToolCallContext context;
  context.session_id = "fuzz";
  context.request_id = "1";
  context.cancel_fd = CancelledFd();
  const json result = Tool().Call(arguments, context);
  // Whatever the arguments, the result is a tool error: invalid arguments, or cancelled.
  if (!result.is_object() || result.value("isError", false) != true) abort();
  const std::string text = result["content"][0].value("text", "");
  if (text.rfind("invalid arguments: ", 0) != 0 && text != "cancelled before it started") abort();
  return 0;
}
