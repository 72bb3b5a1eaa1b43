#include "cli/output_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "base/sys.h"
#include "base/unique_fd.h"

namespace mcpexec::cli {
namespace {

// "" when written, else why not.
std::string WriteOne(int root, const sandbox::OutputFile& file) {
  UniqueFd dir(fcntl(root, F_DUPFD_CLOEXEC, 0));
  std::string_view rest = file.path;
  for (size_t slash; (slash = rest.find('/')) != std::string_view::npos;) {
    const std::string name(rest.substr(0, slash));
    rest.remove_prefix(slash + 1);
    if (mkdirat(dir.Get(), name.c_str(), 0755) != 0 && errno != EEXIST) {
      return "cannot create a directory on its way: " + std::string(strerror(errno));
    }
    UniqueFd next(OpenBeneath(dir.Get(), name.c_str(), O_PATH | O_DIRECTORY));
    if (!next.Valid()) {
      return errno == ELOOP ? "a link is in the way in the output directory"
                            : "cannot open a directory on its way: " + std::string(strerror(errno));
    }
    dir = std::move(next);
  }
  const std::string name(rest);
  UniqueFd out(OpenBeneath(dir.Get(), name.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
  if (!out.Valid()) {
    return errno == ELOOP ? "a link is in the way in the output directory"
                          : "cannot create it: " + std::string(strerror(errno));
  }
  if (auto written = WriteAll(out.Get(), file.data); !written.ok()) return written.error().message;
  return "";
}

}  // namespace

Result<void> WriteOutputDir(const std::string& dir, const sandbox::OutputCollection& outputs,
                            std::vector<exec::FileReport>& reports) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Errno(ErrorCode::kInvalidArgument, "create --output-dir " + dir);
  }
  UniqueFd root(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.Valid()) return Errno(ErrorCode::kInvalidArgument, "open --output-dir " + dir);
  for (size_t i = 0; i < outputs.files.size() && i < reports.size(); ++i) {
    const sandbox::OutputFile& file = outputs.files[i];
    if (file.skip != sandbox::OutputSkip::kNone) continue;
    std::string problem = WriteOne(root.Get(), file);
    reports[i].returned = problem.empty();
    reports[i].reason = problem.empty() ? "" : "not written to --output-dir: " + problem;
  }
  return Ok();
}

}  // namespace mcpexec::cli
