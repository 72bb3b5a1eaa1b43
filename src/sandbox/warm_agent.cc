#include "sandbox/warm_agent.h"

#include <linux/sched.h>

#include <cstring>
#include <string_view>
#include <utility>

#include "sandbox/child/plan_view.h"
#include "sandbox/child/zygote_run.h"

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
    runs = None
    if zygote is not None:
        # Before the imports, so that their objects are where a fork copies them cheaply.
        runs = _zygote_extension(ctl, zygote)
        runs.pack_arenas()
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

    on_start = trial = None
    if zygote is not None:
        # Says "R" once ready to fork; returns in each run's program process, whose own start
        # socket is then `ctl`, with what to do when the request comes. Returns once more, in
        # the zygote's trial run (learn_writes), with the extension, whose begin_trial_run
        # marks where a request would come and whose end_trial is its _exit.
        on_start, trial = _zygote(ctl, runs, zygote[2])
        zygote = runs = None
    _exit = os._exit if trial is None else trial.end_trial
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

    if trial is None:
        os.write(ctl, b"R")
        go = os.read(ctl, 1)
        if go == b"S":
            if on_start is not None:
                on_start()
            _session(ctl, sys, os, builtins, signal, excepthook)  # never returns
        if go != b"G":
            os._exit(0)
        os.close(ctl)
        if on_start is not None:
            on_start()
        with _open(path, "rb") as f:
            source = f.read()
    else:
        trial.begin_trial_run()
        source = b"print(1)\n"
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
        _exit(status & 0xFF)

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

# The zygote's extension (zygote_extension.cc), from `setup`: loaded from its descriptor
# `module` and configured with `blob`, which says what a run sets up (PackZygoteRun).
def _zygote_extension(ctl, setup):
    import os
    from importlib.machinery import ExtensionFileLoader
    from importlib.util import module_from_spec, spec_from_loader
    module, blob, _ = setup
    try:
        loader = ExtensionFileLoader("mcp_exec_zygote", "/proc/self/fd/%d" % module)
        runs = module_from_spec(spec_from_loader("mcp_exec_zygote", loader))
        loader.exec_module(runs)
        os.close(module)
        runs.configure(blob)
        return runs
    except BaseException as e:  # said as a failed preload is, not an end without a word
        os.write(ctl, ("Eload the zygote's extension (mcp_exec_zygote): %s: %s" % (
            type(e).__name__, e)).encode("utf-8", "replace")[:4000])
        os._exit(1)

# The zygote (a zygote plan): forks one sandbox per "F" message on `ctl`, which carries the run's
# stdin, stdout, stderr, report and start descriptors, and after the "F" the name of the run's
# package layer, if it has one (docs/engine.md has the protocol). It never runs a program:
# returns only in a run's program process, once that is fully confined, with what the agent
# calls when the request comes (the layer's .pth files) or None, and None; and in the trial
# (learn_writes), with None and the extension. Each fork sets itself
# up with the extension `runs` (zygote_run.h): the steps of a cold init, compiled. `packages` is
# where a run's layer is mounted, on sys.path since the interpreter started (the image's
# mcp_exec_packages.pth).
def _zygote(ctl, runs, packages):
    # Everything a run's processes import, imported before "R": no fork imports anything.
    import os, sys, socket, signal, site
    zygote_pid = os.getpid()

    # A run's first process ends as soon as it has cloned the run's init, and must then be gone
    # at once: until it is, it counts against the run's pids (the supervisor waits for that).
    # With SIGCHLD ignored the kernel reaps the zygote's children as they end: no handler that a
    # signal between the loop's last look and its blocking recvmsg would leave unrun. (The run's
    # processes do not inherit it, EnterZygoteRun.)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    # numpy's global generator, seeded once here as each run reseeds it, and handed to the
    # extension, so that each run's program rewrites its key in place (reseed_numpy) instead of
    # running numpy's seeding, which writes about 180 of the pages it shares with the zygote.
    # Best effort: a numpy this does not fit leaves each run to call numpy.random.seed().
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            numpy.random.seed()
            generator = numpy.random.mtrand._rand
            if type(generator._bit_generator).__name__ == "MT19937":
                runs.take_numpy_state(generator._bit_generator.capsule, generator.get_state())
        except Exception:
            pass
        finally:
            numpy = generator = None
    # A run of print(1) in a fork, once: the pages it writes, each run's program writes before
    # its request comes, off the request's path. True in that fork (the trial), which goes on
    # as a run's program does, its descriptors on /dev/null and its _exit the trial's end.
    # Returns in the zygote once the trial is gone.
    trial = runs.learn_writes(ctl)
    layer = None
    if not trial:
        # Last, when the imports have made all the memory the runs will share, and no other
        # process shares it: every fork copies its mappings, and a 2 MiB page is one to copy
        # where 4 KiB pages are 512.
        runs.collapse_memory()
        # What the zygote maps of its files' code and constants stays in the page cache, out of
        # its page tables: its RSS and PSS are then what it holds for its runs.
        runs.release_file_pages()
        os.write(ctl, b"R")
        # Forks a run per "F" message; returns in a run's program process only, True when the
        # run has a package layer (a name of anything but hex digits failed its set-up, in the
        # fork).
        layer = runs.serve(ctl, zygote_pid)
    # The run's program: the fork's first process and init did not run Python.
    start = 5
    try:
        # As its init's (EnterZygoteRun): the zygote's disposition is not the program's.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        # What the zygote's import system knew of the packages directory (the layers it had
        # when it started) is dropped.
        sys.path_importer_cache.pop(packages, None)
        # Each run's random state is its own: what the zygote seeded is reseeded (random's
        # own generator is, by the interpreter's fork hooks; numpy's in place when it can be).
        numpy = sys.modules.get("numpy")
        if numpy is not None and not runs.reseed_numpy():
            numpy.random.seed()
        tempfile = sys.modules.get("tempfile")
        if tempfile is not None:
            tempfile._name_sequence = None
        process = sys.modules.get("multiprocessing.process")
        if process is not None:
            process.current_process().authkey = os.urandom(32)
        if trial:
            return None, runs
        # The layer's .pth files, which a cold interpreter runs at its start, are package
        # code: the agent runs them once the request has come, in the run's time and after
        # the start socket is closed (a session's: before its first call).
        if layer is not None:
            return lambda: site.addsitedir(packages), None
        return None, None
    except BaseException as e:
        try:
            os.write(start, ("E%s: %s" % (type(e).__name__, e)).encode("utf-8", "replace")[:4000])
        finally:
            os._exit(125)

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

