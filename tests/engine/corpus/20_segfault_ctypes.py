# run: {"expect_exit": 139, "expect_signal": "SIGSEGV"}
import ctypes

print("reading address 0", flush=True)
ctypes.string_at(0)
