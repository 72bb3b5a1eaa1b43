# run: {"args": ["--memory-max", "128m"]}
# 64 MiB fits in a 128 MiB run: whatever an engine loaded ahead must not count against it.
block = bytearray(64 << 20)
for offset in range(0, len(block), 4096):
    block[offset] = 1
print("touched pages:", sum(block[::4096]))
second = bytes(32 << 20)
print("and 32 MiB more:", len(second) >> 20)