// `bytes` as a Python bytes literal.
std::string PythonBytes(std::string_view bytes) {
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

std::string ModuleList(const std::vector<std::string>& preload) {
  std::string modules;
  for (const std::string& m : preload) modules += (modules.empty() ? "\"" : ", \"") + m + "\"";
  return "[" + modules + "]";
}

// The blob's bytes: the header first, then each object at its alignment. A pointer in the blob
// holds its target's offset (RelocateZygoteRun makes it a pointer again).
class BlobWriter {
 public:
  BlobWriter() : bytes_(sizeof(ZygoteRunBlob), '\0') {}

  template <typename T>
  T* Put(const T* objects, size_t count) {
    if (count == 0) return nullptr;
    bytes_.resize((bytes_.size() + alignof(T) - 1) / alignof(T) * alignof(T), '\0');
    const size_t offset = bytes_.size();
    bytes_.append(reinterpret_cast<const char*>(objects), count * sizeof(T));
    return reinterpret_cast<T*>(offset);
  }
  // nullptr when empty and `null_if_empty`.
  const char* String(std::string_view text, bool null_if_empty = false) {
    if (text.empty() && null_if_empty) return nullptr;
    const std::string terminated(text);
    return Put(terminated.c_str(), terminated.size() + 1);
  }
  std::string Finish(const ZygoteRunView& view) {
    ZygoteRunBlob header{};
    std::memcpy(header.magic, kZygoteRunMagic, sizeof header.magic);
    header.size = bytes_.size();
    header.view = view;
    std::memcpy(bytes_.data(), &header, sizeof header);
    return std::move(bytes_);
  }

 private:
  std::string bytes_;
};

}  // namespace

// One line: the function is compiled under its own name, so that the frames the program runs
// under are "/tmp/main.py", line 1 (the program's own first line in a stack listing) and
// "<mcp-exec agent>", not lines of the program that took the agent's place.
std::string WarmAgentSource(const std::vector<std::string>& preload) {
  return "exec(compile(" + PythonLiteral(kAgent) + ", \"<mcp-exec agent>\", \"exec\")); _agent(" +
         std::to_string(kFdStart) + ", " + ModuleList(preload) + ")\n";
}

std::string PackZygoteRun(const ZygoteRunSetup& setup) {
  BlobWriter blob;
  std::vector<MountOpView> mounts;
  for (const MountOp& op : setup.mounts) {
    mounts.push_back(MountOpView{op.kind, op.optional, blob.String(op.source, true),
                                 blob.String(op.target), blob.String(op.fstype, true), op.flags,
                                 blob.String(op.data, true), op.mode});
  }
  ZygoteRunView view{};
  view.plan.mount_ops = blob.Put(mounts.data(), mounts.size());
  view.plan.mount_op_count = mounts.size();
  view.plan.hostname = blob.String(setup.hostname);
  view.plan.hostname_len = setup.hostname.size();
  view.plan.last_cap = setup.last_cap;
  view.plan.workdir = blob.String(setup.workdir);
  view.plan.rlimits = blob.Put(setup.rlimits.data(), setup.rlimits.size());
  view.plan.rlimit_count = setup.rlimits.size();
  if (!setup.seccomp.empty()) {
    const sock_fprog program{static_cast<unsigned short>(setup.seccomp.size()),
                             blob.Put(setup.seccomp.data(), setup.seccomp.size())};
    view.plan.seccomp = blob.Put(&program, 1);
  }
  view.namespaces = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                    CLONE_NEWUTS | CLONE_NEWCGROUP;
  view.uid_map = blob.String(setup.uid_map);
  view.gid_map = blob.String(setup.gid_map);
  view.init_name = blob.String(setup.init_name.substr(0, 15));
  view.layers_dir = blob.String(setup.layers_dir, true);
  view.layer_target = blob.String(setup.layer_target, true);
  view.layer_at = setup.layer_at;
  view.layer_remount_flags = setup.layer_remount_flags;
  return blob.Finish(view);
}

std::string ZygoteAgentSource(const std::vector<std::string>& preload,
                              const ZygoteRunSetup& setup) {
  return "exec(compile(" + PythonLiteral(kAgent) + ", \"<mcp-exec agent>\", \"exec\")); _agent(" +
         std::to_string(kFdStart) + ", " + ModuleList(preload) + ", (" +
         std::to_string(kFdZygoteModule) + ", " + PythonBytes(PackZygoteRun(setup)) + ", " +
         PythonLiteral(kPackageLayerMount) + "))\n";
}

}  // namespace mcpexec::sandbox
