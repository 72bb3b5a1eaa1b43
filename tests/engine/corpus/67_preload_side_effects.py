# run: {"documented": {"stdout": "docs/engine.md: the preloads' import-time work (import hooks, warning filters) happened before the program"}}
import sys
import warnings

print("meta_path:", [type(f).__name__ if not isinstance(f, type) else f.__name__
                     for f in sys.meta_path])
print("filters:", [(f[0], f[2].__name__, getattr(f[3], "pattern", f[3]), f[4])
                   for f in warnings.filters])
