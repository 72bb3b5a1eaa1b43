import sys

for i in range(5):
    print(f"out {i}", flush=True)
    print(f"err {i}", file=sys.stderr, flush=True)
sys.stdout.write("out partial ")
sys.stderr.write("err partial ")
print("end of out")
print("end of err", file=sys.stderr)
