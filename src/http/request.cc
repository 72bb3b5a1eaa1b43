#include "http/request.h"

#include <limits>

namespace mcpexec::http {
namespace {

constexpr std::string_view kCrlf = "\r\n";
// A chunk-size line with its extensions, and all trailer lines together: enough for any
// legitimate client, small enough that a hostile one cannot make us buffer much.
constexpr size_t kMaxChunkLineBytes = 4096;
constexpr size_t kMaxTrailerBytes = 8192;

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

// RFC 9110 5.6.2: tchar.
bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsOws(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

// field-value characters: VCHAR, obs-text, SP and HTAB. CR, LF and NUL never reach here as
// values (lines are split on CRLF and bare CR/LF are refused), but other controls might.
bool IsFieldValue(std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7F) return false;
  }
  return true;
}

// Calls fn(element) for each non-empty element of a comma-separated list (RFC 9110 5.6.1).
template <class Fn>
void ForEachListElement(std::string_view list, Fn fn) {
  while (true) {
    const size_t comma = list.find(',');
    const std::string_view element = TrimOws(list.substr(0, comma));
    if (!element.empty()) fn(element);
    if (comma == std::string_view::npos) return;
    list.remove_prefix(comma + 1);
  }
}

HeadParse Fail(int status, std::string_view reason) {
  HeadParse out;
  out.state = HeadParse::State::kError;
  out.error = {status, reason};
  return out;
}

// Splits the request-target into path and query. Origin-form "/p?q", absolute-form
// "http://host/p?q" (RFC 9112 3.2.2: a server MUST accept it) and asterisk-form "*".
bool SplitTarget(std::string_view target, RequestHead& head) {
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7F || c == '#') return false;
  }
  std::string_view rest = target;
  if (target == "*") {
    head.path = "*";
    return true;
  }
  if (target.front() != '/') {
    size_t scheme = 0;
    if (EqualsIgnoreCase(target.substr(0, 7), "http://")) {
      scheme = 7;
    } else if (EqualsIgnoreCase(target.substr(0, 8), "https://")) {
      scheme = 8;
    } else {
      return false;
    }
    rest.remove_prefix(scheme);
    const size_t authority_end = rest.find_first_of("/?");
    if (authority_end == 0 || rest.empty()) return false;  // no host
    rest =
        authority_end == std::string_view::npos ? std::string_view() : rest.substr(authority_end);
  }
  const size_t q = rest.find('?');
  const std::string_view path = rest.substr(0, q);
  head.path = path.empty() ? "/" : std::string(path);
  if (q != std::string_view::npos) head.query = std::string(rest.substr(q + 1));
  return true;
}

// "HTTP/1.1" -> 1, "HTTP/1.0" -> 0; -1 for another well-formed version (505); -2 when malformed.
int ParseVersion(std::string_view v) {
  if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || !IsDigit(v[5]) || v[6] != '.' ||
      !IsDigit(v[7])) {
    return -2;
  }
  if (v[5] != '1' || (v[7] != '0' && v[7] != '1')) return -1;
  return v[7] - '0';
}

HeadParse ParseRequestLine(std::string_view line, RequestHead& head) {
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return Fail(400, "malformed request line");
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Fail(400, "malformed request line");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const int minor = ParseVersion(line.substr(sp2 + 1));
  if (minor == -2) return Fail(400, "malformed HTTP version");
  if (minor == -1) return Fail(505, "only HTTP/1.0 and HTTP/1.1 are supported");
  if (!IsToken(method)) return Fail(400, "malformed method");
  if (target.empty() || !SplitTarget(target, head)) return Fail(400, "malformed request target");
  head.method = std::string(method);
  head.target = std::string(target);
  head.minor_version = minor;
  HeadParse ok;
  ok.state = HeadParse::State::kComplete;
  return ok;
}

