#include "packages/index_page.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "packages/digest.h"

namespace mcpexec::packages {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The few character references index pages use, and numeric ones.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out.push_back(s[i]);
      continue;
    }
    const size_t semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      out.push_back('&');
      continue;
    }
    const std::string_view name = s.substr(i + 1, semi - i - 1);
    std::string decoded;
    if (name == "amp") decoded = "&";
    else if (name == "lt") decoded = "<";
    else if (name == "gt") decoded = ">";
    else if (name == "quot") decoded = "\"";
    else if (name == "apos" || name == "#39" || name == "#x27") decoded = "'";
    else if (!name.empty() && name[0] == '#') {
      const bool hex = name.size() > 1 && (name[1] == 'x' || name[1] == 'X');
      const long code = std::strtol(std::string(name.substr(hex ? 2 : 1)).c_str(), nullptr,
                                    hex ? 16 : 10);
      if (code > 0 && code < 128) decoded = std::string(1, static_cast<char>(code));
    }
    if (decoded.empty()) {
      out.push_back('&');
      continue;
    }
    out += decoded;
    i = semi;
  }
  return out;
}

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

// The attributes of a tag's text (after its name): name -> unescaped value; names lower-cased.
std::vector<std::pair<std::string, std::optional<std::string>>> Attributes(std::string_view tag) {
  std::vector<std::pair<std::string, std::optional<std::string>>> out;
  size_t i = 0;
  while (i < tag.size()) {
    while (i < tag.size() && (std::isspace(static_cast<unsigned char>(tag[i])) || tag[i] == '/')) ++i;
    const size_t start = i;
    while (i < tag.size() && !std::isspace(static_cast<unsigned char>(tag[i])) && tag[i] != '=' &&
           tag[i] != '/') {
      ++i;
    }
    if (i == start) break;
    std::string name = Lower(std::string(tag.substr(start, i - start)));
    while (i < tag.size() && std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
    if (i >= tag.size() || tag[i] != '=') {
      out.emplace_back(std::move(name), std::nullopt);
      continue;
    }
    ++i;
    while (i < tag.size() && std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
    std::string value;
    if (i < tag.size() && (tag[i] == '"' || tag[i] == '\'')) {
      const char quote = tag[i++];
      const size_t end = tag.find(quote, i);
      value = std::string(tag.substr(i, end == std::string_view::npos ? tag.size() - i : end - i));
      i = end == std::string_view::npos ? tag.size() : end + 1;
    } else {
      const size_t start_value = i;
      while (i < tag.size() && !std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
      value = std::string(tag.substr(start_value, i - start_value));
    }
    out.emplace_back(std::move(name), Unescape(value));
  }
  return out;
}

// The path's last segment: a file's name when the link text is not one.
std::string LastSegment(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("#?"));
  return path.substr(path.rfind('/') + 1);
}

// Splits "#sha256=HEX" (or another fragment) off a URL; sets sha256 when it is one.
std::string SplitFragment(const std::string& url, std::string& sha256) {
  const size_t hash = url.find('#');
  if (hash == std::string::npos) return url;
  const std::string fragment = url.substr(hash + 1);
  if (fragment.rfind("sha256=", 0) == 0) sha256 = Lower(fragment.substr(7));
  return url.substr(0, hash);
}

Result<std::vector<IndexFile>> ParseJson(std::string_view body, const std::string& page_url) {
  const nlohmann::json page = nlohmann::json::parse(body, nullptr, false);
  if (!page.is_object() || !page.contains("files") || !page["files"].is_array()) {
    return MakeError(ErrorCode::kInvalidArgument, "the index's JSON page has no files list");
  }
  std::vector<IndexFile> files;
  for (const nlohmann::json& f : page["files"]) {
    if (!f.is_object() || !f.contains("filename") || !f["filename"].is_string() ||
        !f.contains("url") || !f["url"].is_string()) {
      continue;
    }
    IndexFile file;
    file.filename = f["filename"].get<std::string>();
    std::string ignored;
    file.url = SplitFragment(ResolveUrl(page_url, f["url"].get<std::string>()), ignored);
    if (f.contains("hashes") && f["hashes"].is_object() && f["hashes"].contains("sha256") &&
        f["hashes"]["sha256"].is_string()) {
      file.sha256 = Lower(f["hashes"]["sha256"].get<std::string>());
    }
    if (f.contains("requires-python") && f["requires-python"].is_string()) {
      file.requires_python = f["requires-python"].get<std::string>();
    }
    if (f.contains("yanked")) {
      const nlohmann::json& y = f["yanked"];
      file.yanked = y.is_string() || (y.is_boolean() && y.get<bool>());
      if (y.is_string()) file.yanked_reason = y.get<std::string>();
    }
    if (!IsSha256Hex(file.sha256)) file.sha256.clear();
    files.push_back(std::move(file));
  }
  return files;
}

}  // namespace

std::string OriginOf(const std::string& url) {
  const size_t colon = url.find("://");
  if (colon == std::string::npos) return "";
  const std::string scheme = Lower(url.substr(0, colon));
  if (scheme != "https" && scheme != "http") return "";
  const size_t host_start = colon + 3;
  const size_t host_end = url.find_first_of("/?#", host_start);
  std::string authority = Lower(url.substr(host_start, host_end - host_start));
  if (authority.empty() || authority.find('@') != std::string::npos) return "";
  const std::string default_port = scheme == "https" ? ":443" : ":80";
  if (authority.size() > default_port.size() &&
      authority.substr(authority.size() - default_port.size()) == default_port) {
    authority.resize(authority.size() - default_port.size());
  }
  return scheme + "://" + authority;
}

std::string ResolveUrl(const std::string& base, const std::string& reference) {
  if (reference.find("://") != std::string::npos &&
      reference.find("://") < reference.find_first_of("/?#")) {
    return reference;
  }
  const size_t colon = base.find("://");
  if (colon == std::string::npos) return reference;
  const std::string scheme = base.substr(0, colon);
  if (reference.rfind("//", 0) == 0) return scheme + ":" + reference;
  const size_t path_start = base.find('/', colon + 3);
  const std::string origin = base.substr(0, path_start);
  if (!reference.empty() && reference[0] == '/') return origin + reference;
  std::string base_path =
      path_start == std::string::npos ? "/" : base.substr(path_start, base.find_first_of("?#", path_start) - path_start);
  if (reference.empty()) return origin + base_path;
  // Merge: the base's directory, then the reference, then remove dot segments.
  std::string merged = base_path.substr(0, base_path.rfind('/') + 1) + reference;
  std::string fragment_and_query;
  if (const size_t q = merged.find_first_of("?#"); q != std::string::npos) {
    fragment_and_query = merged.substr(q);
    merged.resize(q);
  }
  std::vector<std::string> segments;
  size_t at = 1;
  while (at <= merged.size()) {
    const size_t slash = std::min(merged.find('/', at), merged.size());
    const std::string segment = merged.substr(at, slash - at);
    const bool last = slash == merged.size();
    if (segment == "..") {
      if (!segments.empty()) segments.pop_back();
      if (last) segments.emplace_back();
    } else if (segment == ".") {
      if (last) segments.emplace_back();
    } else {
      segments.push_back(segment);
    }
    at = slash + 1;
  }
  std::string path;
  for (const std::string& s : segments) path += "/" + s;
  if (path.empty()) path = "/";
  return origin + path + fragment_and_query;
}

Result<std::vector<IndexFile>> ParseIndexPage(std::string_view body, std::string_view content_type,
                                              const std::string& page_url) {
  if (Lower(std::string(content_type)).find("application/vnd.pypi.simple.v1+json") !=
      std::string::npos) {
    return ParseJson(body, page_url);
  }
  std::vector<IndexFile> files;
  std::string base = page_url;
  size_t at = 0;
  while ((at = body.find('<', at)) != std::string_view::npos) {
    const size_t end = body.find('>', at);
    if (end == std::string_view::npos) break;
    const std::string_view tag = body.substr(at + 1, end - at - 1);
    at = end + 1;
    const size_t name_end = std::min(tag.find_first_of(" \t\r\n/"), tag.size());
    const std::string name = Lower(std::string(tag.substr(0, name_end)));
    if (name == "base") {
      for (auto& [key, value] : Attributes(tag.substr(name_end))) {
        if (key == "href" && value) base = ResolveUrl(page_url, *value);
      }
      continue;
    }
    if (name != "a") continue;
    IndexFile file;
    std::optional<std::string> href;
    for (auto& [key, value] : Attributes(tag.substr(name_end))) {
      if (key == "href") href = value;
      if (key == "data-requires-python" && value) file.requires_python = *value;
      if (key == "data-yanked") {
        file.yanked = true;
        file.yanked_reason = value.value_or("");
      }
    }
    if (!href || href->empty()) continue;
    file.url = SplitFragment(ResolveUrl(base, *href), file.sha256);
    const size_t close = body.find("</", at);
    std::string text = Unescape(body.substr(at, close == std::string_view::npos ? 0 : close - at));
    text.erase(0, text.find_first_not_of(" \t\r\n"));
    text.erase(text.find_last_not_of(" \t\r\n") + 1);
    file.filename = text.empty() || text.find('/') != std::string::npos ? LastSegment(file.url) : text;
    if (!IsSha256Hex(file.sha256)) file.sha256.clear();
    files.push_back(std::move(file));
  }
  if (files.empty() && body.find("<") == std::string_view::npos && !body.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "the index's page is not HTML");
  }
  return files;
}

std::string RenderIndexPage(const std::vector<IndexFile>& files, const std::string& prefix) {
  std::string page = "<!DOCTYPE html>\n<html><body>\n";
  for (const IndexFile& f : files) {
    if (f.sha256.empty()) continue;
    page += "<a href=\"" + Escape(prefix + f.sha256 + "/" + f.filename + "#sha256=" + f.sha256) +
            "\"";
    if (!f.requires_python.empty()) {
      page += " data-requires-python=\"" + Escape(f.requires_python) + "\"";
    }
    if (f.yanked) page += " data-yanked=\"" + Escape(f.yanked_reason) + "\"";
    page += ">" + Escape(f.filename) + "</a><br>\n";
  }
  return page + "</body></html>\n";
}

}  // namespace mcpexec::packages
