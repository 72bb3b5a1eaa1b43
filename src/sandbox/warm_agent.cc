#include "sandbox/warm_agent.h"

#include <linux/capability.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include <cstddef>
#include <string_view>
#include <utility>

#include "sandbox/child/plan_view.h"

namespace mcpexec::sandbox {
namespace {

// Everything after the program's namespace is cleared is a local of _agent: its globals are the
// program's from then on, and the program may rebind any name in them.
constexpr const char* kAgent = R"py(
def _agent(ctl, modules, zygote=None):
    import sys, os, builtins, atexit, signal, gc
    _exec, _compile, _isinstance, _type, _open, _print, _int, _str = (
        exec, compile, isinstance, type, open, print, int, str)
    _BaseException, _SystemExit, _KeyboardInterrupt = BaseException, SystemExit, KeyboardInterrupt
    me = sys._getframe().f_code

    # What the imports print is not the program's output, and the directories they make in
    # the workspace (matplotlib's ~/.config/matplotlib) are not the program's either.
    path = "/tmp/main.py"
    os.unlink(path)  # this file: the program takes its place
    workspace = os.listdir("/tmp")
    saved = (os.dup(1), os.dup(2))
    null = os.open("/dev/null", os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    failure = None
    for name in modules:
        try:
            __import__(name)
        except BaseException as e:
            failure = "import %s: %s: %s" % (name, _type(e).__name__, e)
            break
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os.dup2(saved[0], 1)
    os.dup2(saved[1], 2)
    os.close(saved[0])
    os.close(saved[1])
    if failure is not None:
        os.write(ctl, ("E" + failure).encode("utf-8", "replace")[:4000])
        os._exit(1)
    for name in os.listdir("/tmp"):
        if name not in workspace:
            for top, _, _ in os.walk("/tmp/" + name, topdown=False):
                try:
                    os.rmdir(top)
                except OSError:
                    pass
    # The preloads' objects live as long as the interpreter: the program's collections skip them.
    gc.collect()
    gc.freeze()

    if zygote is not None:
        # Says "R" once ready to fork; returns in each run's program process, whose own start
        # socket is then `ctl`.
        _zygote(ctl, zygote)
        zygote = None
    # Prints an uncaught exception as `python3 main.py` does, its traceback starting at the
    # program: the frames of the agent's code objects in `skip` are dropped.
    def excepthook(e, skip):
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code in skip:
            tb = tb.tb_next
        e = e.with_traceback(tb)
        sys.last_type, sys.last_value, sys.last_traceback = _type(e), e, tb
        try:
            sys.excepthook(_type(e), e, tb)
        except _BaseException as hook_error:
            _print("Error in sys.excepthook:", file=sys.stderr)
            sys.__excepthook__(_type(hook_error), hook_error, hook_error.__traceback__.tb_next)
            _print("\nOriginal exception was:", file=sys.stderr)
            sys.__excepthook__(_type(e), e, tb)

    os.write(ctl, b"R")
    go = os.read(ctl, 1)
    if go == b"S":
        _session(ctl, sys, os, builtins, signal, excepthook)  # never returns
    if go != b"G":
        os._exit(0)
    os.close(ctl)

    with _open(path, "rb") as f:
        source = f.read()
    namespace = sys.modules["__main__"].__dict__
    namespace.clear()
    namespace.update(
        __name__="__main__", __doc__=None, __package__=None,
        __loader__=sys.modules["_frozen_importlib_external"].SourceFileLoader("__main__", path),
        __spec__=None, __annotations__={}, __builtins__=builtins, __file__=path,
        __cached__=None)

    # The end of `python3 main.py` as a program sees it (Py_FinalizeEx): non-daemon threads
    # joined, exit handlers run, the program's objects released, output flushed. Then _exit:
    # tearing down the preloaded modules would take over 100 ms, and Python promises no
    # __del__ for objects still alive at exit.
    def finish(status, by_sigint=False):
        threading = sys.modules.get("threading")
        if threading is not None:
            try:
                threading._shutdown()
            except _BaseException:
                pass
        atexit._run_exitfuncs()
        namespace.clear()
        gc.collect()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except _BaseException:
                status = 120
        if by_sigint:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        os._exit(status & 0xFF)

    try:
        _exec(_compile(source, path, "exec", dont_inherit=True), namespace)
    except _SystemExit as e:
        code = e.code
        if code is None:
            finish(0)
        if _isinstance(code, _int):
            finish(code)
        try:
            sys.stderr.write(_str(code) + "\n")
        except _BaseException:
            pass
        finish(1)
    except _BaseException as e:
        excepthook(e, (me,))
        finish(1, by_sigint=_isinstance(e, _KeyboardInterrupt))
    finish(0)

# A session (S instead of G): one call after another in one namespace, as a notebook's kernel
# runs cells. Each call is a "C" message on `ctl`, with the call's id (16 random bytes) and four
# descriptors: the code (a sealed memfd), stdin, stdout and stderr for this call. The agent puts
# them at 0, 1 and 2, runs the code, saves the figures left open, puts /dev/null back and
# answers "D" with the call's id, its status (4 bytes) and the repr of a last expression (a flag
# byte, then UTF-8). The supervisor takes only that answer, once (call_channel.h). Everything
# the agent uses is a local bound before the program's first call: the program may rebind any
# global or builtin.
def _session(ctl, sys, os, builtins, signal, excepthook):
    import ast, linecache, socket, struct
    _exec, _eval, _compile, _isinstance, _type, _open, _print, _int, _str, _repr, _len = (
        exec, eval, compile, isinstance, type, open, print, int, str, repr, len)
    _BaseException, _SystemExit, _KeyboardInterrupt = BaseException, SystemExit, KeyboardInterrupt
    _Expr, _Expression, _parse, _pack = ast.Expr, ast.Expression, ast.parse, struct.pack
    _recv_fds, _dup2, _close, _read = socket.recv_fds, os.dup2, os.close, os.read
    _signal, _SIGINT, _SIG_IGN, _interrupt = (
        signal.signal, signal.SIGINT, signal.SIG_IGN, signal.default_int_handler)
    _modules, _cache = sys.modules, linecache.cache
    encoding, errors = sys.stdin.encoding, sys.stdin.errors
    value_limit = 16000
    # The program sees this one descriptor besides 0, 1 and 2 (its processes do not inherit it).
    os.set_inheritable(ctl, False)
    control = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, ctl)
    _open_fd = os.open

