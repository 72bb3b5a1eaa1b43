// A PEP 503 (HTML) or PEP 691 (JSON) project page of a package index, read into its files and
// written back as the PEP 503 page that pip in the installer sandbox reads from the supervisor's
// channel (index_channel.h), each file's link pointing at the channel.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace mcpexec::packages {

struct IndexFile {
  std::string filename;
  std::string url;     // absolute, resolved against the page's URL
  std::string sha256;  // lower-case hex; "" when the index gives none
  std::string requires_python;
  bool yanked = false;
  std::string yanked_reason;
};

// The files of the page `body` fetched from `page_url`: JSON when `content_type` is PEP 691's
// (application/vnd.pypi.simple.v1+json), else HTML anchors. kInvalidArgument for a page that is
// neither.
Result<std::vector<IndexFile>> ParseIndexPage(std::string_view body, std::string_view content_type,
                                              const std::string& page_url);

// `reference` resolved against `base` (RFC 3986, the forms index pages use: absolute, "//host",
// "/path", relative with "./" and "../"); the fragment kept.
std::string ResolveUrl(const std::string& base, const std::string& reference);

// "https://host:port" of an absolute http(s) URL, lower-cased, the default port left out; ""
// for anything else.
std::string OriginOf(const std::string& url);

// A PEP 503 page of `files` whose links are `prefix` + sha256 + "/" + filename + "#sha256=" +
// sha256 (files without a sha256 are left out), with data-requires-python and data-yanked.
std::string RenderIndexPage(const std::vector<IndexFile>& files, const std::string& prefix);

}  // namespace mcpexec::packages
