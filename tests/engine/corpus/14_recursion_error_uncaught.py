# run: {"expect_exit": 1, "expect_stderr_contains": "RecursionError: maximum recursion depth exceeded", "documented": {"stderr": "docs/engine.md: the agent's two frames are under the program's (the repeat count of a RecursionError)"}}
def down(n):
    return down(n + 1) + 1


down(0)
