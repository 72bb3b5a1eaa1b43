#include "packages/layer_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/sys.h"
#include "base/unique_fd.h"

namespace mcpexec::packages {
namespace {

const char* SkipWord(sandbox::OutputSkip skip) {
  switch (skip) {
    case sandbox::OutputSkip::kNone: return "read";
    case sandbox::OutputSkip::kNotRegular: return "not a regular file";
    case sandbox::OutputSkip::kTooLarge: return "over MCP_EXEC_PACKAGE_MAX_BYTES";
    case sandbox::OutputSkip::kTooMany: return "past the most files a layer may hold";
    case sandbox::OutputSkip::kUnreadable: return "unreadable";
    case sandbox::OutputSkip::kChanged: return "changed while it was read";
    case sandbox::OutputSkip::kTooDeep: return "too deep";
  }
  return "not read";
}

Error Refused(const std::string& what) {
  return MakeError(ErrorCode::kInvalidArgument, "the installed packages " + what);
}

// mkdir -p of `rel`'s parents under `dir`, each created 0755 (0555 at the end).
Result<void> MakeParents(const std::string& dir, std::string_view rel) {
  for (size_t slash = rel.find('/'); slash != std::string_view::npos;
       slash = rel.find('/', slash + 1)) {
    const std::string path = dir + "/" + std::string(rel.substr(0, slash));
    if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return Errno(ErrorCode::kInternal, "mkdir " + path);
    }
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Refused("have both a file and a directory at " + std::string(rel.substr(0, slash)));
    }
  }
  return Ok();
}

}  // namespace

Result<uint64_t> WriteLayerTree(const sandbox::OutputCollection& collection,
                                const std::string& prefix, const std::string& dir) {
  uint64_t bytes = 0;
  if (collection.walk_incomplete || collection.unlisted > 0) {
    return Refused("have more files than a layer may hold");
  }
  const std::string lead = prefix + "/";
  for (const sandbox::OutputFile& file : collection.files) {
    if (file.path.rfind(lead, 0) != 0) continue;
    const std::string rel = file.path.substr(lead.size());
    if (std::string problem = sandbox::RelativePathProblem(rel); !problem.empty()) {
      return Refused("have a path that is not plain (" + problem + "): " + file.path);
    }
    if (file.type != "file") return Refused("have a " + file.type + ": " + rel);
    if (file.skip != sandbox::OutputSkip::kNone) {
      return Refused("have a file that was " + std::string(SkipWord(file.skip)) + ": " + rel);
    }
    MCPEXEC_RETURN_IF_ERROR(MakeParents(dir, rel));
    const std::string path = dir + "/" + rel;
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd.Valid()) return Errno(ErrorCode::kInternal, "create " + path);
    MCPEXEC_RETURN_IF_ERROR(WriteAll(fd.Get(), file.data));
    bytes += file.data.size();
    if (fchmod(fd.Get(), 0444) != 0) return Errno(ErrorCode::kInternal, "chmod " + path);
  }
  // Read-only from the leaves up: a directory made 0555 first could not be filled.
  std::error_code ec;
  std::vector<std::string> dirs;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) dirs.push_back(it->path());
  }
  if (ec) return MakeError(ErrorCode::kInternal, "walk " + dir + ": " + ec.message());
  dirs.push_back(dir);
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    if (chmod(it->c_str(), 0555) != 0) return Errno(ErrorCode::kInternal, "chmod " + *it);
  }
  return bytes;
}

Result<void> RemoveTree(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return Ok();
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) chmod(it->path().c_str(), 0755);
  }
  chmod(path.c_str(), 0755);
  std::filesystem::remove_all(path, ec);
  if (ec) return MakeError(ErrorCode::kInternal, "remove " + path + ": " + ec.message());
  return Ok();
}

}  // namespace mcpexec::packages
