// The installer sandbox's only way to a package index (docs/packages.md): a Unix socket in a
// directory bound into the sandbox, where the supervisor answers plain HTTP for pip. It serves
// the index's project pages rewritten to point back at itself, and the wheels those pages list,
// each fetched by the supervisor (IndexClient) and checked against the index's sha256 before
// one byte of it reaches the sandbox. Nothing else can be asked for: the sandbox names a project
// or a file a page listed, never a URL.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "packages/index_client.h"
#include "packages/index_page.h"

namespace mcpexec::packages {

inline constexpr const char* kIndexSocketName = "index.sock";
// A project page larger than this is refused.
inline constexpr uint64_t kMaxIndexPageBytes = 16 << 20;

class IndexChannel {
 public:
  // Listens on `dir`/index.sock. Wheels are kept in `downloads` by their sha256, so that a wheel
  // is fetched once. `allow`: the normalised names whose pages may be asked for (empty: any).
  static Result<std::unique_ptr<IndexChannel>> Open(const std::string& dir,
                                                    const IndexClient& client,
                                                    std::string downloads,
                                                    std::vector<std::string> allow,
                                                    uint64_t max_file_bytes);
  // Stops serving: aborts a transfer under way and waits for the thread. Verified and Problems
  // still answer. The destructor stops it too.
  void Stop();
  ~IndexChannel();
  IndexChannel(const IndexChannel&) = delete;
  IndexChannel& operator=(const IndexChannel&) = delete;

  // The sha256 of the wheel `filename` as the channel checked and served it; "" when it served
  // no file of that name.
  std::string Verified(const std::string& filename) const;
  // What went wrong between the supervisor and the index, in the order seen: for the error of an
  // installation that failed.
  std::vector<std::string> Problems() const;

 private:
  IndexChannel(const IndexClient& client, std::string downloads, std::vector<std::string> allow,
               uint64_t max_file_bytes)
      : client_(client),
        downloads_(std::move(downloads)),
        allow_(std::move(allow)),
        max_file_bytes_(max_file_bytes) {}
  void Serve();
  void Answer(int fd);
  // The page of the project `name` (as the request spelt it); fills `body`, returns the status.
  int ProjectPage(const std::string& name, std::string& body);
  // The path of the checked wheel `sha256` in downloads_, fetched now when missing; "" and a
  // problem when it cannot be had.
  std::string Wheel(const std::string& sha256);
  void Problem(const std::string& what);

  const IndexClient& client_;
  const std::string downloads_;
  const std::vector<std::string> allow_;
  const uint64_t max_file_bytes_;
  UniqueFd listener_;
  UniqueFd stop_read_, stop_write_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  // The connection being answered, -1 between them: Stop() shuts it down, so that a request
  // never finished or an answer never read does not hold Stop() for the socket timeouts.
  std::mutex connection_mutex_;
  int connection_ = -1;
  mutable std::mutex mutex_;
  std::map<std::string, IndexFile> listed_;     // sha256 -> a file a page listed
  std::map<std::string, std::string> served_;   // file name -> sha256 checked and served
  std::vector<std::string> problems_;
};

}  // namespace mcpexec::packages
