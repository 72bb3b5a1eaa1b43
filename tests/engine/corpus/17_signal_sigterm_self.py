# run: {"expect_exit": 143, "expect_signal": "SIGTERM"}
import os
import signal

print("sending SIGTERM to myself", flush=True)
os.kill(os.getpid(), signal.SIGTERM)
print("still alive after SIGTERM")
