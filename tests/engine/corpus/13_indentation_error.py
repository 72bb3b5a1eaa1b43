# run: {"expect_exit": 1, "expect_stderr_contains": "IndentationError"}
def f():
    first = 1
      second = 2
    return first + second
