// Files in and out of a run, through the supervisor's descriptor of the workspace (the tmpfs
// at /tmp, which the sandbox's init hands over when it is ready). In a one-shot run, inputs are
// written before the program starts and outputs are read after every process of the run is
// gone; in a session, processes an earlier call left may change the tree at any moment, as both
// happen. So the workspace is hostile ground: no lookup follows a link or leaves the workspace,
// nothing is done to a name once it has been looked up (only to the descriptor the lookup
// opened), only regular files are read, and no more than the limits.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace mcpexec::sandbox {

// The directory under the workspace whose files come back: /tmp/outputs.
inline constexpr const char* kOutputsDir = "outputs";

// A file to put into the workspace before the program starts.
struct InputFile {
  std::string path;  // relative to the workspace; WorkspacePathProblem(path) is ""
  std::string content;
};

// Why `path` is not a plain relative path ("" when it is): empty, absolute, a "." or ".."
// component, an empty component (a doubled or trailing "/"), NUL or another control character,
// a component over NAME_MAX bytes. Such a path stays beneath the directory it is joined to.
std::string RelativePathProblem(std::string_view path);

// Why `path` cannot name an input file ("" when it can): RelativePathProblem's reasons, the
// program's own main.py, or "outputs" itself (a directory).
std::string WorkspacePathProblem(std::string_view path);

// Creates each file (0644) and the directories on its way (0755), owned by the sandbox's user,
// whose host ids are `uid` and `gid`. Fails on an existing file, on a link on the way, and when
// the workspace is full; the message names the file.
Result<void> WriteInputFiles(int workspace_fd, std::span<const InputFile> files, uid_t uid,
                             gid_t gid);

// The program's file in the workspace: /tmp/main.py.
inline constexpr const char* kProgramFile = "main.py";

// Writes the program to /tmp/main.py (0644, the sandbox's user, like an input file), before
// the input files. A program larger than the workspace is kResourceExhausted.
Result<void> WriteProgram(int workspace_fd, std::string_view code, uid_t uid, gid_t gid);

struct OutputLimits {
  size_t max_files = 16;  // regular files read, in walk order; 0: Run() does not look at all
  uint64_t max_file_bytes = 1 << 20;    // a larger file is listed, not read
  size_t max_listed = 256;              // entries listed in all, read or not
  size_t max_entries = 200'000;         // directory entries looked at in all
  int max_depth = 32;                   // directories below /tmp/outputs
  // A session's call (sandbox.h): only what the call changed (ChangedSince). Null: everything.
  struct ChangedSince* changed_since = nullptr;
};

// An entry as the collector saw it: the same stamp means the same, unchanged entry.
struct FileStamp {
  ino_t ino = 0;
  int64_t ctime_sec = 0;
  long ctime_nsec = 0;
  auto operator<=>(const FileStamp&) const = default;
};

// What a session's call lists of /tmp/outputs: the entries whose status changed (ctime, which a
// program cannot set) at or after `time` (CLOCK_REALTIME_COARSE, the clock file times come
// from), so that a file comes back from the call that wrote it and not again. File times have
// the coarse clock's resolution (a few ms), or are finer than it: an entry an earlier call
// knew, unchanged, is skipped even when its time is not before the call's start. Directories
// are walked whatever their time.
struct ChangedSince {
  timespec time{};
  std::set<FileStamp> previous;  // what the previous call knew (its `known`)
  std::set<FileStamp> known;     // filled: the entries at or after `time`, listed or skipped
};

// Why a listed entry was not read.
enum class OutputSkip {
  kNone,          // read: `data` holds it
  kNotRegular,    // a link, FIFO, socket or device: never opened
  kTooLarge,      // over max_file_bytes
  kTooMany,       // past max_files
  kUnreadable,    // its mode (to a rootless supervisor), or a lease, keeps the supervisor out
  kChanged,       // swapped while looked at: a link, another kind of file or nothing took its place
  kTooDeep,       // a directory past max_depth
};

struct OutputFile {
  std::string path;  // relative to /tmp/outputs, as bytes: not necessarily UTF-8
  std::string type;  // "file", "symlink", "fifo", "socket", "device", "directory"
  uint64_t size = 0;
  OutputSkip skip = OutputSkip::kNone;
  std::string data;
};

struct OutputCollection {
  // Depth first, names in version order within a directory (figure-2 before figure-10).
  // Directories are walked, not listed, unless they could not be.
  std::vector<OutputFile> files;
  size_t unlisted = 0;           // entries past max_listed
  // max_entries was reached, or /tmp/outputs itself could not be read
  bool walk_incomplete = false;
};

// Reads /tmp/outputs. A program that removed it, or put something other than a directory in
// its place, gets an empty collection.
Result<OutputCollection> CollectOutputs(int workspace_fd, const OutputLimits& limits);

}  // namespace mcpexec::sandbox
