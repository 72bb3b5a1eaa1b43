// matplotlib figures come back as PNG files in /tmp/outputs without the program saving them
// (rootfs/mcp_exec_figures.py): plt.show() saves and closes what is open, figures left open
// are saved at exit, the long edge is capped, and the program's own savefig is untouched.
//
// Each program draws in a child Python process and, once the child has exited (and its exit
// handlers have run), lists /tmp/outputs from the parent: name, size in bytes, whether the
// file decodes as a PNG (Pillow), and its pixel size from the IHDR chunk.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "../support/sandbox_test.h"
#include "../support/temp_dir.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kFigureBackend = "/usr/lib/python3/dist-packages/mcp_exec_figures.py";

constexpr const char* kHarness = R"py(
import json, os, struct, subprocess, sys
from PIL import Image
child = subprocess.run([sys.executable, "-c", r'''@DRAW@'''], capture_output=True, text=True)
files = {}
if os.path.isdir("/tmp/outputs"):
    for name in sorted(os.listdir("/tmp/outputs")):
        path = os.path.join("/tmp/outputs", name)
        with open(path, "rb") as f:
            data = f.read()
        try:
            with Image.open(path) as image:
                image.load()
                decoded = image.format == "PNG"
        except Exception:
            decoded = False
        files[name] = {"bytes": len(data), "png": decoded,
                       "size": list(struct.unpack(">II", data[16:24])) if decoded else None}
print(json.dumps({"exit": child.returncode, "stdout": child.stdout, "stderr": child.stderr,
                  "files": files}))
)py";

class FiguresTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    struct stat st;
    ASSERT_EQ(stat((runner_.Rootfs() + kFigureBackend).c_str(), &st), 0)
        << "the test rootfs " << runner_.Rootfs() << " has no " << kFigureBackend
        << ": rebuild it with tools/build-rootfs";
  }

  // Runs `draw` in a child process of the sandbox's program; the harness's report.
  json Draw(const std::string& draw, const std::vector<std::string>& extra_args = {}) {
    std::vector<std::string> args = {"--timeout", "120"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    const Outcome r = runner_.RunCode(ReplaceAll(kHarness, "@DRAW@", draw), args);
    EXPECT_TRUE(IsRunResult(r));
    EXPECT_EQ(r.exit_status, 0) << r.Describe();
    json j = r.ProgramJson();
    EXPECT_TRUE(j.is_object()) << r.Describe();
    if (!j.is_object()) return json::object();
    EXPECT_EQ(j["exit"], 0) << "the drawing process failed:\n" << j["stderr"].get<std::string>();
    return j;
  }
};

// Names of the files in /tmp/outputs, in order.
std::vector<std::string> Names(const json& report) {
  std::vector<std::string> names;
  for (const auto& [name, _] : report["files"].items()) names.push_back(name);
  return names;
}

// Width and height of a reported PNG, after checking that it decodes.
std::pair<int, int> Size(const json& report, const std::string& name) {
  const json& f = report["files"][name];
  EXPECT_EQ(f["png"], true) << name << " is not a PNG: " << report.dump();
  if (f["png"] != true) return {0, 0};
  return {f["size"][0].get<int>(), f["size"][1].get<int>()};
}

TEST_P(FiguresTest, ShowSavesAndClosesTheOpenFiguresAndNumberingGoesOnAcrossShows) {
  const json j = Draw(R"py(
import os
import numpy as np
import matplotlib.pyplot as plt
x = np.linspace(0, 10, 500)
fig, ax = plt.subplots()
ax.plot(x, np.sin(x), label="sin")
ax.plot(x, np.cos(x), label="cos")
ax.set(title="A typical line plot", xlabel="x", ylabel="y")
ax.grid(True)
ax.legend()
plt.show()
print(sorted(os.listdir("/tmp/outputs")), plt.get_fignums())
plt.figure(figsize=(8, 3))
plt.plot([1, 3, 2])
plt.figure(figsize=(3, 2))
plt.plot([2, 1, 3])
plt.show()
print(sorted(os.listdir("/tmp/outputs")), plt.get_fignums())
)py");
  EXPECT_EQ(j["stdout"],
            "['figure-1.png'] []\n"
            "['figure-1.png', 'figure-2.png', 'figure-3.png'] []\n")
      << "each show() saves what is open, then closes it";
  ASSERT_THAT(Names(j), ElementsAre("figure-1.png", "figure-2.png", "figure-3.png"))
      << "nothing was left open at exit";
  // bbox_inches="tight" crops the margins, so each is a little smaller than its figure.
  const auto [w1, h1] = Size(j, "figure-1.png");
  EXPECT_TRUE(w1 > 480 && w1 <= 640 && h1 > 360 && h1 <= 480) << w1 << "x" << h1;
  const auto [w2, h2] = Size(j, "figure-2.png");
  EXPECT_TRUE(w2 > 600 && w2 <= 800 && h2 > 200 && h2 <= 300) << w2 << "x" << h2;
  const auto [w3, h3] = Size(j, "figure-3.png");
  EXPECT_TRUE(w3 > 200 && w3 <= 300 && h3 > 120 && h3 <= 200) << w3 << "x" << h3;
  EXPECT_LE(j["files"]["figure-1.png"]["bytes"].get<int>(), 100 * 1024)
      << "a typical line plot must come back at 100 KB or less";
}

