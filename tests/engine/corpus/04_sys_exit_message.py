# run: {"expect_exit": 1, "expect_stderr_contains": "stopping with a message"}
import sys

print("before sys.exit(message)")
sys.exit("stopping with a message")
