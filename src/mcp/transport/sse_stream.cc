#include "mcp/transport/sse_stream.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "base/call_steps.h"
#include "jsonrpc/message.h"

namespace mcpexec::mcp::transport {

Result<std::shared_ptr<MessageQueue>> MessageQueue::Create(size_t max_pending_bytes,
                                                           size_t max_queued_bytes) {
  UniqueFd event(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!event.Valid()) return Errno(ErrorCode::kResourceExhausted, "eventfd");
  return std::shared_ptr<MessageQueue>(
      new MessageQueue(std::move(event), max_pending_bytes, max_queued_bytes));
}

MessageQueue::MessageQueue(UniqueFd event, size_t max_pending_bytes, size_t max_queued_bytes)
    : event_(std::move(event)),
      max_pending_bytes_(max_pending_bytes),
      max_queued_bytes_(max_queued_bytes) {}

void MessageQueue::Signal() {
  const uint64_t one = 1;
  // Only EAGAIN (counter saturated, i.e. already readable) can fail here.
  (void)!write(event_.Get(), &one, sizeof one);
}

bool MessageQueue::Push(std::string message, Kind kind) {
  std::lock_guard lock(mu_);
  if (final_pushed_ || aborted_) return false;
  if (kind == Kind::kNotification && pending_bytes_ + message.size() > max_pending_bytes_) {
    return false;
  }
  if (!pending_.empty() && pending_bytes_ + message.size() > max_queued_bytes_) {
    aborted_ = overflowed_ = true;
    pending_.clear();
    pending_bytes_ = 0;
    Signal();
    return false;
  }
  pending_bytes_ += message.size();
  pending_.push_back(std::move(message));
  if (kind == Kind::kFinalResponse) final_pushed_ = true;
  Signal();
  return true;
}

void MessageQueue::Abort() {
  std::lock_guard lock(mu_);
  if (aborted_ || final_pushed_) return;
  aborted_ = true;
  Signal();
}

bool MessageQueue::Overflowed() const {
  std::lock_guard lock(mu_);
  return overflowed_;
}

MessageQueue::Batch MessageQueue::Take() {
  std::lock_guard lock(mu_);
  uint64_t count = 0;
  (void)!read(event_.Get(), &count, sizeof count);
  Batch batch;
  batch.messages.swap(pending_);
  pending_bytes_ = 0;
  batch.final = final_pushed_ && !final_taken_ && !batch.messages.empty();
  if (batch.final) final_taken_ = true;
  batch.aborted = aborted_;
  return batch;
}

std::optional<std::string> MessageQueue::TakeLoneFinal(
    const std::function<bool(std::string_view)>& wanted) {
  std::lock_guard lock(mu_);
  if (!final_pushed_ || final_taken_ || pending_.size() != 1 || !wanted(pending_.front())) {
    return std::nullopt;
  }
  uint64_t count = 0;
  (void)!read(event_.Get(), &count, sizeof count);
  final_taken_ = true;
  pending_bytes_ = 0;
  std::string message = std::move(pending_.front());
  pending_.clear();
  return message;
}

bool QueueSink::Send(const nlohmann::json& message, bool final) {
  if (mode_ == SinkMode::kRequestJson && !final) return false;  // room for one message alone
  MessageQueue::Kind kind = MessageQueue::Kind::kNotification;
  if (final) {
    kind = mode_ == SinkMode::kSessionStream ? MessageQueue::Kind::kResponse
                                             : MessageQueue::Kind::kFinalResponse;
  } else if (jsonrpc::IsResponse(message)) {
    kind = MessageQueue::Kind::kResponse;
  }
  std::string text = jsonrpc::Serialize(message);
  if (final) MarkStep(Step::kSerialized);
  return queue_->Push(std::move(text), kind);
}

std::string SseEvent(std::string_view name, std::string_view data) {
  std::string out;
  out.reserve(name.size() + data.size() + 24);
  out.append("event: ").append(name).append("\n");
  // A line break inside data would end the field; split into data lines, which the client joins
  // back with "\n". Serialized JSON has none, but an endpoint URI or a future payload might.
  while (true) {
    const size_t nl = data.find_first_of("\r\n");
    out.append("data: ").append(data.substr(0, nl)).append("\n");
    if (nl == std::string_view::npos) break;
    const size_t skip = (data[nl] == '\r' && nl + 1 < data.size() && data[nl + 1] == '\n') ? 2 : 1;
    data.remove_prefix(nl + skip);
  }
  out.append("\n");
  return out;
}

}  // namespace mcpexec::mcp::transport
