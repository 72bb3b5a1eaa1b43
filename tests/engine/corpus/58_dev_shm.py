import os
from multiprocessing import shared_memory

print("before:", sorted(os.listdir("/dev/shm")))
with open("/dev/shm/plain-file", "wb") as f:
    f.write(b"x" * 4096)
print("plain file size:", os.path.getsize("/dev/shm/plain-file"))
block = shared_memory.SharedMemory(name="engine-test", create=True, size=1 << 20)
block.buf[:5] = b"hello"
other = shared_memory.SharedMemory(name="engine-test")
print("read back:", bytes(other.buf[:5]))
other.close()
print("during:", sorted(os.listdir("/dev/shm")))
block.close()
block.unlink()
os.remove("/dev/shm/plain-file")
print("after:", sorted(os.listdir("/dev/shm")))