    def quiet():  # 0, 1 and 2 on /dev/null between calls
        null = _open_fd("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            _dup2(null, fd)
        _close(null)

    quiet()
    _signal(_SIGINT, _SIG_IGN)  # SIGINT interrupts a call, never the agent
    namespace = _modules["__main__"].__dict__
    namespace.clear()
    namespace.update(
        __name__="__main__", __doc__=None, __package__=None, __loader__=None, __spec__=None,
        __annotations__={}, __builtins__=builtins)

    def run(source, name):
        # As a notebook cell: a last expression's value is the call's result.
        text = source.decode("utf-8", "replace")
        _cache[name] = (_len(text), None, text.splitlines(True), name)
        tree = _parse(source, name)
        last = None
        if tree.body and _isinstance(tree.body[-1], _Expr):
            last = _Expression(tree.body.pop().value)
        _exec(_compile(tree, name, "exec", dont_inherit=True), namespace)
        if last is not None:
            value = _eval(_compile(last, name, "eval", dont_inherit=True), namespace)
            if value is not None:
                return _repr(value)[:value_limit]
        return None

    # The traceback starts at the call's code: the agent's frames and ast.parse's are dropped.
    mine = (sys._getframe().f_code, run.__code__, _parse.__code__)

    number = 0
    while True:
        message, fds, _, _ = _recv_fds(control, 64, 4)
        if message[:1] != b"C" or _len(message) != 17 or _len(fds) != 4:
            for fd in fds:
                _close(fd)
            if message:
                continue
            os._exit(0)  # the supervisor is gone
        # A local, new with each call: the program cannot know it before the call starts.
        call_id = message[1:]
        number += 1
        chunks = []
        while True:
            chunk = _read(fds[0], 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        source = b"".join(chunks)
        for fd, to in zip(fds[1:], (0, 1, 2)):
            _dup2(fd, to)
        for fd in fds:
            _close(fd)
        try:
            sys.stdin = _open(0, "r", encoding=encoding, errors=errors, closefd=False)
        except _BaseException:
            pass
        status, value = 0, None
        try:
            try:
                _signal(_SIGINT, _interrupt)
                value = run(source, "<exec-%d>" % number)
            except _SystemExit as e:
                code = e.code
                if code is None:
                    status = 0
                elif _isinstance(code, _int):
                    status = code
                else:
                    status = 1
                    _print(_str(code), file=sys.stderr)
            except _BaseException as e:
                status = 1
                excepthook(e, mine)
            finally:
                _signal(_SIGINT, _SIG_IGN)
        except _BaseException:  # an interrupt after the code ended, or while it was reported
            status = 1
        figures = _modules.get("mcp_exec_figures")
        if figures is not None:
            try:
                figures.show()
            except _BaseException as e:
                _print("mcp_exec_figures: %s: %s" % (_type(e).__name__, e), file=sys.stderr)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except _BaseException:
                pass
        quiet()
        # The status as a process's: sys.exit(-1) is 255.
        payload = _pack("=iB", status & 0xFF, value is not None)
        if value is not None:
            payload += value.encode("utf-8", "replace")
        control.send(b"D" + call_id + payload)

# The zygote (a zygote plan): forks one sandbox per "F" message on `ctl`, which carries the run's
# stdin, stdout, stderr, report and start descriptors (docs/engine.md has the protocol). It never
# runs a program: returns only in a run's program process, once that is fully confined.
def _zygote(ctl, setup):
    # Everything a run's processes import, imported before "R": no fork imports anything.
    import os, sys, socket, ctypes, struct, fcntl, resource, signal, random, errno
    libc = ctypes.CDLL(None, use_errno=True)
    ulong = ctypes.c_ulong

    def check(result, what):
        if result != 0:
            e = ctypes.get_errno()
            raise OSError(e, "%s: %s" % (what, os.strerror(e)))

    def prctl(*args):  # the unused arguments must be 0
        return libc.prctl(*[ulong(a) for a in (args + (0, 0, 0, 0))[:5]])

    def seqpacket(fd):
        return socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, fd)

    report_format = setup["report_format"]  # ChildReport (plan_view.h)
    zygote_pid = os.getpid()

    # A run's first process ends as soon as it has forked the run's init: reaped at once, it
    # no longer counts against the run's pids (the supervisor waits for that).
    def reap(*_):
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    return
            except ChildProcessError:
                return

    signal.signal(signal.SIGCHLD, reap)
    control = seqpacket(ctl)
    os.write(ctl, b"R")
    while True:
        message, fds, _, _ = socket.recv_fds(control, 16, 5)
        if message != b"F" or len(fds) != 5:
            for fd in fds:
                os.close(fd)
            if message:
                continue
            # Retired, or the supervisor is gone: the runs it forked end first (they die with it).
            while True:
                try:
                    os.wait()
                except ChildProcessError:
                    os._exit(0)
        if os.fork() != 0:
            for fd in fds:
                os.close(fd)
            continue
        control.detach()
        try:
            _zygote_run(fds, setup, zygote_pid, libc, check, prctl, seqpacket, report_format)
            return
        except BaseException as e:
            try:
                os.write(5, ("E%s: %s" % (type(e).__name__, e)).encode("utf-8", "replace")[:4000])
            finally:
                os._exit(125)


# One run's sandbox, forked from the zygote. The first process (in the zygote's namespaces)
# waits to be moved into the run's cgroup, makes the run's user, mount, pid, net, ipc, uts and
# cgroup namespaces, forks the run's init (PID 1) and ends: the init, orphaned to the zygote's
# own init, is then the only process of the run outside its program. It mounts what a cold init
# mounts, drops every capability, reports as a cold init does, and forks the program's process
# (PID 2), which applies the rlimits and seccomp filter and returns.
def _zygote_run(fds, setup, zygote_pid, libc, check, prctl, seqpacket, report_format):
    import os, sys, socket, ctypes, struct, fcntl, resource, signal, random, errno
    # The kernel's numbers, from the headers the cold child is compiled with (SetupConstants).
    k = setup["k"]
    PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = (
        k["PR_SET_PDEATHSIG"], k["PR_SET_DUMPABLE"], k["PR_CAPBSET_DROP"], k["PR_SET_NO_NEW_PRIVS"])
    PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = (
        k["PR_CAP_AMBIENT"], k["PR_CAP_AMBIENT_CLEAR_ALL"], k["PR_SET_SECCOMP"],
        k["SECCOMP_MODE_FILTER"])
    ulong = ctypes.c_ulong
    # The zygote reaps its children from a SIGCHLD handler; the run's init must not inherit it,
    # or a program that ended before the init reached its wait loop would be reaped unreported.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    check(prctl(PR_SET_PDEATHSIG, signal.SIGKILL), "set the parent-death signal")
    if os.getppid() != zygote_pid:
        os._exit(0)
    # stdin, stdout, stderr, report and start at a cold init's numbers (ChildFd), nothing else.
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 16) for fd in fds]
    for fd, to in zip(high, (0, 1, 2, 3, 5)):
        os.dup2(fd, to, inheritable=to <= 2)
    os.closerange(4, 5)
    os.closerange(6, 1 << 30)
    start = seqpacket(5)
    pidfd = os.pidfd_open(os.getpid())
    socket.send_fds(start, [b"P"], [pidfd])
    os.close(pidfd)
    if start.recv(1) != b"M":  # the supervisor has moved this process into the run's cgroup
        os._exit(0)
    check(libc.unshare(setup["namespaces"]), "unshare the run's namespaces")
    for name, text in (("setgroups", "deny"), ("gid_map", setup["gid_map"]),
                       ("uid_map", setup["uid_map"])):
        with open("/proc/self/" + name, "w") as f:
            f.write(text)
    if os.fork() != 0:
        os._exit(0)

