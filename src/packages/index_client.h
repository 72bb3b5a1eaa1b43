// The supervisor's HTTPS client for a package index (libcurl): pages and wheels from the index's
// own origin only, certificates verified (the system's store or MCP_EXEC_PACKAGE_INDEX_CA),
// HTTPS_PROXY and NO_PROXY as libcurl reads them, basic auth from a credentials file, no
// redirect followed, every transfer capped in size and in time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace mcpexec::packages {

struct IndexOptions {
  std::string url;          // the simple index's base URL, ending in '/'
  std::string ca_file;      // "" : the system's store
  std::string credentials;  // "user:password" from MCP_EXEC_PACKAGE_INDEX_CREDENTIALS, or ""
  std::chrono::seconds timeout{120};
};

// Reads MCP_EXEC_PACKAGE_INDEX's settings: an https URL (a '/' is added at its end), a CA file
// that exists, and a credentials file of mode 0600 or 0400 owned by this process's user, holding
// one line "user:password" (never logged, never on a command line).
Result<IndexOptions> ReadIndexOptions(const std::string& url, const std::string& ca_file,
                                      const std::string& credentials_file,
                                      std::chrono::seconds timeout);

class IndexClient {
 public:
  explicit IndexClient(IndexOptions options);

  const IndexOptions& Options() const { return options_; }
  const std::string& Origin() const { return origin_; }

  struct Response {
    long status = 0;
    std::string content_type;
    uint64_t bytes = 0;
    std::string sha256;  // of the body
  };
  // GETs `url` (of the index's origin; kPermissionDenied otherwise), handing the body to `sink`
  // piece by piece; more than `max_bytes` aborts it (kResourceExhausted naming
  // MCP_EXEC_PACKAGE_MAX_BYTES or the page cap). A 3xx is kPermissionDenied (no redirect is
  // followed); other statuses are returned. `stop` set aborts it (kUnavailable). Errors name the
  // URL and what happened ("did not answer", "certificate", ...).
  Result<Response> Get(const std::string& url, std::string_view accept, uint64_t max_bytes,
                       const std::string& cap_name,
                       const std::function<bool(std::string_view)>& sink,
                       const std::atomic<bool>* stop) const;

 private:
  IndexOptions options_;
  std::string origin_;
};

}  // namespace mcpexec::packages
