// The sandbox's filesystem: a read-only rootfs, a fresh size-capped workspace per run, a masked
// /proc and a minimal read-only /dev.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;

// `probe(fn)`: "ok", or the errno name fn raised.
constexpr const char* kProbe = R"py(
import errno, json, os
def probe(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
)py";

bool HostHas(const char* path) { return access(path, F_OK) == 0; }

class FilesystemTest : public SandboxTest {
 protected:
  // Runs kProbe + body, which prints one JSON document; returns it.
  json RunProbe(const std::string& body, const std::vector<std::string>& args = {}) {
    const Outcome r = runner_.RunCode(std::string(kProbe) + body, args);
    EXPECT_TRUE(IsRunResult(r));
    EXPECT_EQ(r.exit_status, 0) << r.Describe();
    const json j = r.ProgramJson();
    EXPECT_TRUE(j.is_object()) << r.Describe();
    return j.is_object() ? j : json::object();
  }
};

TEST_P(FilesystemTest, WorkspaceIsFreshOnEveryRun) {
  const std::string tree =
      std::string(kPythonWorkspaceTree) +
      "print(json.dumps({'tmp': workspace_tree(), 'shm': os.listdir('/dev/shm')}))\n";
  const json first = RunProbe(R"py(
os.makedirs("/tmp/dir/sub")
os.makedirs("/tmp/.cache", exist_ok=True)
for path in ["/tmp/left-behind.txt", "/tmp/.hidden", "/tmp/dir/sub/file", "/tmp/.cache/added",
             "/dev/shm/segment"]:
    open(path, "w").write("x")
os.remove("/tmp/main.py")
)py" + tree);
  // Positive control: the first run did change the workspace.
  std::vector<std::string> changed = FreshWorkspaceTree(
      {".hidden", "dir", "dir/sub", "dir/sub/file", "left-behind.txt", ".cache/added"});
  changed.erase(std::find(changed.begin(), changed.end(), "main.py"));
  if (std::find(changed.begin(), changed.end(), ".cache") == changed.end()) {
    changed.push_back(".cache");
  }
  std::sort(changed.begin(), changed.end());
  EXPECT_EQ(first["tmp"], json(changed));
  EXPECT_EQ(first["shm"], json({"segment"}));

  const json second = RunProbe(tree);
  EXPECT_EQ(second["tmp"], json(FreshWorkspaceTree()));
  EXPECT_EQ(second["shm"], json::array());
}

TEST_P(FilesystemTest, WorkspaceIsAPrivateTmpfsThatIsCwdAndHome) {
  const json j = RunProbe(R"py(
st = os.stat("/tmp")
vfs = os.statvfs("/tmp")
mount = [l.split() for l in open("/proc/self/mountinfo") if l.split()[4] == "/tmp"][-1]
print(json.dumps({
    "cwd": os.getcwd(), "home": os.environ["HOME"], "uid": st.st_uid, "gid": st.st_gid,
    "bytes": vfs.f_blocks * vfs.f_frsize,
    "options": mount[5].split(","), "fstype": mount[mount.index("-") + 1],
    "main": open("/tmp/main.py").read().startswith(chr(10) + "import errno"),
}))
)py");
  EXPECT_EQ(j["cwd"], "/tmp");
  EXPECT_EQ(j["home"], "/tmp");
  EXPECT_EQ(j["uid"], 65532);
  EXPECT_EQ(j["gid"], 65532);
  EXPECT_EQ(j["bytes"], 64 << 20);
  EXPECT_EQ(j["fstype"], "tmpfs");
  for (const char* option : {"rw", "nosuid", "nodev", "noexec"}) {
    EXPECT_NE(std::find(j["options"].begin(), j["options"].end(), option), j["options"].end())
        << option << " missing from " << j["options"].dump();
  }
  EXPECT_EQ(j["main"], true) << "/tmp/main.py is not the program";
}

TEST_P(FilesystemTest, RootfsIsReadOnly) {
  const json j = RunProbe(R"py(
print(json.dumps({
    "/usr": probe(lambda: open("/usr/new-file", "w")),
    "/usr/bin": probe(lambda: os.mkdir("/usr/bin/new-dir")),
    "/etc": probe(lambda: open("/etc/new-file", "w")),
    "/": probe(lambda: os.mkdir("/new-dir")),
    "/tmp": probe(lambda: open("/tmp/new-file", "w")),
}))
)py");
  EXPECT_EQ(j["/usr"], "EROFS");
  EXPECT_EQ(j["/usr/bin"], "EROFS");
  EXPECT_EQ(j["/etc"], "EROFS");
  EXPECT_EQ(j["/"], "EROFS");
  EXPECT_EQ(j["/tmp"], "ok") << "positive control: the workspace is writable";
}

// Opening with O_TRUNC checks the mount's read-only flag before the file's permissions, so an
// unprivileged writer sees EROFS on a read-only mount and EACCES on a writable one.
TEST_P(FilesystemTest, ProcSysAndSysrqTriggerAreReadOnly) {
  const json j = RunProbe(R"py(
def exists(p):
    return os.path.exists(p)
print(json.dumps({
    "sys": probe(lambda: open("/proc/sys/kernel/hostname", "w")),
    "sysrq_exists": exists("/proc/sysrq-trigger"),
    "sysrq": probe(lambda: open("/proc/sysrq-trigger", "w")),
}))
)py");
  EXPECT_EQ(j["sys"], "EROFS");
  // Kernels without CONFIG_MAGIC_SYSRQ have no /proc/sysrq-trigger.
  EXPECT_EQ(j["sysrq_exists"], HostHas("/proc/sysrq-trigger"));
  if (HostHas("/proc/sysrq-trigger")) {
    EXPECT_EQ(j["sysrq"], "EROFS");
  }
}

