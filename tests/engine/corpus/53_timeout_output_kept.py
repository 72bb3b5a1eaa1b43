# run: {"timeout": 1, "expect_exit": -1, "expect_timed_out": true}
import sys
import time

print("printed and flushed before the timeout", flush=True)
print("written to stderr before the timeout", file=sys.stderr)
print("left in the buffer, lost at the kill")
time.sleep(30)
