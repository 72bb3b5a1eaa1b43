#include "metrics/instruments.h"

#include <algorithm>

namespace mcpexec::metrics {

LabeledCounter::LabeledCounter(std::string label, std::vector<std::string> preset)
    : label_(std::move(label)) {
  for (std::string& value : preset) values_.emplace(std::move(value), 0);
}

void LabeledCounter::Add(std::string_view value, uint64_t n) {
  std::lock_guard lock(mu_);
  auto it = values_.find(value);
  if (it == values_.end()) it = values_.emplace(std::string(value), 0).first;
  it->second += n;
}

uint64_t LabeledCounter::Value(std::string_view value) const {
  std::lock_guard lock(mu_);
  auto it = values_.find(value);
  return it == values_.end() ? 0 : it->second;
}

void LabeledCounter::Write(TextWriter& out, std::string_view name) const {
  std::map<std::string, uint64_t, std::less<>> values;
  {
    std::lock_guard lock(mu_);
    values = values_;
  }
  for (const auto& [value, count] : values) out.Sample(name, {{label_, value}}, count);
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}

void Histogram::Observe(double value) {
  const size_t bucket =
      static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  std::lock_guard lock(mu_);
  if (bucket < counts_.size()) ++counts_[bucket];
  ++count_;
  sum_ += value;
}

Histogram::Snapshot Histogram::Take() const {
  Snapshot s;
  s.bounds = bounds_;
  std::lock_guard lock(mu_);
  uint64_t running = 0;
  for (const uint64_t n : counts_) s.cumulative.push_back(running += n);
  s.count = count_;
  s.sum = sum_;
  return s;
}

void Histogram::Write(TextWriter& out, std::string_view name) const {
  const Snapshot s = Take();
  const std::string bucket = std::string(name) + "_bucket";
  for (size_t i = 0; i < s.bounds.size(); ++i) {
    out.Sample(bucket, {{"le", FormatValue(s.bounds[i])}}, s.cumulative[i]);
  }
  out.Sample(bucket, {{"le", "+Inf"}}, s.count);
  out.Sample(std::string(name) + "_sum", s.sum);
  out.Sample(std::string(name) + "_count", s.count);
}

}  // namespace mcpexec::metrics
