#include "exec/live_output.h"

#include <algorithm>

#include "base/utf8.h"

namespace mcpexec::exec {
namespace {

using sandbox::Stream;

// "[stdout] " plus the line break that may precede it.
constexpr size_t kLabelCost = 10;
// "[18446744073709551615 bytes skipped]\n" is 38 bytes.
constexpr size_t kMarkerRoom = 40;

std::string_view Label(Stream stream) {
  return stream == Stream::kStdout ? "[stdout] " : "[stderr] ";
}

std::string Marker(uint64_t skipped) { return "[" + std::to_string(skipped) + " bytes skipped]\n"; }

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

LiveOutput::LiveOutput(size_t max_bytes)
    : budget_(std::max(max_bytes, kMarkerRoom + kLabelCost + 4) - kMarkerRoom) {}

void LiveOutput::Add(Stream stream, std::string_view bytes) {
  const size_t i = Index(stream);
  std::string& incomplete = incomplete_[i];
  // Only the newest budget_ bytes can be kept (repair never shortens text): drop the rest
  // before copying and repairing it, and with it any character the cut went through.
  if (bytes.size() > budget_) {
    const size_t drop = bytes.size() - budget_;
    size_t rest = 0;
    while (rest < 3 && drop + rest < bytes.size() && IsContinuation(bytes[drop + rest])) ++rest;
    skipped_[i] += incomplete.size() + drop + rest;
    incomplete.clear();
    bytes.remove_prefix(drop + rest);
  }
  incomplete.append(bytes);
  const size_t complete = Utf8CompleteLength(incomplete);
  if (complete == 0) return;
  std::string text = RepairUtf8(std::string_view(incomplete).substr(0, complete));
  incomplete.erase(0, complete);
  if (runs_.empty() || runs_.back().stream != stream) {
    runs_.push_back(Run{stream, std::string()});
    used_ += kLabelCost;
  }
  runs_.back().text += text;
  used_ += text.size();
  Trim();
}

// Drops the oldest text, on character boundaries, until the runs fit the budget.
void LiveOutput::Trim() {
  while (used_ > budget_ && !runs_.empty()) {
    Run& oldest = runs_.front();
    size_t cut = std::min(used_ - budget_, oldest.text.size());
    while (cut < oldest.text.size() && IsContinuation(oldest.text[cut])) ++cut;
    skipped_[Index(oldest.stream)] += cut;
    used_ -= cut;
    oldest.text.erase(0, cut);
    if (oldest.text.empty()) {
      used_ -= kLabelCost;
      runs_.pop_front();
    }
  }
}

LiveUpdate LiveOutput::Take(std::chrono::milliseconds elapsed, size_t output_bytes) {
  LiveUpdate update;
  // Two updates in the same millisecond would otherwise carry the same progress.
  update.progress = std::max(static_cast<double>(elapsed.count()) / 1000.0, progress_ + 0.001);
  progress_ = update.progress;
  const uint64_t skipped = skipped_[0] + skipped_[1];
  if (runs_.empty() && skipped == 0) {
    update.message = "running for " + std::to_string(elapsed.count() / 1000) + "." +
                     std::to_string(elapsed.count() % 1000 / 100) + " s, " +
                     std::to_string(output_bytes) + " bytes of output so far";
    return update;
  }
  if (skipped > 0) update.message = Marker(skipped);
  for (const Run& run : runs_) {
    if (!update.message.empty() && update.message.back() != '\n') update.message += '\n';
    update.message += Label(run.stream);
    update.message += run.text;
  }
  for (Stream stream : {Stream::kStdout, Stream::kStderr}) {
    const size_t i = Index(stream);
    bool wrote = skipped_[i] > 0;
    std::string text = wrote ? Marker(skipped_[i]) : std::string();
    for (const Run& run : runs_) {
      if (run.stream != stream) continue;
      text += run.text;
      wrote = true;
    }
    if (wrote) update.streams.push_back({stream, std::move(text)});
  }
  runs_.clear();
  used_ = 0;
  skipped_[0] = skipped_[1] = 0;
  return update;
}

}  // namespace mcpexec::exec
