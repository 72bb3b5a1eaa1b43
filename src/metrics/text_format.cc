#include "metrics/text_format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace mcpexec::metrics {
namespace {

const char* TypeName(Type type) {
  switch (type) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// HELP text escapes backslash and newline; label values also escape the double quote.
void Escape(std::string& out, std::string_view text, bool quote) {
  for (const char ch : text) {
    if (ch == '\\') {
      out += "\\\\";
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '"' && quote) {
      out += "\\\"";
    } else {
      out += ch;
    }
  }
}

}  // namespace

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[32];
  // Whole numbers as integers: %g would write 300 as 3e+02.
  if (std::fabs(value) < 1e15 && value == std::trunc(value)) {
    std::snprintf(text, sizeof text, "%.0f", value);
    return text;
  }
  // The shortest text that reads back as the same double: 0.005, not 0.0050000000000000001.
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

void TextWriter::Family(std::string_view name, std::string_view help, Type type) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  Escape(out_, help, false);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += TypeName(type);
  out_ += '\n';
}

void TextWriter::Name(std::string_view name, const Labels& labels) {
  out_ += name;
  if (labels.empty()) return;
  out_ += '{';
  bool first = true;
  for (const auto& [key, value] : labels) {
    if (!first) out_ += ',';
    first = false;
    out_ += key;
    out_ += "=\"";
    Escape(out_, value, true);
    out_ += '"';
  }
  out_ += '}';
}

void TextWriter::Sample(std::string_view name, const Labels& labels, double value) {
  Name(name, labels);
  out_ += ' ';
  out_ += FormatValue(value);
  out_ += '\n';
}

void TextWriter::Sample(std::string_view name, const Labels& labels, uint64_t value) {
  Name(name, labels);
  out_ += ' ';
  out_ += std::to_string(value);
  out_ += '\n';
}

}  // namespace mcpexec::metrics
