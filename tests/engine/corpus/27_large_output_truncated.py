# run: {"args": ["--max-output-bytes", "2k"], "expect_truncated": true}
import sys

for line in range(400):
    print(f"line {line:04d} " + "x" * 40, flush=True)
print("done", file=sys.stderr)
