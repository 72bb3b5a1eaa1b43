// Files in and out of a run through `mcp-exec run`: --input puts host files into the workspace
// before the program starts, and --output-dir writes what the program left in /tmp/outputs
// back on the host (issue 9, points 1, 2 and 5).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <sstream>

#include "../support/host_files.h"
#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

// Every byte value, then some more: no encoding on the way may touch it.
std::string BinaryContent() {
  std::string bytes;
  for (int round = 0; round < 64; ++round) {
    for (int i = 0; i < 256; ++i) bytes += static_cast<char>((i + round) & 0xff);
  }
  return bytes + std::string(10, '\0');
}

const std::string kText = "line one\nunicode caf\xc3\xa9 \xe2\x9c\x93\r\nno newline at the end";

class FilesTest : public SandboxTest {
 protected:
  // A host file every mode can read, named after the test and the mode.
  std::string Local(const std::string& name, const std::string& content) {
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(test.begin(), test.end(), '/', '-');  // "Name/Caller"
    return HostSetup::Get().WriteSharedFile(test + "-" + name, content);
  }
};

TEST_P(FilesTest, InputsArriveByteForByteOwnedByTheProgram) {
  const std::string binary = BinaryContent();
  const Outcome r = runner_.RunCode(R"py(
import json, os
r = {}
for p in ("data/in.txt", "bin/deep/blob.bin"):
    st = os.stat(p)
    r[p] = {"hex": open(p, "rb").read().hex(), "uid": st.st_uid, "gid": st.st_gid,
            "mode": oct(st.st_mode)}
for d in ("data", "bin", "bin/deep"):
    st = os.stat(d)
    r[d] = {"uid": st.st_uid, "mode": oct(st.st_mode)}
with open("data/in.txt", "ab") as f:
    f.write(b"+appended")
open("bin/deep/new.txt", "w").write("made beside an input")
os.remove("bin/deep/blob.bin")
r["after"] = {"in.txt": open("data/in.txt", "rb").read().hex(),
              "bin/deep": sorted(os.listdir("bin/deep"))}
print(json.dumps(r))
)py",
                                    {"--input", "data/in.txt=" + Local("in.txt", kText), "--input",
                                     "bin/deep/blob.bin=" + Local("blob.bin", binary)});
  ASSERT_TRUE(IsRunResult(r));
  ASSERT_EQ(r.exit_status, 0) << r.Describe();
  const json j = r.ProgramJson();
  EXPECT_EQ(j["data/in.txt"],
            json({{"hex", Hex(kText)}, {"uid", 65532}, {"gid", 65532}, {"mode", "0o100644"}}));
  EXPECT_EQ(j["bin/deep/blob.bin"]["hex"], Hex(binary));
  EXPECT_EQ(j["bin/deep/blob.bin"]["uid"], 65532);
  EXPECT_EQ(j["bin/deep/blob.bin"]["mode"], "0o100644");
  for (const char* dir : {"data", "bin", "bin/deep"}) {
    EXPECT_EQ(j[dir], json({{"uid", 65532}, {"mode", "0o40755"}})) << dir;
  }
  EXPECT_EQ(j["after"]["in.txt"], Hex(kText + "+appended"));
  EXPECT_EQ(j["after"]["bin/deep"], json({"new.txt"}));
  EXPECT_EQ(r.json["files"], json::array()) << "nothing was put in /tmp/outputs";
}

// In through --input, out through /tmp/outputs and --output-dir, untouched by the program.
TEST_P(FilesTest, AnInputPutInOutputsComesBackByteForByte) {
  ModeOwnedDir host(GetParam());
  ASSERT_EQ(host.Problem(), "");
  const std::string binary = BinaryContent();
  const std::string dir = host.Path() + "/out";  // created by mcp-exec
  const Outcome r = runner_.RunCode(
      "pass", {"--input", "outputs/echo.bin=" + Local("echo.bin", binary), "--input",
               "outputs/t/echo.txt=" + Local("echo.txt", kText), "--output-dir", dir});
  ASSERT_TRUE(IsRunResult(r));
  ASSERT_EQ(r.exit_status, 0) << r.Describe();
  EXPECT_EQ(r.json["files"], json({{{"path", "echo.bin"},
                                    {"size", binary.size()},
                                    {"mime_type", "application/octet-stream"},
                                    {"returned", true},
                                    {"reason", nullptr}},
                                   {{"path", "t/echo.txt"},
                                    {"size", kText.size()},
                                    {"mime_type", "text/plain"},
                                    {"returned", true},
                                    {"reason", nullptr}}}));
  EXPECT_TRUE(ReadFile(dir + "/echo.bin") == binary);
  EXPECT_EQ(ReadFile(dir + "/t/echo.txt"), kText);
}

