# run: {"expect_exit": 1, "expect_stderr_contains": "Traceback (most recent call last):\n  File \"/tmp/main.py\", line 4, in <module>\n"}
print("about to fail")
data = {"present": 1}
print(data["missing"])
