import multiprocessing
import sys


def child(code):
    print(f"child {code} prints", flush=True)
    sys.exit(code)


def child_raises():
    raise RuntimeError("raised in a child process")


for code in (0, 5):
    p = multiprocessing.Process(target=child, args=(code,))
    p.start()
    p.join()
    print("exitcode:", p.exitcode, flush=True)
p = multiprocessing.Process(target=child_raises, name="raiser")
p.start()
p.join()
print("exitcode after an exception:", p.exitcode, flush=True)
