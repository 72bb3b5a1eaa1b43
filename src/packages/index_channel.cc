#include "packages/index_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/random.h"
#include "base/sys.h"
#include "packages/digest.h"
#include "packages/requirements.h"

namespace mcpexec::packages {
namespace {

constexpr size_t kMaxRequestHead = 16 << 10;
constexpr int kSocketTimeoutSeconds = 30;
constexpr const char* kFilesPrefix = "/files/";
// What the channel asks the index for: PEP 691's JSON first, PEP 503's HTML else.
constexpr const char* kAccept =
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.1";

void Send(int fd, int status, const char* reason, const std::string& type,
          const std::string& body) {
  const std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                           "\r\nContent-Type: " + type +
                           "\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\nConnection: close\r\n\r\n";
  (void)WriteAll(fd, head + body);
}

}  // namespace

Result<std::unique_ptr<IndexChannel>> IndexChannel::Open(const std::string& dir,
                                                         const IndexClient& client,
                                                         std::string downloads,
                                                         std::vector<std::string> allow,
                                                         uint64_t max_file_bytes) {
  std::unique_ptr<IndexChannel> channel(
      new IndexChannel(client, std::move(downloads), std::move(allow), max_file_bytes));
  // A socket's path is at most 107 bytes, and the cache's may be longer: bound through the
  // directory's descriptor (/proc/self/fd/N/index.sock), the path is short whatever the cache's.
  UniqueFd dir_fd(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.Valid()) return Errno(ErrorCode::kInternal, "open " + dir);
  const std::string path = dir + "/" + kIndexSocketName;
  const std::string short_path =
      "/proc/self/fd/" + std::to_string(dir_fd.Get()) + "/" + kIndexSocketName;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, short_path.c_str(), short_path.size() + 1);
  channel->listener_ = UniqueFd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!channel->listener_.Valid()) return Errno(ErrorCode::kInternal, "socket");
  if (bind(channel->listener_.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      chmod(path.c_str(), 0666) != 0 || listen(channel->listener_.Get(), 16) != 0) {
    return Errno(ErrorCode::kInternal, "listen on " + path);
  }
  int stop[2];
  if (pipe2(stop, O_CLOEXEC) != 0) return Errno(ErrorCode::kInternal, "pipe");
  channel->stop_read_ = UniqueFd(stop[0]);
  channel->stop_write_ = UniqueFd(stop[1]);
  channel->thread_ = std::thread([c = channel.get()] { c->Serve(); });
  return channel;
}

void IndexChannel::Stop() {
  stopping_ = true;
  if (stop_write_.Valid()) (void)!write(stop_write_.Get(), "x", 1);
  {
    std::lock_guard lock(connection_mutex_);
    if (connection_ >= 0) shutdown(connection_, SHUT_RDWR);
  }
  if (thread_.joinable()) thread_.join();
}

IndexChannel::~IndexChannel() { Stop(); }

std::string IndexChannel::Verified(const std::string& filename) const {
  std::lock_guard lock(mutex_);
  auto it = served_.find(filename);
  return it == served_.end() ? "" : it->second;
}

std::vector<std::string> IndexChannel::Problems() const {
  std::lock_guard lock(mutex_);
  return problems_;
}

void IndexChannel::Problem(const std::string& what) {
  std::lock_guard lock(mutex_);
  if (std::find(problems_.begin(), problems_.end(), what) == problems_.end() &&
      problems_.size() < 20) {
    problems_.push_back(what);
  }
}

