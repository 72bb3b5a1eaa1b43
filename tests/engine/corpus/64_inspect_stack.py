# run: {"documented": {"stdout": "docs/engine.md: the agent's two frames are under the program's (inspect.stack, f_back)"}}
import inspect
import sys
import traceback


def where():
    return [(f.filename, f.lineno, f.function) for f in inspect.stack()]


print("module level frame has no caller:", sys._getframe().f_back is None)
print("stack at module level:", where())
print("getsource:", inspect.getsource(where).splitlines()[0])
print("code filename:", where.__code__.co_filename, where.__module__)
traceback.print_stack(file=sys.stdout)
depth = 0
frame = sys._getframe()
while frame is not None:
    depth += 1
    frame = frame.f_back
print("frames:", depth)