// Files Docker masks read empty. /proc/timer_list is 0400 root on the host, so reading it as the
// sandbox user gives EACCES unless it is masked; /proc/kcore exists only with CONFIG_PROC_KCORE.
TEST_P(FilesystemTest, SensitiveProcFilesReadEmpty) {
  const json j = RunProbe(R"py(
def read(p):
    if not os.path.exists(p):
        return "absent"
    try:
        return len(open(p, "rb").read())
    except OSError as e:
        return errno.errorcode[e.errno]
print(json.dumps({p: read("/proc/" + p) for p in ["kcore", "keys", "timer_list"]}))
)py");
  ASSERT_TRUE(HostHas("/proc/timer_list")) << "this test relies on /proc/timer_list existing";
  for (const char* file : {"kcore", "keys", "timer_list"}) {
    if (HostHas((std::string("/proc/") + file).c_str())) {
      EXPECT_EQ(j[file], 0) << "/proc/" << file;
    } else {
      EXPECT_EQ(j[file], "absent") << "/proc/" << file;
    }
  }
}

TEST_P(FilesystemTest, DevHoldsOnlyTheMinimalNodes) {
  const json j = RunProbe(R"py(
open("/dev/shm/probe", "w").write("shared memory")
print(json.dumps({
    "dev": sorted(os.listdir("/dev")),
    "links": {n: os.readlink("/dev/" + n) for n in ["fd", "stdin", "stdout", "stderr"]},
    "shm": open("/dev/shm/probe").read(),
    "new file": probe(lambda: open("/dev/new-file", "w")),
    "new dir": probe(lambda: os.mkdir("/dev/new-dir")),
    "zero": open("/dev/zero", "rb").read(4).hex(),
    "null": probe(lambda: open("/dev/null", "w").write("discarded")),
    "random": len(open("/dev/urandom", "rb").read(16)),
}))
)py");
  EXPECT_EQ(j["dev"], json({"fd", "full", "null", "random", "shm", "stderr", "stdin", "stdout",
                            "urandom", "zero"}));
  EXPECT_EQ(j["links"], json({{"fd", "/proc/self/fd"},
                              {"stdin", "/proc/self/fd/0"},
                              {"stdout", "/proc/self/fd/1"},
                              {"stderr", "/proc/self/fd/2"}}));
  EXPECT_EQ(j["shm"], "shared memory");
  EXPECT_EQ(j["new file"], "EROFS");
  EXPECT_EQ(j["new dir"], "EROFS");
  EXPECT_EQ(j["zero"], "00000000");
  EXPECT_EQ(j["null"], "ok");
  EXPECT_EQ(j["random"], 16);
}

TEST_P(FilesystemTest, FillingTheWorkspaceGivesEnospc) {
  const json j = RunProbe(R"py(
written = 0
try:
    with open("/tmp/fill", "wb") as f:
        for _ in range(64):
            f.write(b"\0" * 65536)
            f.flush()
            written += 65536
    result = "no error"
except OSError as e:
    result = e.errno
print(json.dumps({"errno": result, "written": written}))
)py",
                          {"--workspace-bytes", "1m"});
  EXPECT_EQ(j["errno"], 28) << "ENOSPC; wrote " << j["written"];
  EXPECT_LE(j["written"].get<long>(), 1 << 20);
}

TEST_P(FilesystemTest, TheCallersUmaskDoesNotReachTheSandbox) {
  const std::string input = HostSetup::Get().WriteSharedFile("umask-input.txt", "x");
  const Outcome r = runner_.RunCommand(
      {"/bin/sh", "-c",
       "umask 077 && exec \"$1\" run --rootfs \"$2\" --input \"data/in.txt=$4\" --code \"$3\"",
       "sh", runner_.Binary(), runner_.Rootfs(),
       "import os, json\n"
       "open('made', 'w').close()\n"
       "print(json.dumps({'umask': os.umask(0), 'main': os.stat('main.py').st_mode & 0o777,\n"
       "                  'made': os.stat('made').st_mode & 0o777,\n"
       "                  'input_dir': os.stat('data').st_mode & 0o777,\n"
       "                  'input': os.stat('data/in.txt').st_mode & 0o777,\n"
       "                  'workspace': os.stat('/tmp').st_mode & 0o777}))",
       input});
  ASSERT_TRUE(IsRunResult(r)) << r.Describe();
  const json p = r.ProgramJson();
  EXPECT_EQ(p["umask"], 022) << r.Describe();
  EXPECT_EQ(p["main"], 0644) << r.Describe();
  EXPECT_EQ(p["made"], 0644) << r.Describe();
  EXPECT_EQ(p["input_dir"], 0755) << r.Describe();
  EXPECT_EQ(p["input"], 0644) << r.Describe();
  EXPECT_EQ(p["workspace"], 0755) << r.Describe();
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(FilesystemTest);

}  // namespace
}  // namespace mcpexec::testing
