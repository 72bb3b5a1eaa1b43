// Files in and out of the workspace, on a plain directory of the host: WriteInputFiles and
// CollectOutputs take a directory descriptor, so no sandbox is needed to put hostile trees in
// front of them (security catalogue FS-06).
#include "sandbox/workspace_files.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>
#include <atomic>
#include <thread>

#include "../support/host_files.h"
#include "../support/temp_dir.h"
#include "base/unique_fd.h"

namespace mcpexec::sandbox {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using ::testing::HasSubstr;

// ------------------------------------------------------------------------ WorkspacePathProblem

TEST(WorkspacePathProblem, AcceptsRelativePathsBelowTheWorkspace) {
  for (const std::string& path : std::vector<std::string>{
           "in.csv", "data/in.csv", "a b/c d.txt", "caf\xc3\xa9.txt", "...", "..a", "a..",
           ".hidden", "main.py.bak", "sub/main.py", "outputs/seed.txt", std::string(NAME_MAX, 'n'),
           std::string(NAME_MAX, 'n') + "/" + std::string(NAME_MAX, 'm')}) {
    EXPECT_EQ(WorkspacePathProblem(path), "") << path;
  }
}

TEST(WorkspacePathProblem, NamesEveryBadPathClass) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "the path is empty"},
      {"/etc/passwd", "the path is absolute"},
      {"/", "the path is absolute"},
      {"//tmp/x", "the path is absolute"},
      {std::string("a\0b", 3), "NUL or control character"},
      {"a\nb", "NUL or control character"},
      {"line\r", "NUL or control character"},
      {"tab\tname", "NUL or control character"},
      {"esc\x1b[0m", "NUL or control character"},
      {"del\x7f", "NUL or control character"},
      {"a//b", "empty component"},
      {"a/", "empty component"},
      {".", "\".\" or \"..\" component"},
      {"./a", "\".\" or \"..\" component"},
      {"a/./b", "\".\" or \"..\" component"},
      {"..", "\".\" or \"..\" component"},
      {"../x", "\".\" or \"..\" component"},
      {"../../etc/passwd", "\".\" or \"..\" component"},
      {"a/../../b", "\".\" or \"..\" component"},
      {"a/..", "\".\" or \"..\" component"},
      {std::string(NAME_MAX + 1, 'n'), "over 255 bytes"},
      {"d/" + std::string(NAME_MAX + 1, 'n'), "over 255 bytes"},
      {"main.py", "main.py is the program itself"},
      {"outputs", "outputs is the directory whose files come back"},
  };
  for (const auto& [path, problem] : cases) {
    EXPECT_THAT(WorkspacePathProblem(path), HasSubstr(problem)) << path;
  }
}

// ----------------------------------------------------------------------------- host fixtures

using testing::ReadFile;
using testing::WriteFile;

