# run: {"documented": {"stdout": "docs/engine.md: sys.modules holds the preloads"}}
import sys

print(len(sys.modules))
print(sorted(sys.modules))
print("numpy" in sys.modules, "pandas" in sys.modules, "matplotlib" in sys.modules)