    # The run's init, PID 1 of its namespace. It dies with the zygote, whose PID namespace holds
    # its own.
    for kind, source, target, fstype, flags, data, mode, optional in setup["mounts"]:
        try:
            if kind == "mount":
                check(libc.mount(source, target, fstype, ulong(flags), data),
                      "mount " + target.decode())
            elif kind == "mkdir":
                os.mkdir(target, mode)
            elif kind == "touch":
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                                 mode))
            elif kind == "symlink":
                os.symlink(source, target)
            elif kind == "pivot_root":
                # As a cold init (child.cc, PivotRoot): the old root, the zygote's, goes.
                os.chdir(target)
                check(libc.syscall(setup["pivot_root"], b".", b"."), "pivot_root")
                check(libc.umount2(b".", setup["mnt_detach"]), "detach the zygote's root")
                os.chdir("/")
            elif kind == "copy":
                with open(source, "rb") as f:
                    content = f.read()
                out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
                os.write(out, content)
                os.close(out)
            else:
                raise OSError(errno.EINVAL, "an unknown mount step: " + kind)
        except OSError as e:
            if not (optional and e.errno == errno.ENOENT):
                raise
    socket.sethostname(setup["hostname"])
    lo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    fcntl.ioctl(lo.fileno(), k["SIOCSIFFLAGS"],
                struct.pack(k["ifreq_flags_format"], b"lo", k["IFF_UP"] | k["IFF_RUNNING"]))
    lo.close()
    os.chdir("/tmp")
    for cap in range(setup["last_cap"] + 1):
        check(prctl(PR_CAPBSET_DROP, cap), "drop the bounding set")
    check(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL), "clear the ambient capabilities")
    check(libc.capset(struct.pack("Ii", k["_LINUX_CAPABILITY_VERSION_3"], 0),
                      bytes(k["cap_data_bytes"])), "drop every capability")
    check(prctl(PR_SET_NO_NEW_PRIVS, 1), "set no_new_privs")
    check(prctl(PR_SET_DUMPABLE, 0), "make init non-dumpable")
    pidfd = os.pidfd_open(os.getpid())
    socket.send_fds(start, [b"I"], [pidfd])
    os.close(pidfd)
    report = seqpacket(3)
    workspace = os.open("/tmp", os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    socket.send_fds(report, [struct.pack(report_format, k["kReady"], 0, 0, 0, 0, 0, 0)],
                    [workspace])
    os.close(workspace)
    program = os.fork()
    if program == 0:
        report.detach()
        start.detach()
        os.close(3)
        # An interpreter that execve() started is dumpable: its /proc/self is its own to write.
        check(prctl(PR_SET_DUMPABLE, 1), "make the program dumpable")
        os.setsid()
        for which, soft, hard in setup["rlimits"]:
            resource.setrlimit(which, (soft, hard))
        # Each run's random state is its own: the generators the zygote seeded are reseeded.
        random.seed()
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed()
        tempfile = sys.modules.get("tempfile")
        if tempfile is not None:
            tempfile._name_sequence = None
        process = sys.modules.get("multiprocessing.process")
        if process is not None:
            process.current_process().authkey = os.urandom(32)
        if setup["seccomp"]:
            bpf = ctypes.create_string_buffer(setup["seccomp"], len(setup["seccomp"]))
            class Program(ctypes.Structure):
                _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
            prog = Program(len(setup["seccomp"]) // 8, ctypes.addressof(bpf))
            check(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog)),
                  "apply the seccomp filter")
        return
    # As a cold init: /proc/1/cmdline says what it is, and signals from inside the namespace
    # reach PID 1 only through a handler.
    stat = open("/proc/self/stat", "rb").read()
    fields = stat[stat.rindex(b")") + 2:].split()
    arg_start, arg_end = int(fields[45]), int(fields[46])
    name = b"mcp-exec-init"[:arg_end - arg_start - 1]
    ctypes.memset(arg_start, 0, arg_end - arg_start)
    ctypes.memmove(arg_start, name, len(name))
    comm = ctypes.create_string_buffer(setup["init_name"][:15])
    prctl(k["PR_SET_NAME"], ctypes.addressof(comm))
    for sig in signal.valid_signals():
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
    start.detach()
    os.closerange(0, 3)
    os.close(5)
    while True:
        pid, status, _ = os.wait4(-1, 0)
        if pid == program:
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu_us = int((usage.ru_utime + usage.ru_stime) * 1000000)
            report.send(struct.pack(report_format, k["kExit"], 0, 0, 0, status, usage.ru_maxrss,
                                    cpu_us))
            os._exit(0)

)py";

