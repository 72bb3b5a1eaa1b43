import warnings

print("before the warning", flush=True)
warnings.warn("a warning at module level")
warnings.warn("the same warning at module level")
warnings.warn("a warning at module level")
print("after the warnings", flush=True)
