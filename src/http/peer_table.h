// PeerTable: how many of something (connections, requests being served, event streams) each
// client address holds, against a cap. Thread-safe: whoever takes a slot may give it back on any
// thread, by destroying it.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace mcpexec::http {

class PeerTable {
 public:
  class Slot {
   public:
    Slot(PeerTable* table, std::string peer) : table_(table), peer_(std::move(peer)) {}
    Slot(Slot&& other) noexcept : table_(std::exchange(other.table_, nullptr)),
                                  peer_(std::move(other.peer_)) {}
    Slot& operator=(Slot&&) = delete;
    ~Slot() {
      if (table_ != nullptr) table_->Release(peer_);
    }

   private:
    PeerTable* table_;
    std::string peer_;
  };

  // A slot for one more from `peer`; nullopt when it holds `max` already.
  std::optional<Slot> Acquire(const std::string& peer, size_t max) {
    std::lock_guard lock(mu_);
    auto it = counts_.find(peer);
    const size_t count = it == counts_.end() ? 0 : it->second;
    if (count >= max) return std::nullopt;
    if (it == counts_.end()) {
      counts_.emplace(peer, 1);
    } else {
      ++it->second;
    }
    return Slot(this, peer);
  }

 private:
  void Release(const std::string& peer) {
    std::lock_guard lock(mu_);
    auto it = counts_.find(peer);
    if (it != counts_.end() && --it->second == 0) counts_.erase(it);
  }

  std::mutex mu_;
  std::unordered_map<std::string, size_t> counts_;
};

}  // namespace mcpexec::http
