#include "sandbox/warm_agent.h"

#include <string_view>

#include "sandbox/child/plan_view.h"

namespace mcpexec::sandbox {
namespace {

// Everything after the program's namespace is cleared is a local of _agent: its globals are the
// program's from then on, and the program may rebind any name in them.
constexpr const char* kAgent = R"py(
def _agent(ctl, modules):
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

    os.write(ctl, b"R")
    if os.read(ctl, 1) != b"G":
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
        # The traceback starts at the program, as `python3 main.py` prints it.
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code is me:
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
        finish(1, by_sigint=_isinstance(e, _KeyboardInterrupt))
    finish(0)

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

}  // namespace

// One line: the function is compiled under its own name, so that the frames the program runs
// under are "/tmp/main.py", line 1 (the program's own first line in a stack listing) and
// "<mcp-exec agent>", not lines of the program that took the agent's place.
std::string WarmAgentSource(const std::vector<std::string>& preload) {
  std::string modules;
  for (const std::string& m : preload) modules += (modules.empty() ? "\"" : ", \"") + m + "\"";
  return "exec(compile(" + PythonLiteral(kAgent) + ", \"<mcp-exec agent>\", \"exec\")); _agent(" +
         std::to_string(kFdStart) + ", [" + modules + "])\n";
}

}  // namespace mcpexec::sandbox
