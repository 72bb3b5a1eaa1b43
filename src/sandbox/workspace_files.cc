#include "sandbox/workspace_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/sys.h"
#include "base/unique_fd.h"
#include "sandbox/plan.h"

namespace mcpexec::sandbox {
namespace {

// Every lookup stays under the workspace, on its mount, and follows no link of any kind
// (security catalogue FS-06).
int OpenInWorkspace(int dirfd, const char* name, int flags, mode_t mode = 0) {
  return OpenBeneath(dirfd, name, flags, mode, RESOLVE_NO_XDEV);
}

// The workspace belongs to the sandbox's user namespace, where only the sandbox's ids are
// mapped: the kernel refuses to create an inode for any other fsuid (EOVERFLOW). So a root
// supervisor creates input files as the sandbox's host ids, in this thread only; its fs
// capabilities come back with fsuid 0.
class ScopedFsIds {
 public:
  ScopedFsIds(uid_t uid, gid_t gid)
      : old_gid_(static_cast<gid_t>(setfsgid(gid))), old_uid_(static_cast<uid_t>(setfsuid(uid))) {}
  ~ScopedFsIds() {
    setfsuid(old_uid_);
    setfsgid(old_gid_);
  }
  ScopedFsIds(const ScopedFsIds&) = delete;
  ScopedFsIds& operator=(const ScopedFsIds&) = delete;

  // setfsuid reports no errors: asking again for an invalid id returns the current one.
  static bool Holds(uid_t uid, gid_t gid) {
    return static_cast<uid_t>(setfsuid(static_cast<uid_t>(-1))) == uid &&
           static_cast<gid_t>(setfsgid(static_cast<gid_t>(-1))) == gid;
  }