constexpr const char* kWriteOutputs = R"py(
import os
os.makedirs("outputs/sub/deeper")
png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
open("outputs/figure-10.png", "wb").write(png)
open("outputs/figure-2.png", "wb").write(png[:20])
open("outputs/sub/table.csv", "w").write("a,b\n1,2\n")
open("outputs/sub/deeper/empty.txt", "w").close()
open("outputs/notes.txt", "w").write("caf\u00e9\n")
open("not-an-output.txt", "w").write("left in /tmp, not in /tmp/outputs")
)py";

// A listed file's reason; "" when it has none (null).
std::string Reason(const json& file) {
  return file.contains("reason") && file["reason"].is_string() ? file["reason"].get<std::string>()
                                                               : "";
}

json Listed(const std::string& path, size_t size, const char* mime, bool returned,
            const json& reason) {
  return {{"path", path},
          {"size", size},
          {"mime_type", mime},
          {"returned", returned},
          {"reason", reason}};
}

TEST_P(FilesTest, OutputDirGetsTheFilesAndTheResultListsThem) {
  ModeOwnedDir host(GetParam());
  ASSERT_EQ(host.Problem(), "");
  const Outcome r = runner_.RunCode(kWriteOutputs, {"--output-dir", host.Path()});
  ASSERT_TRUE(IsRunResult(r));
  ASSERT_EQ(r.exit_status, 0) << r.Describe();
  std::string png = std::string("\x89PNG\r\n\x1a\n", 8);
  for (int i = 0; i < 256; ++i) png += static_cast<char>(i);
  EXPECT_EQ(r.json["files"], json({Listed("figure-2.png", 20, "image/png", true, nullptr),
                                   Listed("figure-10.png", png.size(), "image/png", true, nullptr),
                                   Listed("notes.txt", 6, "text/plain", true, nullptr),
                                   Listed("sub/deeper/empty.txt", 0, "text/plain", true, nullptr),
                                   Listed("sub/table.csv", 8, "text/csv", true, nullptr)}));
  EXPECT_FALSE(r.json.contains("files_not_listed"));
  EXPECT_FALSE(r.json.contains("files_walk_incomplete"));
  EXPECT_TRUE(ReadFile(host.Path() + "/figure-10.png") == png);
  EXPECT_TRUE(ReadFile(host.Path() + "/figure-2.png") == png.substr(0, 20));
  EXPECT_EQ(ReadFile(host.Path() + "/notes.txt"), "caf\xc3\xa9\n");
  EXPECT_EQ(ReadFile(host.Path() + "/sub/table.csv"), "a,b\n1,2\n");
  EXPECT_TRUE(Exists(host.Path() + "/sub/deeper/empty.txt"));
  EXPECT_FALSE(Exists(host.Path() + "/not-an-output.txt"));
  std::vector<std::string> written;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(host.Path())) {
    if (entry.is_regular_file()) {
      written.push_back(entry.path().lexically_relative(host.Path()).string());
    }
  }
  std::sort(written.begin(), written.end());
  EXPECT_EQ(written, (std::vector<std::string>{"figure-10.png", "figure-2.png", "notes.txt",
                                               "sub/deeper/empty.txt", "sub/table.csv"}));
}

TEST_P(FilesTest, WithoutOutputDirFilesAreListedNotWritten) {
  const Outcome r = runner_.RunCode(kWriteOutputs);
  ASSERT_TRUE(IsRunResult(r));
  ASSERT_EQ(r.exit_status, 0) << r.Describe();
  ASSERT_EQ(r.json["files"].size(), 5u) << r.json["files"];
  for (const json& f : r.json["files"]) {
    EXPECT_EQ(f["returned"], false) << f;
    EXPECT_EQ(f["reason"], "mcp-exec run writes files only with --output-dir") << f;
  }
}

