#include "jsonrpc/message.h"

namespace mcpexec::jsonrpc {
namespace {

bool ValidId(const nlohmann::json& id) {
  return id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

Invalid InvalidRequest(const nlohmann::json& id, std::string why) {
  return Invalid{MakeError(ValidId(id) ? id : nlohmann::json(nullptr), kInvalidRequest,
                           "Invalid Request: " + std::move(why))};
}

// True when arrays and objects nest deeper than kMaxNesting. Only brackets outside strings
// count; text that is not JSON is left to the parser to refuse.
bool NestsTooDeep(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNesting) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace

Incoming Parse(std::string_view text) {
  if (NestsTooDeep(text)) {
    return InvalidRequest(nullptr, "nested deeper than " + std::to_string(kMaxNesting) + " levels");
  }
  nlohmann::json msg = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (msg.is_discarded()) {
    return Invalid{MakeError(nullptr, kParseError, "Parse error: not valid JSON")};
  }
  if (msg.is_array()) return InvalidRequest(nullptr, "batches are not supported");
  if (!msg.is_object()) return InvalidRequest(nullptr, "a message must be a JSON object");
  const nlohmann::json id = msg.contains("id") ? msg["id"] : nlohmann::json();
  auto version = msg.find("jsonrpc");
  if (version == msg.end() || *version != "2.0") {
    return InvalidRequest(id, "\"jsonrpc\" must be \"2.0\"");
  }
  const bool has_id = msg.contains("id");
  if (has_id && !ValidId(id)) {
    return InvalidRequest(nullptr, "\"id\" must be a string or an integer");
  }
  auto method = msg.find("method");
  if (method == msg.end()) {
    if (has_id && (msg.contains("result") || msg.contains("error"))) {
      return Response{id, std::move(msg)};
    }
    return InvalidRequest(id, "no \"method\"");
  }
  if (!method->is_string()) return InvalidRequest(id, "\"method\" must be a string");
  nlohmann::json params;
  if (auto found = msg.find("params"); found != msg.end()) params = std::move(*found);
  if (!params.is_null() && !params.is_object() && !params.is_array()) {
    return InvalidRequest(id, "\"params\" must be an object or an array");
  }
  if (has_id) return Request{id, method->get<std::string>(), std::move(params)};
  return Notification{method->get<std::string>(), std::move(params)};
}

nlohmann::json MakeResult(const Id& id, nlohmann::json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

nlohmann::json MakeError(const Id& id, int code, std::string message,
                         std::optional<nlohmann::json> data) {
  nlohmann::json error = {{"code", code}, {"message", std::move(message)}};
  if (data) error["data"] = std::move(*data);
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

nlohmann::json MakeNotification(std::string method, nlohmann::json params) {
  nlohmann::json n = {{"jsonrpc", "2.0"}, {"method", std::move(method)}};
  if (!params.is_null()) n["params"] = std::move(params);
  return n;
}

bool IsResponse(const nlohmann::json& message) {
  return message.is_object() && message.contains("id") && !message.contains("method") &&
         (message.contains("result") || message.contains("error"));
}

std::string Serialize(const nlohmann::json& message) {
  return message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace mcpexec::jsonrpc