// Content-Length: 1*DIGIT, nothing else (no sign, no list: a list of equal values is refused
// like any duplicate).
HeadParse ParseContentLength(std::string_view value, uint64_t* out) {
  if (value.empty()) return Fail(400, "invalid Content-Length");
  uint64_t n = 0;
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (char c : value) {
    if (!IsDigit(c)) return Fail(400, "invalid Content-Length");
    const auto digit = static_cast<uint64_t>(c - '0');
    if (n > (kMax - digit) / 10) return Fail(413, "Content-Length too large");
    n = n * 10 + digit;
  }
  *out = n;
  HeadParse ok;
  ok.state = HeadParse::State::kComplete;
  return ok;
}

// What the header fields say about framing and the connection (RFC 9112 6, 9.3; RFC 9110 7.2,
// 10.1.1).
HeadParse ApplyHeaderSemantics(RequestHead& head) {
  size_t hosts = 0;
  size_t lengths = 0;
  bool has_te = false;
  size_t chunked = 0;
  bool unknown_coding = false;
  bool close = false;
  bool keep_alive_token = false;
  for (const HeaderField& f : head.headers) {
    if (EqualsIgnoreCase(f.name, "Host")) {
      ++hosts;
    } else if (EqualsIgnoreCase(f.name, "Content-Length")) {
      if (++lengths > 1) return Fail(400, "more than one Content-Length");
      HeadParse r = ParseContentLength(f.value, &head.content_length);
      if (r.state == HeadParse::State::kError) return r;
    } else if (EqualsIgnoreCase(f.name, "Transfer-Encoding")) {
      has_te = true;
      ForEachListElement(f.value, [&](std::string_view coding) {
        if (EqualsIgnoreCase(coding, "chunked")) {
          ++chunked;
        } else {
          unknown_coding = true;
        }
      });
    } else if (EqualsIgnoreCase(f.name, "Connection")) {
      ForEachListElement(f.value, [&](std::string_view option) {
        if (EqualsIgnoreCase(option, "close")) close = true;
        if (EqualsIgnoreCase(option, "keep-alive")) keep_alive_token = true;
      });
    } else if (EqualsIgnoreCase(f.name, "Expect")) {
      // An HTTP/1.0 client cannot understand 100 (Continue): ignore its expectation.
      if (head.minor_version == 1 && EqualsIgnoreCase(f.value, "100-continue")) {
        head.expect_continue = true;
      }
    }
  }
  if (hosts > 1) return Fail(400, "more than one Host");
  if (hosts == 0 && head.minor_version == 1) return Fail(400, "Host is required in HTTP/1.1");
  if (has_te) {
    // Either framing could be the one a proxy in front used: refuse rather than guess.
    if (lengths > 0) return Fail(400, "both Content-Length and Transfer-Encoding");
    if (head.minor_version == 0) return Fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (unknown_coding) return Fail(501, "unsupported transfer encoding");
    if (chunked != 1) return Fail(400, "invalid Transfer-Encoding");
    head.framing = BodyFraming::kChunked;
  } else if (lengths == 1) {
    head.framing = BodyFraming::kContentLength;
  }
  head.keep_alive = !close && (head.minor_version == 1 || keep_alive_token);
  HeadParse ok;
  ok.state = HeadParse::State::kComplete;
  return ok;
}

}  // namespace

std::optional<std::string_view> RequestHead::Header(std::string_view name) const {
  for (const HeaderField& f : headers) {
    if (EqualsIgnoreCase(f.name, name)) return std::string_view(f.value);
  }
  return std::nullopt;
}