// A link, a hard link or a FIFO already in DIR where an output goes: the file is reported not
// written, nothing is written where the links point, and the run does not wait on the FIFO.
// Were the FIFO opened for writing, the test opens its reading end after 30 s, so that the
// failure shows instead of a hang.
TEST_P(FilesTest, LinksAndFifosPreplacedInOutputDirAreNotFollowed) {
  ModeOwnedDir host(GetParam());
  ASSERT_EQ(host.Problem(), "");
  const std::string dir = host.Path() + "/out";
  const std::string outside = host.Path() + "/outside";
  const std::string victim = outside + "/victim";
  ASSERT_EQ(mkdir(dir.c_str(), 0777), 0);
  ASSERT_EQ(mkdir(outside.c_str(), 0777), 0);
  ASSERT_EQ(chmod(outside.c_str(), 0777), 0);  // were a link followed, the write would work
  { std::ofstream(victim) << "host file"; }
  ASSERT_EQ(chmod(victim.c_str(), 0666), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  ASSERT_EQ(symlink(victim.c_str(), (dir + "/plot.png").c_str()), 0);
  ASSERT_EQ(symlink(outside.c_str(), (dir + "/sub").c_str()), 0);
  ASSERT_EQ(link(victim.c_str(), (dir + "/hard.csv").c_str()), 0) << strerror(errno);
  ASSERT_EQ(mkfifo((dir + "/pipe.csv").c_str(), 0666), 0);
  ASSERT_EQ(chmod((dir + "/pipe.csv").c_str(), 0666), 0);  // past the umask: any mode may open it

  BackgroundRun run = runner_.StartCode(R"py(
for name in ("plot.png", "hard.csv", "pipe.csv", "ok.txt"):
    open("outputs/" + name, "w").write("from the sandbox\n")
import os
os.mkdir("outputs/sub")
open("outputs/sub/victim", "w").write("from the sandbox\n")
open("outputs/sub/new.txt", "w").write("from the sandbox\n")
)py",
                                        {"--output-dir", dir});
  auto finished = std::async(std::launch::async, [&run] { return run.Wait(); });
  int reader = -1;
  if (finished.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    ADD_FAILURE() << "mcp-exec run waits on the FIFO in --output-dir";
    reader = open((dir + "/pipe.csv").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  }
  const Outcome r = finished.get();
  if (reader >= 0) close(reader);
  ASSERT_TRUE(IsRunResult(r));
  EXPECT_EQ(r.exit_status, 0) << r.Describe();
  std::map<std::string, json> files;
  for (const json& f : r.json["files"]) files[f["path"].get<std::string>()] = f;
  for (const auto& [path, what] : std::map<std::string, std::string>{{"plot.png", "a link"},
                                                                      {"sub/victim", "a link"},
                                                                      {"sub/new.txt", "a link"},
                                                                      {"hard.csv", "a hard link"},
                                                                      {"pipe.csv", "a FIFO"}}) {
    ASSERT_TRUE(files.count(path)) << path << " is not listed: " << r.json["files"];
    EXPECT_EQ(files[path]["returned"], false) << path;
    EXPECT_EQ(Reason(files[path]),
              "not written to --output-dir: " + what + " is in the way in the output directory")
        << path;
  }
  EXPECT_EQ(files["ok.txt"]["returned"], true);
  EXPECT_EQ(ReadFile(dir + "/ok.txt"), "from the sandbox\n");
  EXPECT_EQ(ReadFile(victim), "host file");
  EXPECT_FALSE(Exists(outside + "/new.txt"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(outside), {}), 1);
}

// Bad --input is a usage error (exit status 2) found before anything runs: no result, and the
// program's output never reaches --output-dir, which is not even created.
TEST_P(FilesTest, BadInputIsAUsageErrorAndNothingRuns) {
  ModeOwnedDir host(GetParam());
  ASSERT_EQ(host.Problem(), "");
  const std::string local = Local("local.txt", "content");
  const std::string big = Local("big.bin", std::string(100 << 10, 'x'));
  const std::string dir = host.Path() + "/out";
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--input", "../escape.txt=" + local}, "files[0] (\"../escape.txt\"): the path has"},
      {{"--input", "a/../../b=" + local}, "\".\" or \"..\" component"},
      {{"--input", "/etc/cron.d/x=" + local}, "files[0] (\"/etc/cron.d/x\"): the path is absolute"},
      {{"--input", "main.py=" + local}, "main.py is the program itself"},
      {{"--input", "outputs=" + local}, "files[0] (\"outputs\"): outputs is the directory"},
      {{"--input", "no-equals-sign"}, "expected PATH=LOCALFILE"},
      {{"--input", "x.txt=" + host.Path() + "/missing"}, "cannot read --input x.txt="},
      {{"--input", "a=" + local, "--input", "a=" + local},
       "files[1] (\"a\"): the path is given twice"},
      {{"--input", "a=" + local, "--input", "a/b=" + local}, "is also a directory of"},
      {{"--input", "big.bin=" + big, "--workspace-bytes", "64k"}, "MCP_EXEC_WORKSPACE_BYTES"},
      {{"--input", "big.bin=" + big, "--max-input-file-bytes", "1k"},
       "MCP_EXEC_MAX_INPUT_FILE_BYTES"},
      {{"--input", "a=" + local, "--input", "b=" + local, "--max-input-files", "1"},
       "MCP_EXEC_MAX_INPUT_FILES"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> all = args;
    all.insert(all.end(), {"--output-dir", dir});
    const Outcome r = runner_.RunCode(
        "open('outputs/ran', 'w').write('the program ran')\nprint('the program ran')", all);
    EXPECT_EQ(r.exit_status, 2) << args[1] << r.Describe();
    EXPECT_EQ(r.out, "") << args[1];
    EXPECT_THAT(r.err, HasSubstr(message)) << args[1];
    EXPECT_FALSE(Exists(dir)) << args[1] << ": --output-dir was created";
  }
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(FilesTest);

}  // namespace
}  // namespace mcpexec::testing
