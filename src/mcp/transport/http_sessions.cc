#include "mcp/transport/http_sessions.h"

#include "log/log.h"

namespace mcpexec::mcp::transport {

SessionTable::SessionTable(size_t max_sessions, std::chrono::milliseconds idle_timeout, Now now)
    : max_sessions_(max_sessions), idle_timeout_(idle_timeout), now_(std::move(now)) {}

void SessionTable::Close(Entry& entry) {
  for (auto& weak : entry.replies) {
    if (auto reply = weak.lock()) reply->Abort();
  }
  entry.session->Close();
}

bool SessionTable::Add(const std::string& id, std::shared_ptr<Session> session,
                       std::shared_ptr<MessageQueue> stream) {
  const auto now = now_();
  std::vector<Entry> expired;
  bool added = false;
  {
    std::lock_guard lock(mu_);
    if (sessions_.size() >= max_sessions_) {
      for (auto it = sessions_.begin(); it != sessions_.end();) {
        Entry& e = it->second;
        std::erase_if(e.replies, [](const auto& weak) { return weak.expired(); });
        if (!e.stream && e.replies.empty() && now - e.last_used >= idle_timeout_) {
          expired.push_back(std::move(e));
          it = sessions_.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (sessions_.size() < max_sessions_ && !sessions_.contains(id)) {
      sessions_.emplace(id, Entry{std::move(session), std::move(stream), now, {}});
      added = true;
    }
  }
  // Closing cancels runs: outside the lock, like every call into a Session.
  for (Entry& e : expired) Close(e);
  if (!expired.empty()) {
    log::Info("idle http sessions closed to make room", {{"count", expired.size()}});
  }
  if (!added) log::Warn("too many http sessions", {{"max_sessions", max_sessions_}});
  return added;
}

std::shared_ptr<Session> SessionTable::Find(const std::string& id, Kind kind,
                                            std::shared_ptr<MessageQueue>* stream) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || (kind == Kind::kLegacy) != (it->second.stream != nullptr)) {
    return nullptr;
  }
  it->second.last_used = now_();
  if (stream) *stream = it->second.stream;
  return it->second.session;
}

bool SessionTable::TrackReply(const std::string& id, const std::shared_ptr<MessageQueue>& reply,
                              size_t max_open) {
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it != sessions_.end()) {
      auto& replies = it->second.replies;
      std::erase_if(replies, [](const auto& weak) { return weak.expired(); });
      if (replies.size() >= max_open) return false;
      replies.push_back(reply);
      return true;
    }
  }
  reply->Abort();  // deleted while the request was being handled
  return true;
}

bool SessionTable::Remove(const std::string& id) {
  Entry entry;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return false;
    entry = std::move(it->second);
    sessions_.erase(it);
  }
  Close(entry);
  return true;
}

size_t SessionTable::CloseAll() {
  std::map<std::string, Entry> all;
  {
    std::lock_guard lock(mu_);
    all.swap(sessions_);
  }
  for (auto& [id, entry] : all) Close(entry);
  return all.size();
}

size_t SessionTable::Size() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

size_t SessionTable::Count(Kind kind) const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, entry] : sessions_) n += (entry.stream != nullptr) == (kind == Kind::kLegacy);
  return n;
}

}  // namespace mcpexec::mcp::transport
