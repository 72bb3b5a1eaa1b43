// The instruments behind /metrics: counters, counters by one label, and histograms. All are
// thread-safe; the server's threads record into them while a scrape writes them out.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/text_format.h"

namespace mcpexec::metrics {

class Counter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A counter per value of one label, e.g. requests by status code.
class LabeledCounter {
 public:
  // `preset` values are written (as 0) before anything is counted, so that rate() sees them
  // from the first scrape.
  explicit LabeledCounter(std::string label, std::vector<std::string> preset = {});

  void Add(std::string_view value, uint64_t n = 1);
  // 0 for a value never counted.
  uint64_t Value(std::string_view value) const;

  // The family's samples, in the order of the label's values.
  void Write(TextWriter& out, std::string_view name) const;

 private:
  const std::string label_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t, std::less<>> values_;
};

// Observations counted into cumulative buckets by upper bound, with their sum.
class Histogram {
 public:
  // `bounds` ascending; +Inf is added by Write().
  explicit Histogram(std::vector<double> bounds);

  void Observe(double value);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // per bound: observations <= it
    uint64_t count = 0;
    double sum = 0;
  };
  Snapshot Take() const;

  // `name`_bucket{le=...} (+Inf last), `name`_sum and `name`_count.
  void Write(TextWriter& out, std::string_view name) const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative
  uint64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace mcpexec::metrics
