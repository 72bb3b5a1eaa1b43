# run: {"expect_exit": 134, "expect_signal": "SIGABRT"}
import os

print("calling os.abort()", flush=True)
os.abort()