// A temporary directory standing in for the workspace (/tmp of a run), with its outputs/ and an
// O_PATH descriptor like the one init hands over.
class HostWorkspace {
 public:
  HostWorkspace() {
    if (mkdir(Outputs().c_str(), 0755) != 0) std::abort();
    fd_.Reset(open(dir_.Path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd_.Valid()) std::abort();
  }
  const std::string& Path() const { return dir_.Path(); }
  std::string Outputs() const { return dir_.Path() + "/outputs"; }
  int Fd() const { return fd_.Get(); }

 private:
  testing::TempDir dir_;
  UniqueFd fd_;
};

OutputCollection Collect(const HostWorkspace& ws, const OutputLimits& limits = {}) {
  auto result = CollectOutputs(ws.Fd(), limits);
  EXPECT_TRUE(result.ok()) << result.error().message;
  return result.ok() ? std::move(*result) : OutputCollection{};
}

const OutputFile* Find(const OutputCollection& c, const std::string& path) {
  for (const OutputFile& f : c.files) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::vector<std::string> Paths(const OutputCollection& c) {
  std::vector<std::string> paths;
  for (const OutputFile& f : c.files) paths.push_back(f.path);
  return paths;
}


// A program of a session that is still running while the supervisor works in the workspace: a
// thread that swaps each pair of names (RENAME_EXCHANGE) over and over until it is destroyed.
class Swapper {
 public:
  Swapper(int dirfd, std::vector<std::pair<std::string, std::string>> pairs)
      : thread_([this, dirfd, pairs = std::move(pairs)] {
          while (!stop_.load(std::memory_order_relaxed)) {
            for (const auto& [a, b] : pairs) {
              if (renameat2(dirfd, a.c_str(), dirfd, b.c_str(), RENAME_EXCHANGE) == 0) ++swaps_;
            }
          }
        }) {}
  ~Swapper() {
    stop_ = true;
    thread_.join();
  }
  Swapper(const Swapper&) = delete;
  Swapper& operator=(const Swapper&) = delete;
  long Swaps() const { return swaps_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<long> swaps_{0};
  std::thread thread_;
};

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

// --------------------------------------------------------------------------- CollectOutputs

TEST(CollectOutputs, ReadsRegularFilesInVersionOrderDepthFirst) {
  HostWorkspace ws;
  for (const char* name : {"figure-10.png", "figure-2.png", "figure-1.png", "b.txt"}) {
    WriteFile(ws.Outputs() + "/" + name, name);
  }
  ASSERT_EQ(mkdir((ws.Outputs() + "/a").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((ws.Outputs() + "/a/sub").c_str(), 0755), 0);
  WriteFile(ws.Outputs() + "/a/z.csv", "1,2\n");
  WriteFile(ws.Outputs() + "/a/sub/deep.txt", "deep");
  WriteFile(ws.Path() + "/not-an-output.txt", "outside outputs/");
  const OutputCollection c = Collect(ws);
  EXPECT_EQ(Paths(c), (std::vector<std::string>{"a/sub/deep.txt", "a/z.csv", "b.txt",
                                                "figure-1.png", "figure-2.png", "figure-10.png"}));
  for (const OutputFile& f : c.files) {
    EXPECT_EQ(f.type, "file") << f.path;
    EXPECT_EQ(f.skip, OutputSkip::kNone) << f.path;
  }
  EXPECT_EQ(Find(c, "a/z.csv")->data, "1,2\n");
  EXPECT_EQ(Find(c, "a/z.csv")->size, 4u);
  EXPECT_EQ(Find(c, "figure-10.png")->data, "figure-10.png");
  EXPECT_EQ(c.unlisted, 0u);
  EXPECT_FALSE(c.walk_incomplete);
}

TEST(CollectOutputs, AnEmptyOrMissingOutputsDirectoryGivesNothing) {
  HostWorkspace ws;
  OutputCollection c = Collect(ws);
  EXPECT_TRUE(c.files.empty());
  EXPECT_FALSE(c.walk_incomplete);
  ASSERT_EQ(rmdir(ws.Outputs().c_str()), 0);
  c = Collect(ws);
  EXPECT_TRUE(c.files.empty());
  EXPECT_FALSE(c.walk_incomplete);
  WriteFile(ws.Outputs(), "a file where the directory was");
  c = Collect(ws);
  EXPECT_TRUE(c.files.empty());
}

// A program that replaces /tmp/outputs by a link to a directory full of files gets nothing
// back: the link is not followed, not even to a directory beneath the workspace.
// A session's program swaps an output for a link to a host file and back while the walk runs:
// an entry seen as a file and found to be a link when opened is said to have changed, never
// blamed on its mode, and the host file is never read.
TEST(CollectOutputs, AnEntrySwappedForALinkMidWalkIsSaidToHaveChanged) {
  HostWorkspace ws;
  testing::TempDir host;
  WriteFile(host.Path() + "/secret", "host bytes");
  WriteFile(ws.Outputs() + "/f", "workspace bytes");
  ASSERT_EQ(symlink((host.Path() + "/secret").c_str(), (ws.Path() + "/link").c_str()), 0);
  Swapper swapper(ws.Fd(), {{"outputs/f", "link"}});
  bool changed = false;
  const auto until = steady_clock::now() + std::chrono::seconds(10);
  while (!changed && steady_clock::now() < until) {
    const OutputCollection c = Collect(ws);
    for (const OutputFile& f : c.files) {
      EXPECT_NE(f.skip, OutputSkip::kUnreadable) << "a swap is not a mode that keeps us out";
      EXPECT_NE(f.data, "host bytes");
      changed = changed || f.skip == OutputSkip::kChanged;
    }
    if (HasFailure()) break;
  }
  EXPECT_TRUE(changed) << "the swap never landed between the look and the open ("
                       << swapper.Swaps() << " swaps)";
}

// A write lease (the owner's, as a program's on its own file) would make a blocking open wait
// for the lease-break time (45 s): the walk's O_NONBLOCK open fails at once instead, and the
// file is listed as kept from the server, not as changed.
TEST(CollectOutputs, AFileUnderAWriteLeaseIsListedAtOnceNotWaitedFor) {
  HostWorkspace ws;
  WriteFile(ws.Outputs() + "/leased.txt", "bytes");
  UniqueFd holder(open((ws.Outputs() + "/leased.txt").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(holder.Valid());
  // The break notice goes to the holder, this process: SIGIO, whose default action kills.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGIO, &ignore, &old), 0);
  ASSERT_EQ(fcntl(holder.Get(), F_SETLEASE, F_WRLCK), 0) << strerror(errno);
  const auto start = steady_clock::now();
  const OutputCollection c = Collect(ws);
  ASSERT_EQ(fcntl(holder.Get(), F_SETLEASE, F_UNLCK), 0);
  sigaction(SIGIO, &old, nullptr);
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(2));
  ASSERT_EQ(c.files.size(), 1u);
  EXPECT_EQ(c.files[0].skip, OutputSkip::kUnreadable);
  EXPECT_EQ(c.files[0].data, "");
}

TEST(CollectOutputs, OutputsReplacedByALinkIsNotFollowed) {
  HostWorkspace ws;
  testing::TempDir host;
  WriteFile(host.Path() + "/host-secret.txt", "host bytes");
  ASSERT_EQ(rmdir(ws.Outputs().c_str()), 0);
  ASSERT_EQ(symlink(host.Path().c_str(), ws.Outputs().c_str()), 0);
  OutputCollection c = Collect(ws);
  EXPECT_TRUE(c.files.empty()) << c.files.size();

  ASSERT_EQ(unlink(ws.Outputs().c_str()), 0);
  ASSERT_EQ(mkdir((ws.Path() + "/elsewhere").c_str(), 0755), 0);
  WriteFile(ws.Path() + "/elsewhere/f.txt", "beneath, but through a link");
  ASSERT_EQ(symlink("elsewhere", ws.Outputs().c_str()), 0);
  c = Collect(ws);
  EXPECT_TRUE(c.files.empty()) << c.files.size();
}

TEST(CollectOutputs, LinksAreListedNotFollowed) {
  HostWorkspace ws;
  testing::TempDir host;
  const std::string secret = host.Path() + "/secret";
  WriteFile(secret, "host secret 4711");
  ASSERT_EQ(mkdir((host.Path() + "/dir").c_str(), 0755), 0);
  WriteFile(host.Path() + "/dir/inner.txt", "host dir content");
  WriteFile(ws.Path() + "/beside.txt", "workspace file");
  ASSERT_EQ(symlink(secret.c_str(), (ws.Outputs() + "/plot.png").c_str()), 0);
  ASSERT_EQ(symlink((host.Path() + "/dir").c_str(), (ws.Outputs() + "/dir").c_str()), 0);
  ASSERT_EQ(symlink("../beside.txt", (ws.Outputs() + "/relative").c_str()), 0);
  ASSERT_EQ(symlink("/proc/self/environ", (ws.Outputs() + "/environ").c_str()), 0);
  ASSERT_EQ(symlink("dangling", (ws.Outputs() + "/dangling").c_str()), 0);
  const OutputCollection c = Collect(ws);
  EXPECT_EQ(Paths(c),
            (std::vector<std::string>{"dangling", "dir", "environ", "plot.png", "relative"}));
  for (const OutputFile& f : c.files) {
    EXPECT_EQ(f.type, "symlink") << f.path;
    EXPECT_EQ(f.skip, OutputSkip::kNotRegular) << f.path;
    EXPECT_EQ(f.data, "") << f.path;
    EXPECT_EQ(f.size, 0u) << f.path;
  }
}

// The collector does not open a FIFO: opening one for reading waits for a writer. Were it
// opened, the test opens the writing end itself, so that a failure is a failure, not a hang.
TEST(CollectOutputs, AFifoIsListedWithoutBeingOpened) {
  HostWorkspace ws;
  const std::string fifo = ws.Outputs() + "/out.csv";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  WriteFile(ws.Outputs() + "/z.txt", "after the fifo");
  auto collected = std::async(std::launch::async, [&ws] { return Collect(ws); });
  if (collected.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "the collector waits on the FIFO";
    UniqueFd writer(open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  }
  const OutputCollection c = collected.get();
  ASSERT_EQ(Paths(c), (std::vector<std::string>{"out.csv", "z.txt"}));
  EXPECT_EQ(c.files[0].type, "fifo");
  EXPECT_EQ(c.files[0].skip, OutputSkip::kNotRegular);
  EXPECT_EQ(c.files[1].data, "after the fifo");
}

TEST(CollectOutputs, ASocketIsListedAsOne) {
  HostWorkspace ws;
  UniqueFd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = ws.Outputs() + "/s.sock";
  ASSERT_LT(path.size(), sizeof addr.sun_path);
  strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(sock.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const OutputCollection c = Collect(ws);
  ASSERT_EQ(c.files.size(), 1u);
  EXPECT_EQ(c.files[0].type, "socket");
  EXPECT_EQ(c.files[0].skip, OutputSkip::kNotRegular);
}

// 10 GiB that take no space: listed with its size, never read, and quickly so.
TEST(CollectOutputs, ASparseFileOf10GiBIsListedTooLargeAndNotRead) {
  HostWorkspace ws;
  {
    UniqueFd fd(open((ws.Outputs() + "/huge.bin").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_TRUE(fd.Valid());
    ASSERT_EQ(ftruncate(fd.Get(), 10ll << 30), 0) << strerror(errno);
  }
  const auto start = steady_clock::now();
  const OutputCollection c = Collect(ws);
  const auto took = steady_clock::now() - start;
  ASSERT_EQ(c.files.size(), 1u);
  EXPECT_EQ(c.files[0].size, 10ull << 30);
  EXPECT_EQ(c.files[0].skip, OutputSkip::kTooLarge);
  EXPECT_EQ(c.files[0].data, "");
  EXPECT_LT(took, milliseconds(1000));
}

TEST(CollectOutputs, AFileOfExactlyTheLimitIsReadOneByteMoreIsNot) {
  HostWorkspace ws;
  OutputLimits limits;
  limits.max_file_bytes = 1000;
  WriteFile(ws.Outputs() + "/at-limit", std::string(1000, 'a'));
  WriteFile(ws.Outputs() + "/over-limit", std::string(1001, 'b'));
  WriteFile(ws.Outputs() + "/empty", "");
  const OutputCollection c = Collect(ws, limits);
  ASSERT_EQ(Paths(c), (std::vector<std::string>{"at-limit", "empty", "over-limit"}));
  EXPECT_EQ(c.files[0].skip, OutputSkip::kNone);
  EXPECT_EQ(c.files[0].data, std::string(1000, 'a'));
  EXPECT_EQ(c.files[0].size, 1000u);
  EXPECT_EQ(c.files[1].skip, OutputSkip::kNone);
  EXPECT_EQ(c.files[1].size, 0u);
  EXPECT_EQ(c.files[2].skip, OutputSkip::kTooLarge);
  EXPECT_EQ(c.files[2].size, 1001u);
  EXPECT_EQ(c.files[2].data, "");
}

TEST(CollectOutputs, FilesPastMaxFilesAreListedNotRead) {
  HostWorkspace ws;
  OutputLimits limits;
  limits.max_files = 3;
  for (int i = 1; i <= 5; ++i) WriteFile(ws.Outputs() + "/f" + std::to_string(i), "x");
  ASSERT_EQ(symlink("f1", (ws.Outputs() + "/f0-link").c_str()), 0);  // not read: not counted
  const OutputCollection c = Collect(ws, limits);
  ASSERT_EQ(Paths(c), (std::vector<std::string>{"f0-link", "f1", "f2", "f3", "f4", "f5"}));
  EXPECT_EQ(c.files[0].skip, OutputSkip::kNotRegular);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(c.files[i].skip, OutputSkip::kNone) << i;
    EXPECT_EQ(c.files[i].data, "x");
  }
  for (int i = 4; i <= 5; ++i) {
    EXPECT_EQ(c.files[i].skip, OutputSkip::kTooMany) << i;
    EXPECT_EQ(c.files[i].data, "");
    EXPECT_EQ(c.files[i].size, 1u);
  }
}

// A file at depth 32 is read; the directory that would be level 33 is listed, not entered.
TEST(CollectOutputs, DirectoriesDeeperThanTheLimitAreListedNotWalked) {
  HostWorkspace ws;
  std::string dir = ws.Outputs();
  std::string rel;
  for (int level = 1; level <= 40; ++level) {
    dir += "/d";
    rel += rel.empty() ? "d" : "/d";
    ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << level;
    WriteFile(dir + "/f", std::to_string(level));
  }
  const OutputCollection c = Collect(ws);
  std::string at32;
  for (int level = 1; level <= 32; ++level) at32 += "d/";
  const std::string at33 = at32 + "d";
  ASSERT_EQ(c.files.size(), 33u) << "32 files and one directory";
  EXPECT_EQ(c.files[0].path, at33);
  EXPECT_EQ(c.files[0].type, "directory");
  EXPECT_EQ(c.files[0].skip, OutputSkip::kTooDeep);
  EXPECT_EQ(c.files[1].path, at32 + "f");
  EXPECT_EQ(c.files[1].data, "32");
  EXPECT_EQ(c.files.back().path, "d/f");
  EXPECT_EQ(Find(c, at33 + "/f"), nullptr);
  EXPECT_FALSE(c.walk_incomplete);
}

TEST(CollectOutputs, NamesAreKeptAsBytes) {
  HostWorkspace ws;
  const std::string newline = "two\nlines.txt";
  const std::string invalid = "bad\xff\xfe.bin";
  const std::string non_ascii = "caf\xc3\xa9 r\xc3\xa9sum\xc3\xa9.md";
  for (const std::string& name : {newline, invalid, non_ascii}) {
    WriteFile(ws.Outputs() + "/" + name, "content of " + name);
  }
  const OutputCollection c = Collect(ws);
  ASSERT_EQ(c.files.size(), 3u);
  for (const std::string& name : {newline, invalid, non_ascii}) {
    const OutputFile* f = Find(c, name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->data, "content of " + name);
  }
}

TEST(CollectOutputs, ListingAndWalkAreCapped) {
  HostWorkspace ws;
  OutputLimits limits;
  limits.max_listed = 5;
  for (int i = 0; i < 8; ++i) WriteFile(ws.Outputs() + "/f" + std::to_string(i), "");
  OutputCollection c = Collect(ws, limits);
  EXPECT_EQ(c.files.size(), 5u);
  EXPECT_EQ(c.unlisted, 3u);
  EXPECT_FALSE(c.walk_incomplete);

  limits.max_entries = 6;
  c = Collect(ws, limits);
  EXPECT_TRUE(c.walk_incomplete);
  EXPECT_EQ(c.files.size() + c.unlisted, 6u);
}

// 100,000 empty files (a workspace has one inode per KiB: 128 MiB take them): every entry is
// looked at, 256 are listed, 16 read, and the rest counted. Measured on the build host: about
// 0.3 s; the bound is 5 s.
TEST(CollectOutputs, AHundredThousandFilesAreCountedInBoundedTime) {
  HostWorkspace ws;
  {
    UniqueFd dir(open(ws.Outputs().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    for (int i = 0; i < 100'000; ++i) {
      const std::string name = "f-" + std::to_string(i);
      UniqueFd f(openat(dir.Get(), name.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
      ASSERT_TRUE(f.Valid()) << name << ": " << strerror(errno);
    }
  }
  const auto start = steady_clock::now();
  const OutputCollection c = Collect(ws);
  const auto took = std::chrono::duration_cast<milliseconds>(steady_clock::now() - start);
  EXPECT_EQ(c.files.size(), 256u);
  EXPECT_EQ(c.unlisted, 100'000u - 256u);
  EXPECT_FALSE(c.walk_incomplete);
  ASSERT_FALSE(c.files.empty());
  EXPECT_EQ(c.files[0].path, "f-0");
  EXPECT_EQ(c.files[10].path, "f-10");
  EXPECT_EQ(c.files[15].skip, OutputSkip::kNone);
  EXPECT_EQ(c.files[16].skip, OutputSkip::kTooMany);
  EXPECT_LT(took, milliseconds(5000)) << "collection took " << took.count() << " ms";
  std::cout << "[ measure  ] collecting 100,000 empty files took " << took.count() << " ms\n";
}

// ---------------------------------------------------------------------------- WriteInputFiles

// The ids input files are written as: the sandbox's default host ids when root (which needs
// the directory to be theirs), else the caller's own.
struct Ids {
  uid_t uid;
  gid_t gid;
};

Ids WriterIds(const HostWorkspace& ws) {
  if (geteuid() != 0) return {geteuid(), getegid()};
  const Ids ids{65532, 65532};
  if (chown(ws.Path().c_str(), ids.uid, ids.gid) != 0) std::abort();
  return ids;
}

TEST(WriteInputFiles, CreatesFilesAndDirectoriesAsTheSandboxUser) {
  HostWorkspace ws;
  const Ids ids = WriterIds(ws);
  const std::string binary("\x00\x01\xff\xfe\x89PNG\r\n", 10);
  const std::vector<InputFile> files = {
      {"in.csv", "a,b\n1,2\n"}, {"data/deep/blob.bin", binary}, {"data/empty", ""}};
  const uid_t fsuid_before = static_cast<uid_t>(setfsuid(static_cast<uid_t>(-1)));
  const mode_t umask_before = umask(022);
  auto r = WriteInputFiles(ws.Fd(), files, ids.uid, ids.gid);
  umask(umask_before);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(static_cast<uid_t>(setfsuid(static_cast<uid_t>(-1))), fsuid_before)
      << "the thread's fsuid was not put back";
  EXPECT_EQ(ReadFile(ws.Path() + "/in.csv"), "a,b\n1,2\n");
  EXPECT_EQ(ReadFile(ws.Path() + "/data/deep/blob.bin"), binary);
  EXPECT_EQ(ReadFile(ws.Path() + "/data/empty"), "");
  for (const auto& [path, mode] :
       std::vector<std::pair<std::string, mode_t>>{{"in.csv", S_IFREG | 0644},
                                                   {"data", S_IFDIR | 0755},
                                                   {"data/deep", S_IFDIR | 0755},
                                                   {"data/deep/blob.bin", S_IFREG | 0644}}) {
    struct stat st {};
    ASSERT_EQ(lstat((ws.Path() + "/" + path).c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_uid, ids.uid) << path;
    EXPECT_EQ(st.st_gid, ids.gid) << path;
    EXPECT_EQ(st.st_mode, mode) << path;
  }
}

TEST(WriteInputFiles, NoFilesIsNothingToDo) {
  HostWorkspace ws;
  EXPECT_TRUE(WriteInputFiles(ws.Fd(), {}, 1, 1).ok());
}

// A link on the way (which the program cannot have made yet, but the workspace skeleton
// might hold one) is not followed: nothing is written where it points.
TEST(WriteInputFiles, ALinkOnTheWayIsNotFollowed) {
  HostWorkspace ws;
  const Ids ids = WriterIds(ws);
  testing::TempDir elsewhere;
  ASSERT_EQ(chmod(elsewhere.Path().c_str(), 0777), 0);
  ASSERT_EQ(symlink(elsewhere.Path().c_str(), (ws.Path() + "/data").c_str()), 0);
  ASSERT_EQ(symlink((elsewhere.Path() + "/target").c_str(), (ws.Path() + "/file").c_str()), 0);
  const std::vector<InputFile> via_dir = {{"data/x.txt", "through a link"}};
  auto r = WriteInputFiles(ws.Fd(), via_dir, ids.uid, ids.gid);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("data/x.txt"));
  EXPECT_THAT(r.error().message, HasSubstr("a link or mount is in the way"));
  const std::vector<InputFile> at_name = {{"file", "through a link"}};
  r = WriteInputFiles(ws.Fd(), at_name, ids.uid, ids.gid);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("input file file"));
  EXPECT_EQ(access((elsewhere.Path() + "/x.txt").c_str(), F_OK), -1);
  EXPECT_EQ(access((elsewhere.Path() + "/target").c_str(), F_OK), -1);
}

// Issue 23's chmod: from a session's second call on, the program of an earlier call runs while
// input files are written. It swaps each directory the supervisor makes for a link to a host
// file (RENAME_EXCHANGE with a ready link); the directory's mode must never be set through that
// link. The writes may fail, as the program wanted; the host file keeps its mode.
TEST(WriteInputFiles, ADirectorySwappedForALinkAfterItIsMadeIsNeverChmodThroughIt) {
  constexpr int kDirs = 64;
  testing::TempDir host;
  ASSERT_EQ(chmod(host.Path().c_str(), 0755), 0) << "the sandbox's ids may pass through it";
  const std::string target = host.Path() + "/private";
  WriteFile(target, "key");
  ASSERT_EQ(chmod(target.c_str(), 0600), 0);
  if (geteuid() == 0) {
    ASSERT_EQ(chown(target.c_str(), 65532, 65532), 0);
  }
  const auto until = steady_clock::now() + std::chrono::seconds(1);
  long swaps = 0;
  int rounds = 0;
  while (steady_clock::now() < until && ModeOf(target) == 0600) {
    HostWorkspace ws;
    const Ids ids = WriterIds(ws);
    std::vector<std::pair<std::string, std::string>> pairs;
    std::vector<InputFile> files;
    for (int i = 0; i < kDirs; ++i) {
      const std::string dir = "a" + std::to_string(i), link = "l" + std::to_string(i);
      ASSERT_EQ(symlink(target.c_str(), (ws.Path() + "/" + link).c_str()), 0);
      pairs.emplace_back(dir, link);
      files.push_back({dir + "/f", "x"});
    }
    Swapper swapper(ws.Fd(), pairs);
    (void)WriteInputFiles(ws.Fd(), files, ids.uid, ids.gid);
    swaps += swapper.Swaps();
    ++rounds;
  }
  EXPECT_EQ(ModeOf(target), 0600u) << "chmod through a swapped-in link, round " << rounds;
  EXPECT_GT(swaps, 0) << "the swapper never raced the writer: the test proves nothing";
}

TEST(WriteInputFiles, AnExistingFileIsNotReplaced) {
  HostWorkspace ws;
  const Ids ids = WriterIds(ws);
  WriteFile(ws.Path() + "/main.txt", "was there");
  const std::vector<InputFile> files = {{"main.txt", "new"}};
  auto r = WriteInputFiles(ws.Fd(), files, ids.uid, ids.gid);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("it exists already"));
  EXPECT_EQ(ReadFile(ws.Path() + "/main.txt"), "was there");
}

}  // namespace
}  // namespace mcpexec::sandbox
