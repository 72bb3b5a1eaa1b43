# run: {"expect_exit": 1, "expect_stderr_contains": "ZeroDivisionError: integer division or modulo by zero"}
def outer(values):
    return [middle(v) for v in values]


def middle(value):
    return inner(value) + 1


def inner(value):
    return 10 // value


print(outer([5, 2, 0]))