 private:
  gid_t old_gid_;
  uid_t old_uid_;
};

std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t slash = path.find('/', start);
    parts.push_back(path.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

// Why an entry that fstatat saw could not be opened: its mode or a lease (O_NONBLOCK: EAGAIN
// rather than a wait for the lease to break), or that it is no longer what was seen (a program
// still running in a session swaps entries as the walk goes).
OutputSkip OpenFailure(int err) {
  return err == EACCES || err == EPERM || err == EAGAIN ? OutputSkip::kUnreadable
                                                         : OutputSkip::kChanged;
}

// `err` is the errno of the failed call, taken before anything else could change it.
Error FileError(int err, const std::string& path, const std::string& what) {
  std::string why = err == ENOSPC || err == EDQUOT ? "the workspace is full"
                    : err == EEXIST               ? "it exists already"
                    : err == ELOOP || err == EXDEV ? "a link or mount is in the way"
                                                   : std::string(strerror(err));
  Error e = MakeError(err == ENOSPC ? ErrorCode::kResourceExhausted : ErrorCode::kInvalidArgument,
                      "input file " + path + ": " + what + ": " + why);
  e.sys_errno = err;
  return e;
}

Result<void> WriteOne(int workspace_fd, const std::string& path, std::string_view content) {
  const std::vector<std::string_view> parts = Components(path);
  UniqueFd dir(fcntl(workspace_fd, F_DUPFD_CLOEXEC, 0));
  if (!dir.Valid()) return Errno(ErrorCode::kInternal, "dup(workspace)");
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string name(parts[i]);
    const bool made = mkdirat(dir.Get(), name.c_str(), 0755) == 0;
    if (!made && errno != EEXIST) {
      const int err = errno;
      return FileError(err, path, "create directory " + name);
    }
    // In a session, the program of an earlier call may still run and swap what was just made
    // for a link to anywhere (RENAME_EXCHANGE): nothing here acts on a name after the lookup
    // below, which follows no link, and the new directory's mode (the sandbox's, not the
    // supervisor's umask's) is set through the descriptor that lookup opened. fchmod needs a
    // descriptor that is not O_PATH: the owner may read a directory it has just made.
    UniqueFd next(OpenInWorkspace(dir.Get(), name.c_str(),
                                  (made ? O_RDONLY : O_PATH) | O_DIRECTORY));
    if (next.Valid() && made && fchmod(next.Get(), 0755) != 0) {
      const int err = errno;
      return FileError(err, path, "chmod directory " + name);
    }
    if (!next.Valid()) {
      // With O_NOFOLLOW, a link where a directory is wanted fails with ENOTDIR, not ELOOP.
      const int err = errno;
      struct stat st {};
      const bool link =
          fstatat(dir.Get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
      return FileError(link ? ELOOP : err, path, "open directory " + name);
    }
    dir = std::move(next);
  }
  const std::string name(parts.back());
  UniqueFd out(OpenInWorkspace(dir.Get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644));
  if (!out.Valid() || fchmod(out.Get(), 0644) != 0) {
    const int err = errno;
    return FileError(err, path, "create");
  }
  std::string_view rest = content;
  while (!rest.empty()) {
    const ssize_t n = write(out.Get(), rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      return FileError(err, path, "write");
    }
    rest.remove_prefix(static_cast<size_t>(n));
  }
  return Ok();
}

// Whether a session's call leaves the entry out: it has not changed since the call started
// (ChangedSince). Records what it lists.
bool Unchanged(const struct stat& st, ChangedSince* since) {
  if (since == nullptr) return false;
  const FileStamp stamp{st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
  const bool before = st.st_ctim.tv_sec < since->time.tv_sec ||
                      (st.st_ctim.tv_sec == since->time.tv_sec &&
                       st.st_ctim.tv_nsec < since->time.tv_nsec);
  if (before) return true;
  // Listed by an earlier call and unchanged: still known, and still not listed.
  const bool known = since->previous.count(stamp) > 0;
  since->known.insert(stamp);
  return known;
}

// The walk of /tmp/outputs: one open directory per level, one directory's names at a time.
class OutputWalk {
 public:
  explicit OutputWalk(const OutputLimits& limits) : limits_(limits) {}

  void Directory(int fd, const std::string& prefix, int depth) {
    std::vector<std::string> names = ReadNames(fd);
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      return strverscmp(a.c_str(), b.c_str()) < 0;
    });
    for (const std::string& name : names) {
      const std::string path = prefix.empty() ? name : prefix + "/" + name;
      struct stat st {};
      if (fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone: not ours
      if (!S_ISDIR(st.st_mode) && Unchanged(st, limits_.changed_since)) continue;
      if (S_ISDIR(st.st_mode)) {
        if (depth + 1 > limits_.max_depth) {
          List({path, "directory", 0, OutputSkip::kTooDeep, {}});
          continue;
        }
        UniqueFd sub(OpenInWorkspace(fd, name.c_str(), O_RDONLY | O_DIRECTORY));
        if (!sub.Valid()) {
          List({path, "directory", 0, OpenFailure(errno), {}});
          continue;
        }
        Directory(sub.Get(), path, depth + 1);
      } else if (S_ISREG(st.st_mode)) {
        File(fd, name, path, st);
      } else {
        List({path, TypeName(st.st_mode), 0, OutputSkip::kNotRegular, {}});
      }
    }
  }

  OutputCollection Take() { return std::move(result_); }

 private:
  static const char* TypeName(mode_t mode) {
    if (S_ISLNK(mode)) return "symlink";
    if (S_ISFIFO(mode)) return "fifo";
    if (S_ISSOCK(mode)) return "socket";
    return "device";
  }

  std::vector<std::string> ReadNames(int fd) {
    std::vector<std::string> names;
    UniqueFd copy(fcntl(fd, F_DUPFD_CLOEXEC, 0));
    DIR* dir = copy.Valid() ? fdopendir(copy.Get()) : nullptr;
    if (dir == nullptr) return names;
    (void)copy.Release();  // the DIR owns it now
    while (const dirent* entry = readdir(dir)) {
      if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
      if (entries_seen_ >= limits_.max_entries) {
        result_.walk_incomplete = true;
        break;
      }
      ++entries_seen_;
      names.emplace_back(entry->d_name);
    }
    closedir(dir);
    return names;
  }

  void File(int dirfd, const std::string& name, const std::string& path, const struct stat& st) {
    if (result_.files.size() >= limits_.max_listed) {  // it could not be listed: not read either
      ++result_.unlisted;
      return;
    }
    OutputFile file{path, "file", static_cast<uint64_t>(st.st_size), OutputSkip::kNone, {}};
    if (files_read_ >= limits_.max_files) {
      file.skip = OutputSkip::kTooMany;
    } else if (file.size > limits_.max_file_bytes) {
      file.skip = OutputSkip::kTooLarge;
    } else {
      Read(dirfd, name, file);
    }
    List(std::move(file));
  }

  // Reads at most max_file_bytes + 1: enough to tell a file that is larger than its size said.
  void Read(int dirfd, const std::string& name, OutputFile& file) {
    // O_NONBLOCK: were the entry swapped for a FIFO since fstatat, open would not wait.
    UniqueFd fd(OpenInWorkspace(dirfd, name.c_str(), O_RDONLY | O_NONBLOCK));
    if (!fd.Valid()) {
      file.skip = OpenFailure(errno);
      return;
    }
    struct stat st {};
    if (fstat(fd.Get(), &st) != 0) {
      file.skip = OutputSkip::kUnreadable;
      return;
    }
    if (!S_ISREG(st.st_mode)) {
      file.type = TypeName(st.st_mode);
      file.skip = OutputSkip::kNotRegular;
      return;
    }
    const size_t limit = limits_.max_file_bytes + 1;
    file.data.resize(std::min<uint64_t>(static_cast<uint64_t>(st.st_size), limits_.max_file_bytes) + 1);
    size_t got = 0;
    for (;;) {
      if (got == file.data.size()) {
        if (file.data.size() >= limit) break;
        file.data.resize(std::min(limit, file.data.size() * 2));
      }
      const ssize_t n = read(fd.Get(), file.data.data() + got, file.data.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        file.data.clear();
        file.skip = OutputSkip::kUnreadable;
        return;
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    file.data.resize(got);
    ++files_read_;
    if (got > limits_.max_file_bytes) {
      file.data.clear();
      file.data.shrink_to_fit();
      file.skip = OutputSkip::kTooLarge;
      file.size = std::max<uint64_t>(file.size, got);
      return;
    }
    file.size = got;
  }

  void List(OutputFile file) {
    if (result_.files.size() >= limits_.max_listed) {
      ++result_.unlisted;
      return;
    }
    result_.files.push_back(std::move(file));
  }

  const OutputLimits& limits_;
  OutputCollection result_;
  size_t entries_seen_ = 0;
  size_t files_read_ = 0;
};

}  // namespace

std::string RelativePathProblem(std::string_view path) {
  if (path.empty()) return "the path is empty";
  if (path.front() == '/') return "the path is absolute: give it relative to /tmp";
  for (const char ch : path) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f) return "the path holds a NUL or control character";
  }
  for (std::string_view part : Components(path)) {
    if (part.empty()) return "the path has an empty component (\"//\" or a trailing \"/\")";
    if (part == "." || part == "..") return "the path has a \".\" or \"..\" component";
    if (part.size() > NAME_MAX) return "a component of the path is over 255 bytes";
  }
  return "";
}

std::string WorkspacePathProblem(std::string_view path) {
  if (std::string problem = RelativePathProblem(path); !problem.empty()) return problem;
  if (path == kProgramFile) {
    return "main.py is the program itself";
  }
  // The sandbox makes it before the inputs are written; a file there could never be created.
  if (path == kOutputsDir) return "outputs is the directory whose files come back: put files in it";
  return "";
}

Result<void> WriteInputFiles(int workspace_fd, std::span<const InputFile> files, uid_t uid,
                             gid_t gid) {
  if (files.empty()) return Ok();
  ScopedFsIds ids(uid, gid);
  if (!ScopedFsIds::Holds(uid, gid)) {
    return MakeError(ErrorCode::kInternal, "cannot take the sandbox's ids to write input files");
  }
  for (const InputFile& file : files) {
    MCPEXEC_RETURN_IF_ERROR(WriteOne(workspace_fd, file.path, file.content));
  }
  return Ok();
}

Result<void> WriteProgram(int workspace_fd, std::string_view code, uid_t uid, gid_t gid) {
  ScopedFsIds ids(uid, gid);
  if (!ScopedFsIds::Holds(uid, gid)) {
    return MakeError(ErrorCode::kInternal, "cannot take the sandbox's ids to write the program");
  }
  auto written = WriteOne(workspace_fd, kProgramFile, code);
  if (written.ok()) return written;
  const int err = written.error().sys_errno;
  if (err == ENOSPC || err == EDQUOT) {
    Error e = MakeError(ErrorCode::kResourceExhausted,
                        "the program (" + std::to_string(code.size()) +
                            " bytes) is larger than the workspace; raise "
                            "MCP_EXEC_WORKSPACE_BYTES");
    e.sys_errno = err;
    return e;
  }
  return std::move(written).error().WithContext("write the program to /tmp/main.py");
}

Result<OutputCollection> CollectOutputs(int workspace_fd, const OutputLimits& limits) {
  UniqueFd outputs(OpenInWorkspace(workspace_fd, kOutputsDir, O_RDONLY | O_DIRECTORY));
  if (!outputs.Valid()) {
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EXDEV) {
      return OutputCollection{};
    }
    if (errno == EACCES) {  // its mode keeps a rootless supervisor out
      OutputCollection none;
      none.walk_incomplete = true;
      return none;
    }
    return Errno(ErrorCode::kInternal, "open /tmp/outputs");
  }
  OutputWalk walk(limits);
  walk.Directory(outputs.Get(), "", 0);
  return walk.Take();
}

}  // namespace mcpexec::sandbox
