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

// `otherwise`, or that a link is in the way when one stands at `name`: with O_NOFOLLOW, a link
// where a directory is wanted fails with ENOTDIR rather than ELOOP.
std::string InTheWay(int dir, const std::string& name, const std::string& otherwise) {
  struct stat st {};
  if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    return "a link is in the way in the output directory";
  }
  return otherwise;
}

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
      const std::string why = strerror(errno);
      return InTheWay(dir.Get(), name, "cannot open a directory on its way: " + why);
    }
    dir = std::move(next);
  }
  const std::string name(rest);
  // Whatever is there already is looked at before anything is written, so no O_TRUNC.
  // O_NONBLOCK: a FIFO in the way fails with ENXIO instead of waiting for a reader.
  UniqueFd out(OpenBeneath(dir.Get(), name.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK, 0644));
  if (!out.Valid()) {
    if (errno == ENXIO) return "a FIFO is in the way in the output directory";
    const std::string why = strerror(errno);
    return InTheWay(dir.Get(), name, "cannot create it: " + why);
  }
  struct stat st {};
  if (fstat(out.Get(), &st) != 0) return "cannot stat it: " + std::string(strerror(errno));
  if (!S_ISREG(st.st_mode)) {
    return "something other than a file is in the way in the output directory";
  }
  // Another name of the same file, maybe outside the directory: writing would change it there.
  if (st.st_nlink > 1) return "a hard link is in the way in the output directory";
  if (ftruncate(out.Get(), 0) != 0) return "cannot truncate it: " + std::string(strerror(errno));
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
