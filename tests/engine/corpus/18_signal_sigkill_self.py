# run: {"expect_exit": 137, "expect_signal": "SIGKILL"}
import os
import signal

print("sending SIGKILL to myself", flush=True)
print("buffered, lost with the process")
os.kill(os.getpid(), signal.SIGKILL)
