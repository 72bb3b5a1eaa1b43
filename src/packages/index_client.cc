#include "packages/index_client.h"

#include <sys/stat.h>
#include <unistd.h>

#include <memory>

#include "base/sys.h"
#include "packages/libraries.h"
#include "packages/digest.h"
#include "packages/index_page.h"

namespace mcpexec::packages {
namespace {

// A transfer slower than this for kStallSeconds is given up.
constexpr long kStallBytesPerSecond = 1024;
constexpr long kStallSeconds = 15;
constexpr long kConnectSeconds = 10;

struct Transfer {
  const std::function<bool(std::string_view)>* sink;
  Sha256* digest;
  uint64_t bytes = 0;
  uint64_t max_bytes = 0;
  bool over = false;
  bool refused = false;  // the sink said no
  const std::atomic<bool>* stop = nullptr;
};

size_t OnData(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  t->bytes += len;
  if (t->bytes > t->max_bytes) {
    t->over = true;
    return 0;
  }
  t->digest->Update(std::string_view(data, len));
  if (!(*t->sink)(std::string_view(data, len))) {
    t->refused = true;
    return 0;
  }
  return len;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->stop != nullptr && t->stop->load() ? 1 : 0;
}

}  // namespace

Result<IndexOptions> ReadIndexOptions(const std::string& url, const std::string& ca_file,
                                      const std::string& credentials_file,
                                      std::chrono::seconds timeout) {
  IndexOptions options;
  options.url = url;
  if (!options.url.empty() && options.url.back() != '/') options.url.push_back('/');
  if (OriginOf(options.url).rfind("https://", 0) != 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "MCP_EXEC_PACKAGE_INDEX must be an https:// URL of a simple index (PEP 503), "
                     "as https://pypi.example.com/simple/, not \"" + url + "\"");
  }
  if (!ca_file.empty()) {
    if (access(ca_file.c_str(), R_OK) != 0) {
      return Errno(ErrorCode::kNotFound, "MCP_EXEC_PACKAGE_INDEX_CA " + ca_file);
    }
    options.ca_file = ca_file;
  }
  if (!credentials_file.empty()) {
    struct stat st;
    if (stat(credentials_file.c_str(), &st) != 0) {
      return Errno(ErrorCode::kNotFound, "MCP_EXEC_PACKAGE_INDEX_CREDENTIALS " + credentials_file);
    }
    if ((st.st_mode & 077) != 0 || st.st_uid != geteuid()) {
      return MakeError(ErrorCode::kPermissionDenied,
                       "MCP_EXEC_PACKAGE_INDEX_CREDENTIALS " + credentials_file +
                           " must be mode 0600 or 0400 and owned by the server's user: chmod "
                           "600 " + credentials_file);
    }
    MCPEXEC_ASSIGN_OR_RETURN(std::string text, ReadFile(credentials_file));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.find('\n') != std::string::npos || text.find(':') == std::string::npos) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "MCP_EXEC_PACKAGE_INDEX_CREDENTIALS " + credentials_file +
                           " must hold one line user:password");
    }
    options.credentials = std::move(text);
  }
  options.timeout = timeout;
  return options;
}

IndexClient::IndexClient(IndexOptions options)
    : options_(std::move(options)), origin_(OriginOf(options_.url)) {}

Result<IndexClient::Response> IndexClient::Get(
    const std::string& url, std::string_view accept, uint64_t max_bytes,
    const std::string& cap_name, const std::function<bool(std::string_view)>& sink,
    const std::atomic<bool>* stop) const {
  if (OriginOf(url) != origin_) {
    return MakeError(ErrorCode::kPermissionDenied,
                     "the package index links " + url + ", which is not on " + origin_ +
                         ": mcp-exec fetches from the index's own host only");
  }
  MCPEXEC_ASSIGN_OR_RETURN(const CurlLibrary* lib, LoadCurl());
  std::unique_ptr<CURL, void (*)(CURL*)> curl(lib->easy_init(), lib->easy_cleanup);
  if (!curl) return MakeError(ErrorCode::kInternal, "cannot start a transfer");
  Sha256 digest;
  Transfer t{&sink, &digest};
  t.max_bytes = max_bytes;
  t.stop = stop;
  const std::string accept_header = "Accept: " + std::string(accept);
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(
      lib->slist_append(nullptr, accept_header.c_str()), lib->slist_free_all);
  char error[CURL_ERROR_SIZE] = "";
  CURL* c = curl.get();
  lib->easy_setopt(c, CURLOPT_URL, url.c_str());
  lib->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
  lib->easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  lib->easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  lib->easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options_.ca_file.empty()) lib->easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
  if (!options_.credentials.empty()) {
    lib->easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    lib->easy_setopt(c, CURLOPT_USERPWD, options_.credentials.c_str());
  }
  lib->easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  lib->easy_setopt(c, CURLOPT_USERAGENT, "mcp-exec");
  lib->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  lib->easy_setopt(c, CURLOPT_CONNECTTIMEOUT, kConnectSeconds);
  lib->easy_setopt(c, CURLOPT_TIMEOUT, static_cast<long>(options_.timeout.count()));
  lib->easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, kStallBytesPerSecond);
  lib->easy_setopt(c, CURLOPT_LOW_SPEED_TIME, kStallSeconds);
  lib->easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(max_bytes));
  lib->easy_setopt(c, CURLOPT_WRITEFUNCTION, OnData);
  lib->easy_setopt(c, CURLOPT_WRITEDATA, &t);
  lib->easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  lib->easy_setopt(c, CURLOPT_XFERINFOFUNCTION, OnProgress);
  lib->easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  lib->easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  const CURLcode code = lib->easy_perform(c);
  Response r;
  lib->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  if (t.over || code == CURLE_FILESIZE_EXCEEDED) {
    return MakeError(ErrorCode::kResourceExhausted,
                     "the package index's " + url + " is larger than " + cap_name + " (" +
                         std::to_string(max_bytes) + " bytes): the transfer was stopped");
  }
  if (code == CURLE_ABORTED_BY_CALLBACK) {
    return MakeError(ErrorCode::kUnavailable,
                     "the package index did not answer " + url + " in time (stopped)");
  }
  if (t.refused) return MakeError(ErrorCode::kInternal, "cannot store " + url);
  if (code != CURLE_OK) {
    std::string why = error[0] != '\0' ? error : lib->easy_strerror(code);
    const bool tls = code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE ||
                     code == CURLE_SSL_CONNECT_ERROR;
    const bool slow = code == CURLE_OPERATION_TIMEDOUT;
    return MakeError(ErrorCode::kUnavailable,
                     "the package index did not answer " + url + ": " + why +
                         (tls ? " (its certificate is not trusted: name its CA with "
                                "MCP_EXEC_PACKAGE_INDEX_CA)"
                          : slow ? " (timed out)"
                                 : ""));
  }
  if (r.status >= 300 && r.status < 400) {
    char* location = nullptr;
    lib->easy_getinfo(c, CURLINFO_REDIRECT_URL, &location);
    return MakeError(ErrorCode::kPermissionDenied,
                     "the package index answered " + url + " with a redirect (" +
                         std::to_string(r.status) + ") to " + (location ? location : "nowhere") +
                         ": mcp-exec follows no redirect");
  }
  char* type = nullptr;
  lib->easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
  r.content_type = type != nullptr ? type : "";
  r.bytes = t.bytes;
  r.sha256 = digest.HexDigest();
  return r;
}

}  // namespace mcpexec::packages