TEST_P(FiguresTest, FiguresOpenAtExitAreSavedInTheOrderTheyWereCreated) {
  const json j = Draw(R"py(
import matplotlib.pyplot as plt
wide = plt.figure(figsize=(6, 2))
plt.plot([1, 2, 3])
closed = plt.figure()
plt.plot([1, 2])
plt.close(closed)
plt.figure()  # empty, and number 2 again: IPython shows nothing for it either
tall = plt.figure(figsize=(2, 6))
plt.plot([3, 2, 1])
plt.figure(wide.number)  # made current again: the order stays the creation order
print(plt.get_fignums())
)py");
  EXPECT_EQ(j["stdout"], "[1, 2, 3]\n");
  ASSERT_THAT(Names(j), ElementsAre("figure-1.png", "figure-2.png"))
      << "the closed and the empty figure are not saved";
  const auto [w1, h1] = Size(j, "figure-1.png");
  EXPECT_GT(w1, 2 * h1) << "figure-1 is the wide one: " << w1 << "x" << h1;
  const auto [w2, h2] = Size(j, "figure-2.png");
  EXPECT_GT(h2, 2 * w2) << "figure-2 is the tall one: " << w2 << "x" << h2;
  EXPECT_EQ(j["stderr"], "") << "no warning about a non-interactive backend";
}

TEST_P(FiguresTest, HugeFigureIsDrawnAtALowerDpiSoItsLongEdgeIsAtMost1568) {
  // 40x30 in at 200 dpi would be 8000x6000 px: 190 MB of RGBA, over the 256 MiB a run gets
  // once Python and matplotlib are loaded.
  const json j = Draw(R"py(
import matplotlib.pyplot as plt
plt.figure(figsize=(40, 30), dpi=200)
plt.plot(range(100))
plt.show()
)py");
  ASSERT_THAT(Names(j), ElementsAre("figure-1.png"));
  const auto [w, h] = Size(j, "figure-1.png");
  EXPECT_LE(std::max(w, h), 1568);
  // At the capped dpi, 39.2, the figure is 1568x1176 before the margins are cropped.
  EXPECT_GT(w, 1100) << w << "x" << h;
  EXPECT_GT(w, h);
}

TEST_P(FiguresTest, FigureMaxPxReachesTheSandbox) {
  const json j = Draw(R"py(
import os
import matplotlib.pyplot as plt
plt.figure(figsize=(10, 5), dpi=100)
plt.plot([1, 2])
print(os.environ["MCP_EXEC_FIGURE_MAX_PX"])
)py",
                      {"--figure-max-px", "400"});
  EXPECT_EQ(j["stdout"], "400\n");
  ASSERT_THAT(Names(j), ElementsAre("figure-1.png"));
  const auto [w, h] = Size(j, "figure-1.png");
  EXPECT_LE(std::max(w, h), 400);
  EXPECT_GT(w, 300) << w << "x" << h;
}

TEST_P(FiguresTest, SavefigIntoOutputsWorksAndAFigureStillOpenIsAlsoCaptured) {
  const json j = Draw(R"py(
import os
import matplotlib.pyplot as plt
os.makedirs("/tmp/outputs", exist_ok=True)
plt.figure(figsize=(4, 3))
plt.plot([1, 2, 3])
plt.savefig("/tmp/outputs/x.png")
plt.close()
plt.figure(figsize=(5, 2))
plt.plot([3, 2, 1])
plt.savefig("/tmp/outputs/y.png", dpi=50)
)py");
  ASSERT_THAT(Names(j), ElementsAre("figure-1.png", "x.png", "y.png"))
      << "x.png's figure was closed; y.png's was left open, so it is captured too";
  EXPECT_EQ(Size(j, "x.png"), std::make_pair(400, 300)) << "savefig as usual: no tight box";
  EXPECT_EQ(Size(j, "y.png"), std::make_pair(250, 100));
  const auto [w, h] = Size(j, "figure-1.png");
  EXPECT_TRUE(w > 400 && w <= 500 && h > 150 && h <= 200)
      << "y's figure at its own dpi: " << w << "x" << h;
}

TEST_P(FiguresTest, AFigureNameThatExistsIsSkippedNotOverwritten) {
  const json j = Draw(R"py(
import os
import matplotlib.pyplot as plt
os.makedirs("/tmp/outputs", exist_ok=True)
with open("/tmp/outputs/figure-1.png", "w") as f:
    f.write("the program's own file")
plt.plot([1, 2])
plt.show()
)py");
  ASSERT_THAT(Names(j), ElementsAre("figure-1.png", "figure-2.png"));
  EXPECT_EQ(j["files"]["figure-1.png"]["bytes"], 22) << "the program's file is kept";
  EXPECT_EQ(j["files"]["figure-2.png"]["png"], true);
}

