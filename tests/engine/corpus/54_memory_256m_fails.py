# run: {"args": ["--memory-max", "128m"], "expect_exit": 137, "expect_signal": "SIGKILL", "expect_oom_killed": true, "on_rlimit": {"expect_exit": 0, "expect_signal": null, "expect_oom_killed": false}}
# With 128 MiB for the run, 256 MiB cannot be had. The rlimit backend has no memory limit
# (only a 1 GiB address-space backstop), so there the allocation succeeds.
print("allocating 256 MiB", flush=True)
try:
    block = bytearray(256 << 20)
    for offset in range(0, len(block), 4096):
        block[offset] = 1
    print("allocated and touched", sum(block[::4096]) // 1024, "KiB worth of pages")
except MemoryError:
    print("MemoryError")
