// Output collection (catalogue FS-06): what a hostile program leaves in /tmp/outputs is read by
// the supervisor on the host, outside every namespace of the run, and `run --output-dir` writes
// it there. No host byte may come back through a link, nothing may hang on a FIFO or a huge file,
// the caps hold, and input paths cannot leave the workspace.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "../support/host_files.h"
#include "../support/host_processes.h"
#include "adversarial_test.h"
#include "base/base64.h"
#include "host_fixtures.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

// Waits for `run` at most `limit`; past it the failure is recorded and mcp-exec is killed, so
// that a hang fails the case instead of the suite.
Outcome WaitAtMost(BackgroundRun& run, std::chrono::seconds limit) {
  auto finished = std::async(std::launch::async, [&run] { return run.Wait(); });
  if (finished.wait_for(limit) != std::future_status::ready) {
    ADD_FAILURE() << "mcp-exec run still runs after " << limit.count() << " s: killed";
    kill(run.Pid(), SIGKILL);
  }
  return finished.get();
}

// The result's `files`, by path.
std::map<std::string, json> Listed(const Outcome& r) {
  std::map<std::string, json> files;
  if (!r.json.is_object() || !r.json["files"].is_array()) return files;
  for (const json& f : r.json["files"]) files[f.value("path", "")] = f;
  return files;
}

