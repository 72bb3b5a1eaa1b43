# run: {"timeout": 1, "expect_exit": -1, "expect_timed_out": true}
n = 0
while True:
    n += 1
