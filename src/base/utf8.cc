#include "base/utf8.h"

namespace mcpexec {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

struct LeadInfo {
  int length;            // 0 when the byte cannot start a sequence
  unsigned char lo, hi;  // range allowed for the second byte
};

LeadInfo Lead(unsigned char b) {
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};  // excludes UTF-16 surrogates
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};  // nothing above U+10FFFF
  return {0, 0, 0};
}

// How many bytes of a well-formed sequence start at `s[i]` (0 if none): the length of the
// maximal valid subpart otherwise, as a negative number.
int Scan(std::string_view s, size_t i) {
  const LeadInfo info = Lead(static_cast<unsigned char>(s[i]));
  if (info.length == 0) return -1;
  int k = 1;
  for (; k < info.length; ++k) {
    if (i + k >= s.size()) return -k;
    const auto c = static_cast<unsigned char>(s[i + k]);
    const unsigned char lo = k == 1 ? info.lo : 0x80;
    const unsigned char hi = k == 1 ? info.hi : 0xBF;
    if (c < lo || c > hi) return -k;
  }
  return k;
}

// Where to cut `bytes` at or before `limit` (<= bytes.size()) so as not to end inside a
// sequence that the bytes from `limit` on could complete.
size_t CutBefore(std::string_view bytes, size_t limit) {
  for (size_t back = 1; back <= 3 && back <= limit; ++back) {
    const size_t p = limit - back;
    const auto b = static_cast<unsigned char>(bytes[p]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    const int length = Lead(b).length;
    return (length > 0 && p + static_cast<size_t>(length) > limit) ? p : limit;
  }
  return limit;
}

}  // namespace

std::string RepairUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {
      out.push_back(bytes[i++]);
      continue;
    }
    const int n = Scan(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, static_cast<size_t>(n)));
      i += static_cast<size_t>(n);
    } else {
      out.append(kReplacement);
      i += static_cast<size_t>(-n);
    }
  }
  return out;
}

size_t Utf8SafeCut(std::string_view bytes, size_t limit) {
  if (limit >= bytes.size()) return bytes.size();
  return CutBefore(bytes, limit);
}

size_t Utf8CompleteLength(std::string_view bytes) { return CutBefore(bytes, bytes.size()); }

}  // namespace mcpexec
