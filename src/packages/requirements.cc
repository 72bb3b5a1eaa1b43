#include "packages/requirements.h"

#include <cctype>

namespace mcpexec::packages {
namespace {

bool NameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Error Invalid(std::string_view text, const std::string& why) {
  return MakeError(ErrorCode::kInvalidArgument,
                   "packages: \"" + std::string(text) + "\" " + why);
}

// A version specifier list, optionally in parentheses: "==1.2", ">=1,<2", "(~=3.1)".
bool ValidSpecifiers(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return true;
  if (s.front() == '(') {
    if (s.size() < 2 || s.back() != ')') return false;
    s = s.substr(1, s.size() - 2);
  }
  while (true) {
    const size_t comma = s.find(',');
    std::string_view one = Trim(s.substr(0, comma));
    size_t op = 0;
    for (std::string_view o : {"===", "==", "!=", "<=", ">=", "~=", "<", ">"}) {
      if (one.substr(0, o.size()) == o) {
        op = o.size();
        break;
      }
    }
    const std::string_view version = Trim(one.substr(op));
    if (op == 0 || version.empty()) return false;
    for (char c : version) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '*' ||
            c == '+' || c == '!' || c == '-' || c == '_')) {
        return false;
      }
    }
    if (comma == std::string_view::npos) return true;
    s = s.substr(comma + 1);
  }
}

}  // namespace

std::string NormalizeName(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (out.empty() || out.back() != '-') out.push_back('-');
    } else {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  return out;
}

Result<Requirement> ParseRequirement(std::string_view raw) {
  const std::string_view text = Trim(raw);
  if (text.empty()) return Invalid(raw, "is empty: give a project name, as \"tabulate\"");
  if (text.size() > kMaxRequirementBytes) {
    return Invalid(text.substr(0, 40), "... is longer than " +
                                           std::to_string(kMaxRequirementBytes) + " bytes");
  }
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return Invalid("(with a control character)", "has a control character");
    }
  }
  if (text.front() == '-') {
    return Invalid(text, std::string(text.rfind("-e", 0) == 0 || text.rfind("--editable", 0) == 0
                                          ? "is an editable install"
                                          : "is an option") +
                             ", not a requirement: only names from the server's package source "
                             "are installed, as \"name\" or \"name==1.2\"");
  }
  if (text.find("://") != std::string_view::npos || text.find('@') != std::string_view::npos) {
    return Invalid(text, "names a URL: only names from the server's package source are "
                         "installed, as \"name\" or \"name==1.2\"");
  }
  size_t end = 0;
  while (end < text.size() && NameChar(text[end])) ++end;
  const std::string_view name = text.substr(0, end);
  const bool name_ok = !name.empty() && std::isalnum(static_cast<unsigned char>(name.front())) &&
                       std::isalnum(static_cast<unsigned char>(name.back()));
  if (!name_ok || text.find('/') != std::string_view::npos ||
      text.find('\\') != std::string_view::npos) {
    return Invalid(text, "is not a project name with an optional version, as \"name\", "
                         "\"name==1.2\" or \"name[extra]>=1,<2\" (no paths or URLs)");
  }
  for (std::string_view suffix : {".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2"}) {
    if (EndsWith(name, suffix)) {
      return Invalid(text, "is an archive's name: give the project name, as \"name==1.2\"");
    }
  }
  std::string_view rest = text.substr(end);
  std::string_view marker;
  if (const size_t semi = rest.find(';'); semi != std::string_view::npos) {
    marker = Trim(rest.substr(semi + 1));
    rest = rest.substr(0, semi);
    if (marker.empty()) return Invalid(text, "has an empty marker after ';'");
    for (char c : marker) {
      const bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0 ||
                      std::string_view(" _.'\"<>=!~()-").find(c) != std::string_view::npos;
      if (!ok) return Invalid(text, "has a character a marker cannot hold");
    }
  }
  rest = Trim(rest);
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return Invalid(text, "has an unclosed '['");
    const std::string_view extras = rest.substr(1, close - 1);
    for (char c : extras) {
      if (!(NameChar(c) || c == ',' || c == ' ')) {
        return Invalid(text, "has an extra that is not a name");
      }
    }
    rest = rest.substr(close + 1);
  }
  if (!ValidSpecifiers(rest)) {
    return Invalid(text, "has a version that is not a specifier list, as \"==1.2\" or "
                         "\">=1,<2\"");
  }
  Requirement r;
  r.name = NormalizeName(name);
  r.text = std::string(text);
  r.key = r.name;
  for (char c : text.substr(end)) {
    if (c != ' ' && c != '\t') r.key.push_back(c);
  }
  return r;
}

}  // namespace mcpexec::packages