HeadParse ParseRequestHead(std::string_view input, const HeadLimits& limits, size_t scan_from) {
  // Empty lines before the request line are skipped (RFC 9112 2.2); they count toward the limit.
  size_t start = 0;
  while (input.substr(start, 2) == kCrlf) start += 2;
  if (start >= limits.max_head_bytes) return Fail(431, "request head too large");

  // Find the empty line that ends the head, checking line endings on the way: a bare CR or LF
  // is refused (RFC 9112 2.2), since another parser might read it as a line break and see
  // different headers.
  size_t end = 0;
  const size_t window = std::min(input.size(), limits.max_head_bytes);
  size_t i = std::max(start, scan_from);
  for (; i < window; ++i) {
    const char c = input[i];
    if (c == '\r') {
      if (i + 1 < input.size() && input[i + 1] != '\n') return Fail(400, "bare CR in head");
    } else if (c == '\n') {
      if (i == 0 || input[i - 1] != '\r') return Fail(400, "bare LF in head");
      if (i >= start + 3 && input[i - 2] == '\n') {
        end = i + 1;
        break;
      }
    }
  }
  if (end == 0) {
    if (input.size() >= limits.max_head_bytes) return Fail(431, "request head too large");
    HeadParse more;
    more.scanned = (i > 0 && input[i - 1] == '\r') ? i - 1 : i;
    return more;
  }

  HeadParse out;
  RequestHead& head = out.head;
  std::string_view lines = input.substr(start, end - start - 2);  // each line ends with CRLF
  size_t eol = lines.find(kCrlf);
  HeadParse line = ParseRequestLine(lines.substr(0, eol), head);
  if (line.state == HeadParse::State::kError) return line;
  lines.remove_prefix(eol + 2);
  while (!lines.empty()) {
    eol = lines.find(kCrlf);
    const std::string_view field = lines.substr(0, eol);
    lines.remove_prefix(eol + 2);
    if (IsOws(field.front())) return Fail(400, "obsolete line folding");
    if (head.headers.size() >= limits.max_headers) return Fail(431, "too many header fields");
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos) return Fail(400, "malformed header field");
    const std::string_view name = field.substr(0, colon);
    // No whitespace between name and colon (RFC 9112 5.1: MUST reject).
    if (!IsToken(name)) return Fail(400, "malformed header field name");
    const std::string_view value = TrimOws(field.substr(colon + 1));
    if (!IsFieldValue(value)) return Fail(400, "invalid character in a header field");
    head.headers.push_back({std::string(name), std::string(value)});
  }
  HeadParse semantics = ApplyHeaderSemantics(head);
  if (semantics.state == HeadParse::State::kError) return semantics;
  out.state = HeadParse::State::kComplete;
  out.consumed = end;
  return out;
}

ChunkedDecoder::Step ChunkedDecoder::Fail(int status, std::string_view reason, size_t consumed) {
  phase_ = Phase::kError;
  error_ = {status, reason};
  Step step;
  step.state = Step::State::kError;
  step.consumed = consumed;
  step.error = error_;
  return step;
}

ChunkedDecoder::Step ChunkedDecoder::Feed(std::string_view input, std::string* body) {
  Step step;
  if (phase_ == Phase::kDone) {
    step.state = Step::State::kDone;
    return step;
  }
  if (phase_ == Phase::kError) return Fail(error_.status, error_.reason, 0);
  size_t i = 0;
  while (i < input.size()) {
    if (phase_ == Phase::kData) {
      const auto n = static_cast<size_t>(std::min<uint64_t>(chunk_left_, input.size() - i));
      body->append(input.data() + i, n);
      chunk_left_ -= n;
      decoded_ += n;
      i += n;
      if (chunk_left_ == 0) phase_ = Phase::kDataCr;
      continue;
    }
    const std::optional<HttpError> error =
        phase_ <= Phase::kSizeLf ? SizeLineByte(input[i]) : FramingByte(input[i]);
    if (error) return Fail(error->status, error->reason, i);
    ++i;
    if (phase_ == Phase::kDone) {
      step.state = Step::State::kDone;
      break;
    }
  }
  step.consumed = i;
  return step;
}