// `text` as a Python string literal on one line.
std::string PythonLiteral(std::string_view text) {
  std::string literal = "\"";
  for (const char ch : text) {
    if (ch == '\\' || ch == '"') literal += '\\';
    if (ch == '\n') {
      literal += "\\n";
    } else {
      literal += ch;
    }
  }
  return literal + "\"";
}

// `bytes` as a Python bytes literal; None when empty and `none_if_empty`.
std::string PythonBytes(std::string_view bytes, bool none_if_empty = false) {
  if (bytes.empty() && none_if_empty) return "None";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string literal = "b\"";
  for (const unsigned char ch : bytes) {
    if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '"') {
      literal += static_cast<char>(ch);
    } else {
      literal += {'\\', 'x', kHex[ch >> 4], kHex[ch & 15]};
    }
  }
  return literal + "\"";
}

std::string PythonRlimit(rlim_t value) {
  return value == RLIM_INFINITY ? "-1" : std::to_string(value);
}

std::string ModuleList(const std::vector<std::string>& preload) {
  std::string modules;
  for (const std::string& m : preload) modules += (modules.empty() ? "\"" : ", \"") + m + "\"";
  return "[" + modules + "]";
}

// ChildReport (plan_view.h) as a Python struct format: its members in order, native sizes, no
// alignment ("="), the padding the compiler put between them written out.
std::string ReportFormat() {
  static_assert(sizeof(ReportType) == 4 && sizeof(ChildStep) == 4, "both are packed as I");
  static_assert(offsetof(ChildReport, step) == 4 && offsetof(ChildReport, sys_errno) == 8 &&
                    offsetof(ChildReport, index) == 12 && offsetof(ChildReport, wait_status) == 16,
                "the members before the padding are packed as IIiIi");
  constexpr size_t kPadding = offsetof(ChildReport, children_maxrss_kib) - 20;
  static_assert(offsetof(ChildReport, children_cpu_us) ==
                    offsetof(ChildReport, children_maxrss_kib) + 8 &&
                sizeof(ChildReport) == offsetof(ChildReport, children_cpu_us) + 8,
                "the two last members are packed as qq, with nothing after them");
  return "=IIiIi" + (kPadding == 0 ? std::string() : std::to_string(kPadding) + "x") + "qq";
}

