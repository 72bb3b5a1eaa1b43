# run: {"expect_exit": 7}
import os
import sys

print("flushed before os._exit", flush=True)
sys.stdout.flush()
os._exit(7)
