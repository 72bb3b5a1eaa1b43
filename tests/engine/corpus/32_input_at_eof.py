# run: {"expect_exit": 1, "expect_stderr_contains": "EOFError: EOF when reading a line"}
print("asking for input with nothing on stdin", flush=True)
answer = input("prompt> ")
print("never reached", answer)
