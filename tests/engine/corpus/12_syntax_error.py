# run: {"expect_exit": 1, "expect_stderr_contains": "SyntaxError"}
print("a syntax error stops the program before this line runs")
values = [1, 2,
print(values)
def broken(:
    pass
