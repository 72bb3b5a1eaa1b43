// TextWriter: the Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/). Written here rather than taken
// from prometheus-cpp: Debian ships its core only as a shared library built against the shared
// libstdc++, and its serializer takes a std::ostream, an object of our statically linked
// libstdc++, across into that other runtime (HACKING.md, "Source layout").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcpexec::metrics {

// The Content-Type of a scrape's body.
inline constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Label names and values, in the order they are written.
using Labels = std::vector<std::pair<std::string, std::string>>;

enum class Type { kCounter, kGauge, kHistogram };

// Builds one exposition. Not thread-safe: one writer per scrape. Names are the caller's
// constants, checked by the tests (promtool), not here; label values are escaped.
class TextWriter {
 public:
  // Starts a family: its HELP and TYPE lines. Every sample that follows belongs to it.
  void Family(std::string_view name, std::string_view help, Type type);
  // One sample line: `name{labels} value`.
  void Sample(std::string_view name, const Labels& labels, double value);
  void Sample(std::string_view name, const Labels& labels, uint64_t value);
  void Sample(std::string_view name, double value) { Sample(name, {}, value); }
  void Sample(std::string_view name, uint64_t value) { Sample(name, {}, value); }

  // The text so far; the writer is empty afterwards.
  std::string Take() { return std::exchange(out_, std::string()); }

 private:
  void Name(std::string_view name, const Labels& labels);

  std::string out_;
};

// A sample value as the format spells it: integers without a fraction, "+Inf", "-Inf", "NaN".
std::string FormatValue(double value);

}  // namespace mcpexec::metrics
