#include "mcp/subscriptions.h"

#include "jsonrpc/message.h"
#include "mcp/protocol.h"

namespace mcpexec::mcp {
namespace {

using nlohmann::json;

const std::string kSubscriptionId(kMetaSubscriptionId);

}  // namespace

std::variant<uint64_t, Subscriptions::Refusal> Subscriptions::Open(Listen listen) {
  Stream stream;
  stream.caller = std::move(listen.caller);
  stream.request_id = std::move(listen.request_id);
  stream.sink = std::move(listen.sink);
  stream.closing_result = std::move(listen.closing_result);
  json ack = {{"notifications", std::move(listen.honored)}};
  ack["_meta"][kSubscriptionId] = stream.request_id;

  std::lock_guard lock(mu_);
  if (stopping_) return Refusal::kStopping;
  const auto count = per_caller_.find(stream.caller);
  if (count != per_caller_.end() && count->second >= kMaxPerCaller) return Refusal::kTooMany;
  bool sent = stream.sink->Send(
      jsonrpc::MakeNotification("notifications/subscriptions/acknowledged", std::move(ack)), false);
  // Each state is read under the lock, which TaskChanged takes too: a change after it is sent
  // after it, and one it already shows is not sent again.
  for (const auto& task : listen.tasks) {
    if (!sent) break;
    const TaskView view = task->View(kMaxInlineBytes);
    stream.sent[view.id] = view.version;
    sent = SendTask(stream, task_params_(view, view.payload_bytes <= kMaxInlineBytes));
  }
  if (!sent) return Refusal::kDropped;
  ++per_caller_[stream.caller];
  const uint64_t handle = ++next_handle_;
  open_.emplace(handle, std::move(stream));
  return handle;
}

void Subscriptions::Close(uint64_t handle) {
  std::shared_ptr<MessageSink> sink;  // released without the lock: it may own a reply queue
  std::lock_guard lock(mu_);
  auto it = open_.find(handle);
  if (it == open_.end()) return;
  if (--per_caller_[it->second.caller] == 0) per_caller_.erase(it->second.caller);
  sink = std::move(it->second.sink);
  open_.erase(it);
}

void Subscriptions::TaskChanged(const std::string& owner, const TaskView& view) {
  // Made once, without the lock, whoever listens.
  const json params = task_params_(view, view.payload_bytes <= kMaxInlineBytes);
  std::vector<Stream> dropped;
  {
    std::lock_guard lock(mu_);
    for (auto it = open_.begin(); it != open_.end();) {
      Stream& stream = it->second;
      auto sent = stream.sent.find(view.id);
      if (stream.caller != owner || sent == stream.sent.end() || sent->second >= view.version) {
        ++it;
        continue;
      }
      sent->second = view.version;
      if (SendTask(stream, params)) {
        ++it;
        continue;
      }
      if (--per_caller_[stream.caller] == 0) per_caller_.erase(stream.caller);
      dropped.push_back(std::move(stream));
      it = open_.erase(it);
    }
  }
  for (const Stream& stream : dropped) AnswerDropped(stream);
}

void Subscriptions::EndAll() {
  std::map<uint64_t, Stream> ended;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    ended.swap(open_);
    per_caller_.clear();
  }
  for (auto& [handle, stream] : ended) {
    json result = std::move(stream.closing_result);
    result["_meta"][kSubscriptionId] = stream.request_id;
    stream.sink->Send(jsonrpc::MakeResult(stream.request_id, std::move(result)), true);
  }
}

size_t Subscriptions::OpenCount() const {
  std::lock_guard lock(mu_);
  return open_.size();
}

bool Subscriptions::SendTask(const Stream& stream, json params) {
  params["_meta"][kSubscriptionId] = stream.request_id;
  return stream.sink->Send(jsonrpc::MakeNotification("notifications/tasks", std::move(params)),
                           false);
}

void Subscriptions::AnswerDropped(const Stream& stream) {
  stream.sink->Send(
      jsonrpc::MakeError(stream.request_id, kSubscriptionFellBehind,
                         "the subscription ended: the client did not read its notifications "
                         "and one was dropped; listen again to be told each task as it is now",
                         json{{"_meta", {{kSubscriptionId, stream.request_id}}}}),
      true);
}

}  // namespace mcpexec::mcp