// Regular files under `dir`, relative to it, sorted.
std::vector<std::string> FilesUnder(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file()) files.push_back(it->path().lexically_relative(dir).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Expects none of `secrets` in what mcp-exec printed nor in any file it wrote under `dir`.
void ExpectNoneOf(const std::vector<std::string>& secrets, const Outcome& r,
                  const std::string& dir) {
  for (const std::string& secret : secrets) {
    EXPECT_EQ(r.out.find(secret), std::string::npos) << "host bytes in the result: " << secret;
    EXPECT_EQ(r.err.find(secret), std::string::npos) << "host bytes on stderr: " << secret;
    for (const std::string& file : FilesUnder(dir)) {
      EXPECT_EQ(ReadHostFile(dir + "/" + file).find(secret), std::string::npos)
          << "host bytes in --output-dir/" << file << ": " << secret;
    }
  }
}

// Entries of a host file that are worth looking for (separated by newlines or NULs, at least 12
// bytes): what a followed link to it would bring back.
std::vector<std::string> Pieces(const std::string& path) {
  std::vector<std::string> pieces;
  std::string piece;
  for (const char c : ReadHostFile(path) + '\n') {
    if (c == '\n' || c == '\0') {
      if (piece.size() >= 12) pieces.push_back(piece);
      piece.clear();
    } else {
      piece += c;
    }
  }
  return pieces;
}

// A listed file's reason; "" when it has none (null).
std::string Reason(const json& file) {
  return file.contains("reason") && file["reason"].is_string() ? file["reason"].get<std::string>()
                                                               : "";
}

void ExpectNotReturned(std::map<std::string, json>& files, const std::string& path,
                       const std::string& reason) {
  ASSERT_TRUE(files.count(path)) << path << " is not listed";
  const json& f = files[path];
  EXPECT_EQ(f["returned"], false) << path;
  EXPECT_THAT(Reason(f), HasSubstr(reason)) << path;
}

class OutputDir {
 public:
  explicit OutputDir(RunMode mode) : dir_(mode) { EXPECT_EQ(dir_.Problem(), ""); }
  const std::string& Path() const { return dir_.Path(); }
  std::vector<std::string> Args() const { return {"--output-dir", dir_.Path()}; }

 private:
  ModeOwnedDir dir_;
};

TEST_P(Adversarial, FS_06_LinksInOutputsAreListedNotFollowed) {
  const std::string token = RandomToken();
  const std::string planted = HostSetup::Get().WriteSharedFile(
      "fs06-planted-" + ModeName(GetParam()), "host secret " + token + "\n");
  OutputDir out(GetParam());
  // The supervisor's own /proc/self/environ holds a second token.
  const std::string env_token = RandomToken();
  const Outcome r = RunProbe("fs06_symlinks", {{"host_file", planted}}, out.Args(),
                             WithEnv({"FS06_SUPERVISOR_SECRET=" + env_token}));
  json o = ContainedReport(r);
  const std::vector<std::string> links = {"plot.png", "environ-1.txt", "environ-self.txt",
                                          "fd-0.txt", "planted.txt",   "up.txt",
                                          "etc",      "sub/inner.csv"};
  for (const std::string& link : links) {
    EXPECT_EQ(o["symlink " + link], json("ok")) << "positive control: " << link;
  }
  EXPECT_EQ(o["readlink plot.png"], json("/etc/shadow"));
  std::map<std::string, json> files = Listed(r);
  EXPECT_EQ(files.size(), links.size() + 1) << r.json["files"];
  for (const std::string& link : links) {
    ExpectNotReturned(files, link, "not a regular file (symlink)");
    EXPECT_EQ(files[link]["size"], 0) << link;
    EXPECT_EQ(files[link]["mime_type"], nullptr) << link;
  }
  EXPECT_EQ(files["control.txt"]["returned"], true);
  EXPECT_EQ(FilesUnder(out.Path()), std::vector<std::string>{"control.txt"});
  std::vector<std::string> secrets = {token, env_token};
  // What the links would bring back on the host, where the test can read it (as root; the
  // environment of the host's PID 1 may be empty).
  for (const char* host_file : {"/etc/shadow", "/proc/1/environ"}) {
    const std::vector<std::string> pieces = Pieces(host_file);
    secrets.insert(secrets.end(), pieces.begin(), pieces.end());
  }
  if (geteuid() == 0) {
    EXPECT_GT(secrets.size(), 2u) << "positive control: /etc/shadow was read";
  }
  ExpectNoneOf(secrets, r, out.Path());
  unlink(planted.c_str());
}

TEST_P(Adversarial, FS_06_OutputsReplacedByALinkGivesNothing) {
  const std::string token = RandomToken();
  ModeOwnedDir host_dir(GetParam());
  ASSERT_EQ(host_dir.Problem(), "");
  { std::ofstream(host_dir.Path() + "/planted.txt") << "host secret " << token << "\n"; }
  for (const bool beneath : {false, true}) {
    OutputDir out(GetParam());
    const Outcome r = RunProbe("fs06_outputs_link",
                               {{"target", host_dir.Path()}, {"beneath", beneath}}, out.Args());
    json o = ContainedReport(r);
    EXPECT_EQ(o["symlink /tmp/outputs"], json("ok")) << "positive control";
    EXPECT_EQ(o["listdir /tmp/outputs"], json("ENOENT")) << "the host's directory is not there";
    if (beneath) {
      EXPECT_EQ(o["symlink /tmp/outputs beneath"], json("ok"));
    }
    EXPECT_EQ(r.json["files"], json::array()) << "beneath " << beneath;
    EXPECT_FALSE(r.json.contains("files_walk_incomplete"));
    EXPECT_EQ(FilesUnder(out.Path()), std::vector<std::string>{});
    ExpectNoneOf({token}, r, out.Path());
  }
}

// link() across mounts is EXDEV: a name in the workspace cannot reach an inode of the rootfs
// (and the host's files are not in the sandbox's tree to begin with).
TEST_P(Adversarial, FS_06_HardLinksOutOfTheWorkspaceAreRefused) {
  OutputDir out(GetParam());
  const Outcome r = RunProbe("fs06_hardlink", json::object(), out.Args());
  json o = ContainedReport(r);
  ExpectEach(
      o, {"link /etc/passwd", "link /proc/self/fd (AT_SYMLINK_FOLLOW)", "link /usr/bin/python3"},
      "EXDEV");
  EXPECT_EQ(o["link within the workspace"], json("ok")) << "positive control";
  EXPECT_EQ(o["outputs"], json({"inside.txt"}));
  EXPECT_EQ(r.json["files"], json({{{"path", "inside.txt"},
                                    {"size", 16},
                                    {"mime_type", "text/plain"},
                                    {"returned", true},
                                    {"reason", nullptr}}}));
  EXPECT_EQ(ReadHostFile(out.Path() + "/inside.txt"), "workspace bytes\n");
  EXPECT_EQ(FilesUnder(out.Path()), std::vector<std::string>{"inside.txt"});
}

// Measured on the build host: the run takes 0.1 to 0.2 s, as one without the FIFOs; the bound
// is 10 s.
TEST_P(Adversarial, FS_06_FifosAreListedAndNothingWaits) {
  OutputDir out(GetParam());
  BackgroundRun run = StartProbe("fs06_fifo", json::object(), out.Args());
  const Outcome r = WaitAtMost(run, std::chrono::seconds(30));
  json o = ContainedReport(r);
  ExpectEach(o, {"mkfifo out.csv", "mkfifo plot.png"}, "ok");
  std::map<std::string, json> files = Listed(r);
  for (const char* fifo : {"out.csv", "plot.png"}) {
    ExpectNotReturned(files, fifo, "not a regular file (fifo)");
    EXPECT_EQ(files[fifo]["mime_type"], nullptr);
  }
  EXPECT_EQ(files["z-control.txt"]["returned"], true);
  EXPECT_EQ(FilesUnder(out.Path()), std::vector<std::string>{"z-control.txt"});
  EXPECT_LT(r.elapsed, milliseconds(10'000)) << r.Describe();
}

// A file can be no larger than the workspace (RLIMIT_FSIZE): in the default 64 MiB workspace a
// 10 GiB truncate is EFBIG, and the largest sparse file is 64 MiB. In a workspace of 16 GiB the
// 10 GiB file is made. Either way it is listed with its size and not read, quickly; the
// supervisor's memory shows it.
TEST_P(Adversarial, FS_06_ASparseFileIsListedNotRead) {
  const uint64_t size = 10ull << 30;
  for (const uint64_t workspace : {64ull << 20, 16ull << 30}) {
    SCOPED_TRACE("workspace " + std::to_string(workspace));
    OutputDir out(GetParam());
    BackgroundRun run =
        StartProbe("fs06_sparse", {{"size", size}},
                   // Cold in every suite: the collection is the same in every engine.
                   {"--output-dir", out.Path(), "--workspace-bytes", std::to_string(workspace),
                    "--engine", "cold"},
                   SamplingPeakMemory());
    const Outcome r = WaitAtMost(run, std::chrono::seconds(30));
    json o = ContainedReport(r);
    EXPECT_EQ(o["RLIMIT_FSIZE"], workspace);
    const uint64_t made = std::min(size, workspace);
    if (workspace < size) {
      EXPECT_EQ(o["truncate"], json("EFBIG"));
      EXPECT_EQ(o["truncate to RLIMIT_FSIZE"], json("ok"));
    } else {
      EXPECT_EQ(o["truncate"], json("ok"));
    }
    EXPECT_EQ(o["size"], made);
    EXPECT_EQ(o["blocks"], 0);
    std::map<std::string, json> files = Listed(r);
    ExpectNotReturned(files, "huge.bin", "larger than MCP_EXEC_MAX_OUTPUT_FILE_BYTES");
    EXPECT_EQ(files["huge.bin"]["size"], made);
    EXPECT_EQ(FilesUnder(out.Path()), std::vector<std::string>{});
    EXPECT_LT(r.elapsed, milliseconds(10'000)) << r.Describe();
    EXPECT_GT(r.peak_rss_kib, 1024) << "positive control: mcp-exec's memory was sampled";
    EXPECT_LT(r.peak_rss_kib, 64 * 1024) << "the supervisor read the file";
  }
}

// 100,000 empty files: the workspace has one inode per KiB (65,536 in the default 64 MiB, where
// the 65,531st file is ENOSPC), so this run gets 128 MiB and 131,072. Every file is looked at,
// 256 are listed in version order, 16 read, the rest counted. Measured on the build host: the
// run's time after the program's (set-up, the walk, removing the workspace) 0.4 to 0.5 s, and
// 1.2 s while other builds ran; the walk alone about 0.3 s
// (CollectOutputs.AHundredThousandFilesAreCountedInBoundedTime). The bound is 5 s.
TEST_P(Adversarial, FS_06_AHundredThousandFilesAreCountedInBoundedTime) {
  OutputDir out(GetParam());
  constexpr int kCount = 100'000;
  BackgroundRun run =
      StartProbe("fs06_many_files", {{"count", kCount}},
                 {"--output-dir", out.Path(), "--timeout", "120", "--workspace-bytes", "128m"});
  const Outcome r = WaitAtMost(run, std::chrono::seconds(150));
  json o = ContainedReport(r);
  EXPECT_EQ(o["create"], json("ok"));
  ASSERT_EQ(o["files made"], kCount);
  ASSERT_TRUE(r.json["files"].is_array());
  const json& files = r.json["files"];
  ASSERT_EQ(files.size(), 256u);
  EXPECT_EQ(r.json.value("files_not_listed", 0), kCount - 256);
  EXPECT_FALSE(r.json.contains("files_walk_incomplete"));
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(files[i]["path"], "f-" + std::to_string(i));
    EXPECT_EQ(files[i]["returned"], i < 16) << i;
    if (i >= 16) {
      EXPECT_THAT(Reason(files[i]), HasSubstr("MCP_EXEC_MAX_OUTPUT_FILES")) << i;
    }
  }
  EXPECT_EQ(FilesUnder(out.Path()).size(), 16u);
  const milliseconds program(r.json.value("duration_ms", 0));
  const milliseconds after = r.elapsed - program;
  std::cout << "[ measure  ] " << kCount << " files: run " << r.elapsed.count() << " ms, program "
            << program.count() << " ms, the rest (set-up, collection) " << after.count() << " ms\n";
  EXPECT_LT(after, milliseconds(5'000)) << r.Describe();
}

// The version each of live-00 to live-15 holds, or why one is not a page the writer wrote.
std::vector<long> LiveVersions(const std::string& dir, std::string* problem) {
  std::vector<long> versions;
  for (int i = 0; i < 16; ++i) {
    const std::string name = (i < 10 ? "live-0" : "live-") + std::to_string(i);
    const std::string data = ReadHostFile(dir + "/" + name);
    const std::string line = data.substr(0, 16);
    std::string page;
    for (int k = 0; k < 256; ++k) page += line;
    if (data.size() != 4096 || line.back() != '\n' || data != page) {
      *problem = name + " is not a whole page of one version";
      return versions;
    }
    versions.push_back(std::stol(line));
  }
  return versions;
}

// A daemon writes version after version, version v into live-(v % 16), for ever; the program
// exits while it writes. Why the result is consistent: the supervisor reads /tmp/outputs only
// after it has reaped the sandbox's init, and init is PID 1 of the run's PID namespace: the
// kernel does not let it finish exiting (zap_pid_ns_processes) before every other process of
// the namespace is killed and gone. So the writer is dead before the first byte is read, and
// the 16 files hold its last 16 versions: whole pages (a one-page pwrite is not cut by SIGKILL),
// numbers n to n + 15, each in its file. A collector reading beside the writer would find the
// files of different rounds (a spread over 15): a simulation on the host, this collector's code
// beside this writer and its empty directories, found that in 200 of 200 collections.
TEST_P(Adversarial, FS_06_FilesRewrittenAfterTheProgramExitsAreCollectedWhole) {
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    OutputDir out(GetParam());
    const std::string marker = NewMarker("fs06-writer");
    constexpr int kVersions = 50;
    BackgroundRun run =
        StartProbe("fs06_rewritten", {{"versions", kVersions}, {"marker", marker}}, out.Args());
    const Outcome r = WaitAtMost(run, std::chrono::seconds(30));
    json o = ContainedReport(r);
    EXPECT_EQ(o["writer announced"], json("written")) << "positive control: the writer ran";
    EXPECT_EQ(o["live files"].size(), 16u);
    ASSERT_TRUE(r.json["files"].is_array());
    ASSERT_EQ(r.json["files"].size(), 16u) << r.json["files"];
    for (const json& f : r.json["files"]) {
      EXPECT_EQ(f["returned"], true) << f;
      EXPECT_EQ(f["size"], 4096) << f;
    }
    const std::vector<HostProcess> left = FindProcesses(marker);
    EXPECT_THAT(left, ::testing::IsEmpty()) << "left running: " << DescribeProcesses(left);
    KillAll(left);
    // A session's outputs are read while the processes a call left behind still run
    // (docs/sessions.md): each file is read within its bounds, but not at one moment with the
    // others. What holds there is above: every file listed and returned, none larger than it
    // is, and the writer gone with the session.
    if (InSession()) continue;
    std::string problem;
    const std::vector<long> versions = LiveVersions(out.Path(), &problem);
    ASSERT_EQ(problem, "");
    const auto [low, high] = std::minmax_element(versions.begin(), versions.end());
    EXPECT_EQ(*high - *low, 15) << "the files come from different rounds: read beside the writer";
    for (size_t i = 0; i < versions.size(); ++i) EXPECT_EQ(versions[i] % 16, long(i)) << i;
    EXPECT_GE(*low, kVersions - 15);
  }
}

// What fs06_swap_race's pairs may be listed as: the types each name can have, and the content
// a returned file must have (the sandbox's own bytes, whichever name it was read under).
struct Swappable {
  std::set<std::string> types;
  std::string content;
};

// What a listed entry was when the collector looked: "file" when returned, the type a skipped
// non-file names in its reason, or "" when the result does not say (the open failed, a cap).
std::string SeenAs(const json& file) {
  if (file["returned"] == true) return "file";
  const std::string reason = Reason(file);
  const std::string prefix = "not a regular file (";
  if (reason.rfind(prefix, 0) != 0 || reason.back() != ')') return "";
  return reason.substr(prefix.size(), reason.size() - prefix.size() - 1);
}

std::map<std::string, Swappable> SwapRaceEntries(int pairs) {
  std::map<std::string, Swappable> entries;
  for (int n = 0; n < pairs; ++n) {
    const std::string content = "sandbox file " + std::to_string(n) + "\n";
    for (const char* name : {"f-", "l-"}) {
      entries[name + std::to_string(n) + ".txt"] = {{"file", "symlink"}, content};
    }
  }
  for (int n = 0; n < pairs / 2; ++n) {
    const std::string d = "d-" + std::to_string(n), p = "p-" + std::to_string(n);
    const std::string e = "e-" + std::to_string(n), h = "h-" + std::to_string(n);
    for (const std::string& name : {d, p}) {
      entries[name] = {{"directory", "fifo"}, ""};
      entries[name + "/z-inner.txt"] = {{"file"}, "sandbox inner " + d + "\n"};
    }
    for (const std::string& name : {e, h}) {
      entries[name] = {{"directory", "symlink"}, ""};
      entries[name + "/z-inner.txt"] = {{"file"}, "sandbox inner " + e + "\n"};
    }
  }
  return entries;
}

// Issue 23, part 4: the walk against swap races. Daemons of the run swap, for ever, a file for a
// link to a host file (or to the supervisor's /proc/self/environ), a directory for a FIFO, and a
// directory of 150 empty ones for a link to a host directory that holds a z-inner.txt of its own
// and a file whose name holds a token. In a session the collector walks while they swap (they
// die with the session, after the result); in a one-shot run they are dead first. What holds
// it: every lookup is openat2 with RESOLVE_NO_SYMLINKS beneath the descriptor of the directory
// being walked, directories are opened O_DIRECTORY and files O_NONBLOCK, and a file is read only
// if fstat of the open descriptor says it is a regular file. It fails if the walk follows a link
// (host names or bytes in the result), opens a FIFO that may wait (the run hangs), or lists an
// entry as something it never was (a returned "symlink", a name that is not the sandbox's).
// Checked by mutation on the build host: a walk that opened e-N/z-inner.txt by its path from
// /tmp/outputs (O_NOFOLLOW, which guards the last component only) brought the host's file back
// in 6 runs of 6 in the session twin as the unprivileged user; as root, where the run's cgroup
// shares the CPU among the daemons, in about half. --cpus 8: at the default one CPU of bandwidth
// the three spinning daemons are throttled for most of each period.
TEST_P(Adversarial, FS_06_SwapRacesInOutputsBringNoHostBytesAndNothingWaits) {
  constexpr int kPairs = 16;
  const std::string file_token = RandomToken(), env_token = RandomToken();
  const std::string dir_token = RandomToken();
  const std::string host_file = HostSetup::Get().WriteSharedFile(
      "fs06-swap-" + ModeName(GetParam()), "host secret " + file_token + "\n");
  ModeOwnedDir host_dir(GetParam());
  ASSERT_EQ(host_dir.Problem(), "");
  WriteFile(host_dir.Path() + "/host-" + dir_token, "host secret " + dir_token + "\n");
  WriteFile(host_dir.Path() + "/z-inner.txt", "host secret " + dir_token + "\n");
  OutputDir out(GetParam());
  const std::string marker = NewMarker("fs06-swapper");
  LaunchOptions options = WithEnv({"FS06_SUPERVISOR_SECRET=" + env_token});
  BackgroundRun run =
      StartProbe("fs06_swap_race",
                 {{"host_file", host_file},
                  {"host_dir", host_dir.Path()},
                  {"pairs", kPairs},
                  {"marker", marker}},
                 {"--output-dir", out.Path(), "--max-output-files", "64", "--cpus", "8"}, options);
  const Outcome r = WaitAtMost(run, std::chrono::seconds(30));
  json o = ContainedReport(r);
  EXPECT_EQ(o["symlink"], json({"ok"})) << "positive control";
  EXPECT_EQ(o["mkfifo"], json({"ok"})) << "positive control";
  EXPECT_EQ(o["mkdir"], json({"ok"})) << "positive control";
  EXPECT_EQ(o["swappers announced"], json("sss")) << "positive control: every pair swapped";
  EXPECT_LT(r.elapsed, milliseconds(10'000)) << r.Describe();

  const std::map<std::string, Swappable> entries = SwapRaceEntries(kPairs);
  std::map<std::string, json> files = Listed(r);
  EXPECT_FALSE(files.empty()) << r.Describe();
  for (const auto& [path, f] : files) {
    const auto expected = entries.find(path);
    if (expected == entries.end()) {
      ADD_FAILURE() << "listed, and not a name the sandbox made: " << f;
      continue;
    }
    const std::string type = SeenAs(f);
    if (!type.empty()) {
      EXPECT_TRUE(expected->second.types.count(type)) << "listed as what it never was: " << f;
    }
    if (f["returned"] == true) {
      EXPECT_EQ(ReadHostFile(out.Path() + "/" + path), expected->second.content) << path;
    }
  }
  for (const std::string& written : FilesUnder(out.Path())) {
    EXPECT_TRUE(files.count(written) && files[written]["returned"] == true)
        << "in --output-dir, not returned: " << written;
  }
  // Every name is there at every moment (RENAME_EXCHANGE), so the walk lists each, or walks it.
  for (const auto& [path, expected] : entries) {
    if (path.find('/') != std::string::npos) continue;
    EXPECT_TRUE(files.count(path) || files.count(path + "/z-inner.txt")) << path << " is missing";
  }
  if (!InSession()) {
    // The daemon died before the walk: one file in each pair, read whole.
    for (int n = 0; n < kPairs; ++n) {
      const std::string f = "f-" + std::to_string(n) + ".txt",
                        l = "l-" + std::to_string(n) + ".txt";
      EXPECT_NE(files[f]["returned"] == true, files[l]["returned"] == true) << f << " and " << l;
    }
  }
  ExpectNoneOf({file_token, env_token, dir_token}, r, out.Path());
  const std::vector<HostProcess> left = FindProcesses(marker);
  EXPECT_THAT(left, ::testing::IsEmpty()) << "left running: " << DescribeProcesses(left);
  KillAll(left);
  unlink(host_file.c_str());
}

// Issue 23, part 4: leases. A daemon of the run holds a write lease on an output and ignores
// the lease-break signal, so any open of the file that may wait does, for the kernel's
// lease-break-time (45 s). What holds it: the collector opens files O_NONBLOCK, which a lease
// answers with EWOULDBLOCK instead of a wait; and in a one-shot run it reads only after every
// process of the run is gone, the lease with them. In a session the holder still runs during
// the walk: the file is listed, not returned, and the walk goes on to the next. It fails if
// that open may block (the run takes 45 s), or if a one-shot run reads before the run is dead.
TEST_P(Adversarial, FS_06_ALeaseOnAnOutputDoesNotHoldTheCollector) {
  OutputDir out(GetParam());
  const std::string marker = NewMarker("fs06-lease");
  BackgroundRun run = StartProbe("fs06_lease", {{"marker", marker}}, out.Args());
  const Outcome r = WaitAtMost(run, std::chrono::seconds(90));
  json o = ContainedReport(r);
  EXPECT_EQ(o["F_SETLEASE F_WRLCK"], json("ok")) << "positive control: the lease was taken";
  EXPECT_EQ(o["open O_RDONLY|O_NONBLOCK beside the lease"], json("EAGAIN"))
      << "positive control: the lease holds against another open";
  EXPECT_LT(r.elapsed, milliseconds(10'000)) << "the collector waited on the lease" << r.Describe();
  std::map<std::string, json> files = Listed(r);
  ASSERT_TRUE(files.count("leased.csv")) << r.json["files"];
  if (InSession()) {
    EXPECT_EQ(files["leased.csv"]["returned"], false) << files["leased.csv"];
    EXPECT_EQ(FilesUnder(out.Path()), std::vector<std::string>{"z-control.txt"});
  } else {
    EXPECT_EQ(files["leased.csv"]["returned"], true) << files["leased.csv"];
    EXPECT_EQ(ReadHostFile(out.Path() + "/leased.csv"), "a,b\n1,2\n");
  }
  EXPECT_EQ(files["z-control.txt"]["returned"], true) << "the walk went on after it";
  const std::vector<HostProcess> left = FindProcesses(marker);
  EXPECT_THAT(left, ::testing::IsEmpty()) << "left running: " << DescribeProcesses(left);
  KillAll(left);
}

// Issue 23, part 4: a file that grows while it is read. A daemon of the run flips four outputs
// between 16 bytes and 1 GiB (sparse: the workspace's size), each at its own pace, for ever; in
// a session it does so during the walk. What holds it: the collector reads at most
// MCP_EXEC_MAX_OUTPUT_FILE_BYTES + 1 bytes from the descriptor it opened, whatever size it saw,
// and lists a file that had more as too large. So a file comes back whole at 16 bytes or as its
// first bytes and zeros up to the cap, or is listed too large; the supervisor's memory stays
// small. It fails if the read trusts the size of fstatat or fstat, or reads to the end of the
// file. Checked by mutation: a read to the end fails it in the one-shot twins (where the
// daemon's last sizes are read); in the session twin the daemon cuts such a read short.
TEST_P(Adversarial, FS_06_AFileThatGrowsWhileReadIsReadWithinTheCap) {
  OutputDir out(GetParam());
  const std::string marker = NewMarker("fs06-grower");
  BackgroundRun run =
      StartProbe("fs06_growing", {{"marker", marker}},
                 {"--output-dir", out.Path(), "--workspace-bytes", "1g"}, SamplingPeakMemory());
  const Outcome r = WaitAtMost(run, std::chrono::seconds(30));
  json o = ContainedReport(r);
  EXPECT_EQ(o["RLIMIT_FSIZE"], 1 << 30);
  EXPECT_EQ(o["truncate to RLIMIT_FSIZE"], json("ok")) << "positive control";
  EXPECT_EQ(o["grower announced"], json("growing")) << "positive control: the daemon ran";
  std::map<std::string, json> files = Listed(r);
  for (int n = 0; n < 4; ++n) {
    const std::string name = "grows-" + std::to_string(n) + ".bin";
    ASSERT_TRUE(files.count(name)) << r.json["files"];
    const json& f = files[name];
    EXPECT_LE(f.value("size", uint64_t{0}), uint64_t{1} << 30) << f;
    if (f["returned"] == true) {
      const std::string data = ReadHostFile(out.Path() + "/" + name);
      EXPECT_LE(data.size(), 1u << 20);
      EXPECT_EQ(data.substr(0, 16), "sandbox grows\n..");
      EXPECT_EQ(data.find_first_not_of('\0', 16), std::string::npos) << "bytes past the head";
    } else {
      EXPECT_THAT(Reason(f), HasSubstr("larger than MCP_EXEC_MAX_OUTPUT_FILE_BYTES")) << f;
    }
  }
  EXPECT_EQ(files["z-control.txt"]["returned"], true);
  EXPECT_LT(r.elapsed, milliseconds(10'000)) << r.Describe();
  EXPECT_GT(r.peak_rss_kib, 1024) << "positive control: mcp-exec's memory was sampled";
  EXPECT_LT(r.peak_rss_kib, 64 * 1024) << "the supervisor read past the cap";
  const std::vector<HostProcess> left = FindProcesses(marker);
  EXPECT_THAT(left, ::testing::IsEmpty()) << "left running: " << DescribeProcesses(left);
  KillAll(left);
}

// Issue 23, part 4: --output-dir against the names a program chooses. The caller's directory
// already holds a link out of it (linked -> a directory beside it), a file where the program
// puts a directory (collide), and a file the program's replaces (existing.txt). What holds it:
// WriteOutputDir creates each component beneath the directory's descriptor with openat2
// (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), and names come from the walk's readdir, so none
// holds "/" or is "..". It fails if a name or a link takes a write out of the directory, if a
// deep or odd name lands anywhere but at its path, or if the pre-planted link is followed.
TEST_P(Adversarial, FS_06_OutputNamesStayInTheOutputDir) {
  ModeOwnedDir host(GetParam());
  ASSERT_EQ(host.Problem(), "");
  const std::string dir = host.Path() + "/out", outside = host.Path() + "/outside";
  for (const std::string& d : {dir, outside}) {
    ASSERT_EQ(mkdir(d.c_str(), 0755), 0) << d;
    ASSERT_EQ(chown(d.c_str(), HostSetup::Get().Uid(GetParam()), HostSetup::Get().Gid(GetParam())),
              0);
  }
  WriteFile(outside + "/victim.txt", "host file\n");
  ASSERT_EQ(symlink(outside.c_str(), (dir + "/linked").c_str()), 0);
  WriteFile(dir + "/collide", "host file\n");
  WriteFile(dir + "/existing.txt", "host file, to be replaced\n");
  ASSERT_EQ(chown((dir + "/existing.txt").c_str(), HostSetup::Get().Uid(GetParam()),
                  HostSetup::Get().Gid(GetParam())),
            0);
  const Outcome r = RunProbe(
      "fs06_output_names",
      {{"taken", {"linked/victim.txt", "linked/new.txt", "collide/y.txt", "existing.txt"}}},
      {"--output-dir", dir});
  json o = ContainedReport(r);
  EXPECT_EQ(o["create .."], json("EISDIR"));
  std::string deep;
  for (int i = 0; i < 14; ++i) deep += std::string(200, 'n') + "/";
  deep += "deep.txt";
  const std::vector<std::string> odd = {
      std::string(251, 'x') + ".txt", "...", "..txt", " ..", "-rf", "a\\b", "new\nline", "a:b"};
  std::map<std::string, json> files = Listed(r);
  EXPECT_EQ(files.size(), odd.size() + 5) << r.json["files"];
  EXPECT_EQ(files[deep]["returned"], true);
  EXPECT_EQ(ReadHostFile(dir + "/" + deep), "deep\n");
  for (const std::string& name : odd) {
    EXPECT_EQ(files[name]["returned"], true) << name;
    EXPECT_EQ(ReadHostFile(dir + "/" + name), "odd name\n") << name;
  }
  EXPECT_EQ(files["existing.txt"]["returned"], true);
  EXPECT_EQ(ReadHostFile(dir + "/existing.txt"), "from the sandbox\n");
  for (const char* taken : {"linked/victim.txt", "linked/new.txt", "collide/y.txt"}) {
    ASSERT_TRUE(files.count(taken)) << taken;
    EXPECT_EQ(files[taken]["returned"], false) << taken;
    EXPECT_THAT(Reason(files[taken]), HasSubstr("not written to --output-dir")) << taken;
  }
  EXPECT_THAT(Reason(files["linked/new.txt"]), HasSubstr("a link is in the way"));
  EXPECT_EQ(ReadHostFile(outside + "/victim.txt"), "host file\n");
  EXPECT_EQ(FilesUnder(outside), std::vector<std::string>{"victim.txt"});
  EXPECT_EQ(ReadHostFile(dir + "/collide"), "host file\n");
  std::vector<std::string> beside;
  for (const auto& entry : std::filesystem::directory_iterator(host.Path())) {
    beside.push_back(entry.path().filename());
  }
  std::sort(beside.begin(), beside.end());
  EXPECT_EQ(beside, (std::vector<std::string>{"out", "outside"})) << "written beside --output-dir";
  std::vector<std::string> expected = {deep, "collide", "existing.txt"};
  expected.insert(expected.end(), odd.begin(), odd.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(FilesUnder(dir), expected);
}

// 100000 x 100000 pixels claimed, nothing behind: returned as the bytes it is.
std::string LyingPng() {
  std::string png("\x89PNG\r\n\x1a\n", 8);
  png += std::string("\x00\x00\x00\x0dIHDR", 8);
  png += std::string("\x00\x01\x86\xa0\x00\x01\x86\xa0\x08\x06\x00\x00\x00", 13);
  png += std::string("\x9a\x5e\x11\x6f", 4);
  return png;
}

TEST_P(Adversarial, FS_06_ImagesThatLieComeBackAsTheirBytes) {
  OutputDir out(GetParam());
  const json params = {{"bomb_hex", Hex(LyingPng())}, {"fake", "this is not a PNG\n"}};
  std::vector<std::string> args = out.Args();
  args.insert(args.end(), {"--engine", "cold"});  // as in the sparse file's test
  const Outcome r = RunProbe("fs06_lying_png", params, args, SamplingPeakMemory());
  ContainedReport(r);
  std::map<std::string, json> files = Listed(r);
  EXPECT_EQ(files["bomb.png"]["mime_type"], "image/png");
  EXPECT_EQ(files["bomb.png"]["size"], LyingPng().size());
  EXPECT_EQ(files["bomb.png"]["returned"], true);
  EXPECT_EQ(files["fake.png"]["mime_type"], "text/plain") << "a .png that is not one";
  EXPECT_TRUE(ReadHostFile(out.Path() + "/bomb.png") == LyingPng());
  EXPECT_EQ(ReadHostFile(out.Path() + "/fake.png"), "this is not a PNG\n");
  EXPECT_GT(r.peak_rss_kib, 1024) << "positive control: mcp-exec's memory was sampled";
  EXPECT_LT(r.peak_rss_kib, 64 * 1024) << "the supervisor decoded the image";
}

// The same over MCP (`serve` on Streamable HTTP): the lying PNG is an image item of its exact
// bytes, the fake one an embedded text resource, and the links of fs06_symlinks bring nothing.
TEST_P(Adversarial, FS_06_OverMcpImagesAreTheirBytesAndLinksBringNothing) {
  const std::string token = RandomToken();
  const std::string planted = HostSetup::Get().WriteSharedFile(
      "fs06-mcp-planted-" + ModeName(GetParam()), "host secret " + token + "\n");
  const int port = FreeLoopbackPort();
  BackgroundRun server =
      runner_.StartCommand({runner_.Binary(), "serve", "--transport", "http", "--addr",
                            "127.0.0.1:" + std::to_string(port), "--rootfs", runner_.Rootfs()});
  ASSERT_TRUE(WaitForHealthz(port)) << "the server did not come up:" << [&] {
    kill(server.Pid(), SIGKILL);
    return server.Wait().Describe();
  }();
  const McpSession mcp = OpenMcpSession(port, {});
  ASSERT_EQ(mcp.init.status, 200) << mcp.init.headers << mcp.init.body;
  const std::vector<std::string>& session = mcp.headers;
  std::string problem;
  const std::string links = ProbeSource("fs06_symlinks", &problem);
  const std::string png = ProbeSource("fs06_lying_png", &problem);
  ASSERT_EQ(problem, "");
  // Both probes in one program (report() prints twice): only the files matter here.
  const std::string code = links + "\n" + png.substr(png.find("# FS-06"));
  const json params = {
      {"host_file", planted}, {"bomb_hex", Hex(LyingPng())}, {"fake", "this is not a PNG\n"}};
  const HttpReply call = HttpPost(
      port, "/mcp",
      json({{"jsonrpc", "2.0"},
            {"id", 2},
            {"method", "tools/call"},
            {"params",
             {{"name", "exec"}, {"arguments", {{"code", code}, {"stdin", params.dump()}}}}}})
          .dump(),
      session);
  kill(server.Pid(), SIGTERM);
  const Outcome stopped = server.Wait();
  ASSERT_EQ(call.status, 200) << call.headers << call.body << stopped.Describe();
  const json reply = ReplyJson(call);
  ASSERT_TRUE(reply.is_object() && reply.contains("result")) << call.body;
  const json& result = reply["result"];
  EXPECT_EQ(result["isError"], false) << result.dump(1);
  const json& content = result["content"];
  ASSERT_TRUE(content.is_array());
  // content[0] is the structured result as text; then the files, in walk order.
  std::vector<json> items(content.begin() + 1, content.end());
  ASSERT_EQ(items.size(), 3u) << content.dump(1);
  EXPECT_EQ(
      items[0],
      json({{"type", "image"}, {"data", Base64Encode(LyingPng())}, {"mimeType", "image/png"}}));
  EXPECT_EQ(items[1]["resource"], json({{"uri", "mcp-exec:///tmp/outputs/control.txt"},
                                        {"mimeType", "text/plain"},
                                        {"text", "control\n"}}));
  EXPECT_EQ(items[2]["resource"], json({{"uri", "mcp-exec:///tmp/outputs/fake.png"},
                                        {"mimeType", "text/plain"},
                                        {"text", "this is not a PNG\n"}}));
  std::map<std::string, json> files;
  for (const json& f : result["structuredContent"]["files"]) {
    files[f["path"].get<std::string>()] = f;
  }
  EXPECT_EQ(files.size(), 11u) << result["structuredContent"]["files"];
  for (const char* link : {"plot.png", "environ-1.txt", "environ-self.txt", "planted.txt"}) {
    ExpectNotReturned(files, link, "not a regular file (symlink)");
  }
  EXPECT_EQ(call.body.find(token), std::string::npos) << "the planted host file came back";
  unlink(planted.c_str());
}

// Input files name paths beneath /tmp only: `..` and absolute paths are refused before
// anything runs, and nothing appears where they point.
TEST_P(Adversarial, FS_06_InputPathsOutsideTheWorkspaceAreRefused) {
  const std::string token = RandomToken();
  const std::string local = HostSetup::Get().WriteSharedFile("fs06-input-" + ModeName(GetParam()),
                                                             "planted by --input " + token + "\n");
  const std::string scratch = HostSetup::Get().ScratchDir();
  const std::string name = "fs06-escaped-" + token;
  const std::vector<std::string> targets = {
      "/tmp/" + name, scratch + "/" + name, "/" + name,
      std::filesystem::current_path().parent_path().string() + "/" + name};
  const std::vector<std::string> paths = {"../" + name,         "../../../../../tmp/" + name,
                                          "a/../../" + name,    "/tmp/" + name,
                                          scratch + "/" + name, "/" + name,
                                          "./../" + name};
  for (const std::string& path : paths) {
    const Outcome r = runner_.RunCode("print('the program ran')", {"--input", path + "=" + local});
    EXPECT_EQ(r.exit_status, 2) << path << r.Describe();
    EXPECT_EQ(r.out, "") << path;
    EXPECT_THAT(r.err, HasSubstr("files[0] (" + json(path).dump() + "): the path")) << path;
  }
  for (const std::string& target : targets) {
    EXPECT_NE(access(target.c_str(), F_OK), 0) << target << " was written";
  }
  unlink(local.c_str());
}

}  // namespace
}  // namespace mcpexec::testing
