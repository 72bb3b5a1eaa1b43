# run: {"expect_exit": 1, "expect_stderr_contains": "During handling of the above exception"}
def cleanup():
    raise RuntimeError("cleanup failed too")


try:
    [][3]
except IndexError:
    cleanup()
