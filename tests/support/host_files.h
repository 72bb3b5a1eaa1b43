// Whole small files on the host, for tests that build a directory tree and check what landed,
// and bytes spelled as hex, the way probes in the sandbox report them.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace mcpexec::testing {

inline void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  ASSERT_TRUE(out.good()) << path;
}

// The whole file into `*out`; false when it cannot be opened.
inline bool ReadWhole(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return true;
}

// "" when the file cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::string text;
  return ReadWhole(path, &text) ? text : std::string();
}

// Lower-case hex, two digits a byte.
inline std::string Hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (const char c : bytes) {
    hex += kDigits[static_cast<unsigned char>(c) >> 4];
    hex += kDigits[static_cast<unsigned char>(c) & 15];
  }
  return hex;
}

}  // namespace mcpexec::testing
