# run: {"expect_exit": 1, "expect_stderr_contains": "RecursionError: maximum recursion depth exceeded"}
def down(n):
    return down(n + 1) + 1


down(0)
