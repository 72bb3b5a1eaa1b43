import os
import sys

print("flushed", flush=True)
print("still in the buffer")
sys.stderr.write("stderr is line buffered\n")
sys.stderr.write("stderr without a newline")
os._exit(0)