// The kernel's and the child's numbers the zygote's agent uses, from the same headers as the
// cold child (child.cc): none is copied by hand into the agent.
std::string SetupConstants() {
  struct ifreq ifr {};
  static_assert(sizeof(ifr.ifr_name) == 16 && sizeof(ifr.ifr_flags) == 2,
                "an ifreq's flags are packed as 16sh");
  const std::pair<const char*, long long> constants[] = {
      {"PR_SET_PDEATHSIG", PR_SET_PDEATHSIG},
      {"PR_SET_DUMPABLE", PR_SET_DUMPABLE},
      {"PR_CAPBSET_DROP", PR_CAPBSET_DROP},
      {"PR_SET_NO_NEW_PRIVS", PR_SET_NO_NEW_PRIVS},
      {"PR_CAP_AMBIENT", PR_CAP_AMBIENT},
      {"PR_CAP_AMBIENT_CLEAR_ALL", PR_CAP_AMBIENT_CLEAR_ALL},
      {"PR_SET_SECCOMP", PR_SET_SECCOMP},
      {"PR_SET_NAME", PR_SET_NAME},
      {"SECCOMP_MODE_FILTER", SECCOMP_MODE_FILTER},
      {"SIOCSIFFLAGS", SIOCSIFFLAGS},
      {"IFF_UP", IFF_UP},
      {"IFF_RUNNING", IFF_RUNNING},
      {"_LINUX_CAPABILITY_VERSION_3", _LINUX_CAPABILITY_VERSION_3},
      {"cap_data_bytes", sizeof(__user_cap_data_struct) * _LINUX_CAPABILITY_U32S_3},
      {"kReady", static_cast<long long>(ReportType::kReady)},
      {"kExit", static_cast<long long>(ReportType::kExit)},
  };
  std::string dict = "{";
  for (const auto& [name, value] : constants) {
    dict += "\"" + std::string(name) + "\": " + std::to_string(value) + ", ";
  }
  const size_t padding = sizeof(ifreq) - sizeof(ifr.ifr_name) - sizeof(ifr.ifr_flags);
  return dict + "\"ifreq_flags_format\": \"16sh" + std::to_string(padding) + "x\"}";
}