TEST_P(FiguresTest, AForkedChildDoesNotSaveItsParentsFiguresAgain) {
  const json j = Draw(R"py(
import os, sys
import matplotlib.pyplot as plt
plt.plot([1, 2])
child = os.fork()
if child == 0:
    sys.exit(0)  # runs the exit handlers the child inherited
os.waitpid(child, 0)
)py");
  ASSERT_THAT(Names(j), ElementsAre("figure-1.png")) << "saved once, by the parent";
}

TEST_P(FiguresTest, ProgramsWithoutFiguresWriteNothing) {
  const json j = Draw(R"py(
import matplotlib
import matplotlib.pyplot as plt
plt.show()
print(matplotlib.get_backend())
)py");
  EXPECT_EQ(j["stdout"], "module://mcp_exec_figures\n");
  EXPECT_EQ(j["files"], json::object()) << j.dump();
  EXPECT_EQ(j["stderr"], "");
}

TEST_P(FiguresTest, AFigureThatCannotBeSavedAtExitIsReportedOnStderr) {
  // The program takes write permission away from /tmp/outputs (it has no capability to
  // override it), so the figure cannot be written.
  const json j = Draw(R"py(
import os
import matplotlib.pyplot as plt
os.makedirs("/tmp/outputs", exist_ok=True)
os.chmod("/tmp/outputs", 0o500)
plt.plot([1, 2])
)py");
  EXPECT_EQ(j["exit"], 0);
  EXPECT_THAT(j["stderr"].get<std::string>(),
              HasSubstr("mcp_exec_figures: figure 1 was not saved: PermissionError"));
  EXPECT_EQ(j["files"], json::object());
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(FiguresTest);

// A rootfs of the user's own, without the backend: the recipe's tree seen through an overlay
// that deletes the file, in a private mount namespace. Programs keep plain Agg (matplotlib
// works, show() shows nothing), and doctor says why figures are not captured.
TEST(FiguresFallback, RootfsWithoutTheBackendKeepsAggAndDoctorSaysWhy) {
  const SandboxRunner runner(RunMode::kCaller);
  ASSERT_EQ(runner.Problem(), "");
  ASSERT_EQ(geteuid(), 0u) << "this case mounts an overlay in a private mount namespace, which "
                              "needs root; run the integration tests as root";
  TempDir dir;
  // The sandbox's user, host uid 65532, must reach the rootfs in it.
  ASSERT_EQ(chmod(dir.Path().c_str(), 0755), 0);
  for (const char* sub : {"upper", "work", "root"}) {
    ASSERT_EQ(mkdir((dir.Path() + "/" + sub).c_str(), 0755), 0) << sub;
  }
  const std::string root = dir.Path() + "/root";
  auto without_backend = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {
        "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
        "mount -t overlay overlay -o \"lowerdir=$1,upperdir=$2/upper,workdir=$2/work\" "
        "\"$2/root\" && rm -f \"$2/root$3\" && shift 3 && exec \"$0\" \"$@\"",
        runner.Binary(), runner.Rootfs(), dir.Path(), kFigureBackend};
    argv.insert(argv.end(), args.begin(), args.end());
    return runner.RunCommand(argv, WithEnv({"MCP_EXEC_LIMITS=rlimit"}));
  };

  const Outcome run = without_backend({"run", "--rootfs", root, "--code", R"py(
import json, os
import matplotlib
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
plt.savefig("plot.png")
plt.show()
outputs = os.listdir("/tmp/outputs") if os.path.isdir("/tmp/outputs") else []
print(json.dumps({"backend": matplotlib.get_backend(), "env": sorted(os.environ),
                  "png": open("plot.png", "rb").read(4).hex(), "outputs": outputs}))
)py"});
  ASSERT_TRUE(IsRunResult(run));
  EXPECT_EQ(run.exit_status, 0) << run.Describe();
  const json j = run.ProgramJson();
  EXPECT_EQ(j["backend"], "agg") << run.Describe();
  EXPECT_EQ(j["env"], json({"HOME", "LANG", "MPLBACKEND", "PATH", "PYTHONDONTWRITEBYTECODE"}));
  EXPECT_EQ(j["png"], "89504e47") << "savefig works on plain Agg";
  EXPECT_EQ(j["outputs"], json::array()) << "show() on plain Agg saves nothing";
  EXPECT_EQ(run.json["stderr"], "");

  const Outcome doctor = without_backend({"doctor", "--rootfs", root});
  EXPECT_EQ(doctor.exit_status, 0) << doctor.Describe();
  EXPECT_THAT(doctor.out, HasSubstr("OK   rootfs: " + root + ": python 3."));
  EXPECT_THAT(doctor.out, HasSubstr("WARN figures: not captured automatically: " + root +
                                    " has no " + kFigureBackend));
  EXPECT_THAT(doctor.out, HasSubstr("     fix: rebuild the rootfs with tools/build-rootfs"));
}

}  // namespace
}  // namespace mcpexec::testing
