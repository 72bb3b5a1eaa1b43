// JSON-RPC framing and dispatch, as both transports feed the server: the input as the body of
// one HTTP POST (jsonrpc::Parse, then Session::Handle on an initialized session), as the body of
// a stateless-revision POST (its metadata headers checked against it, then a session of its own
// with no handshake), and the same bytes as newline-delimited messages on stdin (ServeStdio,
// reading a memfd, writing /dev/null).
// The server has one fake tool that echoes its arguments: no sandbox is ever launched.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "base/base64.h"
#include "jsonrpc/message.h"
#include "mcp/server.h"
#include "mcp/transport/http_metadata.h"
#include "mcp/transport/stdio.h"

namespace {

using nlohmann::json;
using namespace mcpexec;

class NullSink : public mcp::MessageSink {
 public:
  bool Send(const json& message, bool) override {
    // What the transports do with every message: serialize it.
    (void)jsonrpc::Serialize(message);
    return true;
  }
};

class EchoTool : public mcp::Tool {
 public:
  std::string Name() const override { return "fake"; }
  json Definition() const override {
    return {{"name", "fake"}, {"inputSchema", {{"type", "object"}}}};
  }
  json Call(const json& arguments, const mcp::ToolCallContext& context) override {
    if (context.report_progress) context.report_progress(1, "echo");
    return {{"content", json::array({{{"type", "text"}, {"text", arguments.dump()}}})},
            {"structuredContent", arguments},
            {"isError", false}};
  }
};

mcp::Server& TheServer() {
  static auto* pool = new mcp::WorkerPool(1, 64);
  static auto* server = new mcp::Server({"mcp-exec", "0.0.0-fuzz", ""},
                                        {std::make_shared<EchoTool>()}, *pool);
  return *server;
}

constexpr std::string_view kInitialize =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
    R"("capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}})";
constexpr std::string_view kInitialized = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";

void HttpBody(std::string_view body) {
  auto session = TheServer().NewSession("fuzz-http");
  auto sink = std::make_shared<NullSink>();
  session->Handle(kInitialize, sink);
  session->Handle(kInitialized, sink);
  session->Handle(jsonrpc::Parse(body), sink);
  session->Close();
}

// As PostStateless takes it: the headers a conforming client mirrors from the body (Mcp-Name
// in the base64 sentinel form for inputs of odd length), checked against it, then a session of
// its own. The whole input also goes through the sentinel decoder as a header value.
void StatelessBody(std::string_view body) {
  (void)mcp::transport::DecodeHeaderValue(body);
  jsonrpc::Incoming incoming = jsonrpc::Parse(body);
  if (const auto* request = std::get_if<jsonrpc::Request>(&incoming)) {
    std::string name = request->params.is_object() && request->params.contains("name") &&
                               request->params["name"].is_string()
                           ? request->params["name"].get<std::string>()
                           : std::string();
    if (body.size() % 2) name = "=?base64?" + Base64Encode(name) + "?=";
    (void)mcp::transport::MetadataMismatch({"2026-07-28", request->method, name}, *request);
  }
  auto session = TheServer().NewSession("");
  session->Handle(std::move(incoming), std::make_shared<NullSink>());
  session->Close();
}

void StdioLines(std::string_view lines, size_t max_message_bytes) {
  static const int out_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  const int in_fd = memfd_create("fuzz-stdin", MFD_CLOEXEC);
  if (in_fd < 0 || out_fd < 0) abort();
  size_t done = 0;
  while (done < lines.size()) {
    const ssize_t n = write(in_fd, lines.data() + done, lines.size() - done);
    if (n <= 0) abort();
    done += static_cast<size_t>(n);
  }
  if (lseek(in_fd, 0, SEEK_SET) != 0) abort();
  (void)mcp::ServeStdio(TheServer(), in_fd, out_fd, max_message_bytes);
  close(in_fd);
}

}  // namespace

// The message that used to crash the server (issue 11, finding 1): 200,000 nested arrays in the
// params. Too large for a seed file, so it runs once here, through both paths, at start-up.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::string deep = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":)";
  deep.append(200000, '[');
  deep.append(200000, ']');
  deep += "}";
  HttpBody(deep);
  StatelessBody(deep);
  StdioLines(deep + "\n", 1 << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  HttpBody(input);
  StatelessBody(input);
  // A small line limit too, so that the too-long-line path (-32600, then skipping to the next
  // newline) is reached by inputs of the fuzzer's size.
  StdioLines(input, size % 2 ? 1 << 20 : 256);
  return 0;
}