std::string ZygoteSetupLiteral(const ZygoteRunSetup& setup) {
  constexpr uint64_t kNamespaces = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                                   CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
  std::string mounts;
  for (const MountOp& op : setup.mounts) {
    mounts += "(\"" + std::string(MountOpKindName(op.kind)) + "\", " +
              PythonBytes(op.source, true) + ", " + PythonBytes(op.target) + ", " +
              PythonBytes(op.fstype, true) + ", " + std::to_string(op.flags) + ", " +
              PythonBytes(op.data, true) + ", " + std::to_string(op.mode) + ", " +
              (op.optional ? "True" : "False") + "), ";
  }
  std::string rlimits;
  for (const RlimitView& r : setup.rlimits) {
    rlimits += "(" + std::to_string(r.resource) + ", " + PythonRlimit(r.limit.rlim_cur) + ", " +
               PythonRlimit(r.limit.rlim_max) + "), ";
  }
  const std::string_view bpf(reinterpret_cast<const char*>(setup.seccomp.data()),
                             setup.seccomp.size() * sizeof(sock_filter));
  return "{\"namespaces\": " + std::to_string(kNamespaces) +
         ", \"pivot_root\": " + std::to_string(SYS_pivot_root) +
         ", \"mnt_detach\": " + std::to_string(MNT_DETACH) +
         ", \"uid_map\": " + PythonLiteral(setup.uid_map) +
         ", \"gid_map\": " + PythonLiteral(setup.gid_map) + ", \"mounts\": [" + mounts +
         "], \"hostname\": " + PythonBytes(setup.hostname) +
         ", \"init_name\": " + PythonBytes(setup.init_name) +
         ", \"last_cap\": " + std::to_string(setup.last_cap) + ", \"k\": " + SetupConstants() +
         ", \"report_format\": " + PythonLiteral(ReportFormat()) + ", \"rlimits\": [" + rlimits +
         "], \"seccomp\": " + PythonBytes(bpf) + "}";
}

}  // namespace

// One line: the function is compiled under its own name, so that the frames the program runs
// under are "/tmp/main.py", line 1 (the program's own first line in a stack listing) and
// "<mcp-exec agent>", not lines of the program that took the agent's place.
std::string WarmAgentSource(const std::vector<std::string>& preload) {
  return "exec(compile(" + PythonLiteral(kAgent) + ", \"<mcp-exec agent>\", \"exec\")); _agent(" +
         std::to_string(kFdStart) + ", " + ModuleList(preload) + ")\n";
}

std::string ZygoteAgentSource(const std::vector<std::string>& preload,
                              const ZygoteRunSetup& setup) {
  return "exec(compile(" + PythonLiteral(kAgent) + ", \"<mcp-exec agent>\", \"exec\")); _agent(" +
         std::to_string(kFdStart) + ", " + ModuleList(preload) + ", " +
         ZygoteSetupLiteral(setup) + ")\n";
}

}  // namespace mcpexec::sandbox
