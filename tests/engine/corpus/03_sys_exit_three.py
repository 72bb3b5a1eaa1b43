# run: {"expect_exit": 3}
import sys

print("before sys.exit(3)")
sys.exit(3)
