# run: {"timeout": 1, "expect_exit": -1, "expect_timed_out": true}
import time

time.sleep(30)
print("never printed")
