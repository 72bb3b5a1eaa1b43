import os
import sys

for name in ("stdin", "stdout", "stderr"):
    stream = getattr(sys, name)
    print(name, type(stream).__name__, stream.fileno(), stream.encoding, stream.errors,
          stream.line_buffering, stream.isatty(), type(stream.buffer).__name__,
          stream is getattr(sys, f"__{name}__"), flush=True)
for fd in (0, 1, 2):
    st = os.fstat(fd)
    print(fd, oct(st.st_mode & 0o170000), os.get_inheritable(fd), os.get_blocking(fd))
print("to stderr", file=sys.stderr, flush=True)
print("flushed stdout", flush=True)