void IndexChannel::Serve() {
  // A sandbox that hangs up mid-answer (it was killed at its deadline) makes a write fail with
  // EPIPE, never kill the process: `mcp-exec run` does not ignore SIGPIPE as serve does. Blocked
  // here, the signal a write raises stays pending on this thread and dies with it; libcurl
  // (CURLOPT_NOSIGNAL) relies on it too.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  for (;;) {
    pollfd fds[2] = {{listener_.Get(), POLLIN, 0}, {stop_read_.Get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    UniqueFd conn(accept4(listener_.Get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.Valid()) continue;
    const timeval timeout{kSocketTimeoutSeconds, 0};
    setsockopt(conn.Get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    setsockopt(conn.Get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    {
      std::lock_guard lock(connection_mutex_);
      if (stopping_) return;  // Stop() has shut down what it saw: this one it did not
      connection_ = conn.Get();
    }
    Answer(conn.Get());
    std::lock_guard lock(connection_mutex_);
    connection_ = -1;
  }
}

void IndexChannel::Answer(int fd) {
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos) {
    if (head.size() > kMaxRequestHead) return Send(fd, 431, "Too Large", "text/plain", "");
    const ssize_t got = recv(fd, buf, sizeof buf, 0);
    if (got <= 0) return;
    head.append(buf, static_cast<size_t>(got));
  }
  const size_t line_end = head.find("\r\n");
  const std::string line = head.substr(0, line_end);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos || line.substr(0, sp1) != "GET") {
    return Send(fd, 405, "Method Not Allowed", "text/plain", "");
  }
  std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find_first_of("?#"));
  if (path == "/simple/" || path == "/simple") {
    return Send(fd, 200, "OK", "text/html", "<!DOCTYPE html>\n<html><body></body></html>\n");
  }
  if (path.rfind("/simple/", 0) == 0) {
    std::string name = path.substr(8);
    if (!name.empty() && name.back() == '/') name.pop_back();
    std::string body;
    const int status = ProjectPage(name, body);
    if (status == 200) return Send(fd, 200, "OK", "text/html", body);
    return Send(fd, status, status == 404 ? "Not Found" : "Bad Gateway", "text/plain", body);
  }
  if (path.rfind(kFilesPrefix, 0) == 0) {
    const std::string rest = path.substr(std::strlen(kFilesPrefix));
    const std::string sha = rest.substr(0, rest.find('/'));
    if (!IsSha256Hex(sha)) return Send(fd, 404, "Not Found", "text/plain", "");
    const std::string file = Wheel(sha);
    if (file.empty()) return Send(fd, 502, "Bad Gateway", "text/plain", "");
    UniqueFd in(open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st;
    if (!in.Valid() || fstat(in.Get(), &st) != 0) {
      return Send(fd, 502, "Bad Gateway", "text/plain", "");
    }
    const std::string reply = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream"
                              "\r\nContent-Length: " + std::to_string(st.st_size) +
                              "\r\nConnection: close\r\n\r\n";
    if (!WriteAll(fd, reply).ok()) return;
    off_t offset = 0;
    while (offset < st.st_size) {
      const ssize_t sent = sendfile(fd, in.Get(), &offset, static_cast<size_t>(st.st_size - offset));
      if (sent <= 0) return;
    }
    std::lock_guard lock(mutex_);
    if (auto it = listed_.find(sha); it != listed_.end()) served_[it->second.filename] = sha;
    return;
  }
  Send(fd, 404, "Not Found", "text/plain", "");
}

int IndexChannel::ProjectPage(const std::string& requested, std::string& body) {
  const std::string name = NormalizeName(requested);
  const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  }) && name.front() != '-' && name.back() != '-';
  if (!plain) return 404;
  if (!allow_.empty() && std::find(allow_.begin(), allow_.end(), name) == allow_.end()) {
    Problem("\"" + name + "\" is not on this server's allow-list (MCP_EXEC_PACKAGE_ALLOW)");
    return 404;
  }
  const std::string url = client_.Options().url + name + "/";
  std::string page;
  auto got = client_.Get(url, kAccept, kMaxIndexPageBytes, "the page cap",
                         [&page](std::string_view data) {
                           page.append(data);
                           return true;
                         },
                         &stopping_);
  if (!got.ok()) {
    Problem(got.error().message);
    return 502;
  }
  if (got->status == 404) return 404;
  if (got->status != 200) {
    Problem("the package index answered " + url + " with " + std::to_string(got->status) +
            (got->status == 401 || got->status == 403
                 ? ": it wants credentials (MCP_EXEC_PACKAGE_INDEX_CREDENTIALS)"
                 : ""));
    return 502;
  }
  auto files = ParseIndexPage(page, got->content_type, url);
  if (!files.ok()) {
    Problem("the package index's page " + url + " cannot be read: " + files.error().message);
    return 502;
  }
  std::vector<IndexFile> kept;
  for (IndexFile& f : *files) {
    if (f.sha256.empty()) {
      if (f.filename.size() > 4 && f.filename.substr(f.filename.size() - 4) == ".whl") {
        Problem("the package index gives no sha256 for " + f.filename +
                ": mcp-exec installs only files it can check");
      }
      continue;
    }
    kept.push_back(f);
  }
  {
    std::lock_guard lock(mutex_);
    for (const IndexFile& f : kept) listed_.emplace(f.sha256, f);
  }
  body = RenderIndexPage(kept, kFilesPrefix);
  return 200;
}

std::string IndexChannel::Wheel(const std::string& sha256) {
  IndexFile file;
  {
    std::lock_guard lock(mutex_);
    auto it = listed_.find(sha256);
    if (it == listed_.end()) return "";
    file = it->second;
  }
  const std::string path = downloads_ + "/" + sha256;
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return path;
  auto suffix = RandomHex(8);
  if (!suffix.ok()) return "";
  const std::string part = downloads_ + "/.part-" + *suffix;
  UniqueFd out(open(part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
  if (!out.Valid()) {
    Problem("cannot write into the package cache's downloads: " + std::string(strerror(errno)));
    return "";
  }
  auto got = client_.Get(file.url, "*/*", max_file_bytes_, "MCP_EXEC_PACKAGE_MAX_BYTES",
                         [&out](std::string_view data) { return WriteAll(out.Get(), data).ok(); },
                         &stopping_);
  out = UniqueFd();
  std::string problem;
  if (!got.ok()) {
    problem = got.error().message;
  } else if (got->status != 200) {
    problem = "the package index answered " + file.url + " with " + std::to_string(got->status);
  } else if (got->sha256 != sha256) {
    problem = "the package index's sha256 of " + file.filename + " is " + sha256 +
              ", but the file it sent has " + got->sha256 + ": refused";
  }
  if (!problem.empty() || rename(part.c_str(), path.c_str()) != 0) {
    unlink(part.c_str());
    Problem(problem.empty() ? "cannot keep " + file.filename + " in the package cache" : problem);
    return "";
  }
  return path;
}

}  // namespace mcpexec::packages
