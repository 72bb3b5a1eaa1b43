// JSON-RPC 2.0 messages: parsing and classifying one incoming message, and building responses.
// No I/O and no MCP knowledge.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace mcpexec::jsonrpc {

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

// A request id: a string or an integer (JSON-RPC also allows null, which MCP forbids).
using Id = nlohmann::json;

struct Request {
  Id id;
  std::string method;
  nlohmann::json params;  // an object, an array, or null when absent
};

struct Notification {
  std::string method;
  nlohmann::json params;
};

// A response the peer sent us (MCP servers receive these only for their own requests).
struct Response {
  Id id;
  nlohmann::json body;  // the whole message
};

// What an incoming text was. `Invalid` carries the error response to send back (with the
// request's id when it could be read, else null).
struct Invalid {
  nlohmann::json error_response;
};

using Incoming = std::variant<Request, Notification, Response, Invalid>;

// How deeply arrays and objects may nest in one message, the message object itself counting as
// one level. MCP messages need a handful; the limit keeps a hostile message from exhausting the
// stack of code that walks values recursively (copies, serialization, schema checks).
inline constexpr int kMaxNesting = 64;

// Classifies one message. Never throws: malformed JSON gives -32700, a well-formed value that
// is not a JSON-RPC 2.0 message gives -32600, and so does one nested deeper than kMaxNesting
// (refused before it is parsed). Batches (arrays) are not part of MCP since 2025-06-18 and are
// answered with -32600.
Incoming Parse(std::string_view text);

nlohmann::json MakeResult(const Id& id, nlohmann::json result);
nlohmann::json MakeError(const Id& id, int code, std::string message,
                         std::optional<nlohmann::json> data = std::nullopt);
nlohmann::json MakeNotification(std::string method, nlohmann::json params);

// True for a message that is a response (has an id and a result or an error).
bool IsResponse(const nlohmann::json& message);

// Serializes without throwing: invalid UTF-8 in strings is replaced with U+FFFD.
std::string Serialize(const nlohmann::json& message);

}  // namespace mcpexec::jsonrpc