// chunk-size [ BWS ";" chunk-ext ] CRLF, one byte at a time.
std::optional<HttpError> ChunkedDecoder::SizeLineByte(char c) {
  if (phase_ != Phase::kSizeLf && ++line_bytes_ > kMaxChunkLineBytes) {
    return HttpError{400, "chunk size line too long"};
  }
  switch (phase_) {
    case Phase::kSize:
      if (const int hex = HexValue(c); hex >= 0) {
        if (chunk_left_ > (std::numeric_limits<uint64_t>::max() >> 4)) {
          return HttpError{413, "chunk too large"};
        }
        chunk_left_ = chunk_left_ * 16 + static_cast<uint64_t>(hex);
        ++size_digits_;
        return std::nullopt;
      }
      if (size_digits_ == 0) return HttpError{400, "malformed chunk size"};
      // The size is known: refuse a chunk over the limit before its data.
      if (chunk_left_ > max_body_bytes_ - decoded_) return HttpError{413, "body too large"};
      [[fallthrough]];
    case Phase::kSizeSpace:  // BWS before ";" (RFC 9112 7.1.1)
      if (c == ';') {
        phase_ = Phase::kExtension;
      } else if (c == '\r') {
        phase_ = Phase::kSizeLf;
      } else if (IsOws(c)) {
        phase_ = Phase::kSizeSpace;
      } else {
        return HttpError{400, "malformed chunk size"};
      }
      return std::nullopt;
    case Phase::kExtension:
      if (c == '\r') {
        phase_ = Phase::kSizeLf;
      } else if (!IsFieldValue(std::string_view(&c, 1))) {
        return HttpError{400, "malformed chunk extension"};
      }
      return std::nullopt;
    case Phase::kSizeLf:
      if (c != '\n') return HttpError{400, "malformed chunk size line"};
      phase_ = chunk_left_ == 0 ? Phase::kTrailerStart : Phase::kData;
      return std::nullopt;
    default:
      return HttpError{400, "internal decoder state"};
  }
}

// The CRLF after chunk data, the trailer section and the final CRLF, one byte at a time.
std::optional<HttpError> ChunkedDecoder::FramingByte(char c) {
  switch (phase_) {
    case Phase::kDataCr:
      if (c != '\r') return HttpError{400, "chunk data longer than its size"};
      phase_ = Phase::kDataLf;
      return std::nullopt;
    case Phase::kDataLf:
      if (c != '\n') return HttpError{400, "malformed chunk end"};
      phase_ = Phase::kSize;
      size_digits_ = 0;
      line_bytes_ = 0;
      return std::nullopt;
    case Phase::kTrailerStart:
    case Phase::kTrailerLine:
      if (++trailer_bytes_ > kMaxTrailerBytes) return HttpError{400, "trailer too large"};
      if (c == '\r') {
        phase_ = phase_ == Phase::kTrailerStart ? Phase::kLastLf : Phase::kTrailerLf;
      } else if (c == '\n' || !IsFieldValue(std::string_view(&c, 1))) {
        return HttpError{400, "malformed trailer"};
      } else {
        phase_ = Phase::kTrailerLine;
      }
      return std::nullopt;
    case Phase::kTrailerLf:
      if (c != '\n') return HttpError{400, "malformed trailer"};
      phase_ = Phase::kTrailerStart;
      return std::nullopt;
    case Phase::kLastLf:
      if (c != '\n') return HttpError{400, "malformed last chunk"};
      phase_ = Phase::kDone;
      return std::nullopt;
    default:
      return HttpError{400, "internal decoder state"};
  }
}

std::optional<std::string> QueryParam(std::string_view query, std::string_view name) {
  auto decode = [](std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '+') {
        out.push_back(' ');
      } else if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 &&
                 HexValue(s[i + 2]) >= 0) {
        out.push_back(static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2])));
        i += 2;
      } else {
        out.push_back(s[i]);
      }
    }
    return out;
  };
  while (true) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (!pair.empty() && decode(pair.substr(0, eq)) == name) {
      return eq == std::string_view::npos ? std::string() : decode(pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) return std::nullopt;
    query.remove_prefix(amp + 1);
  }
}

}  // namespace mcpexec::http
