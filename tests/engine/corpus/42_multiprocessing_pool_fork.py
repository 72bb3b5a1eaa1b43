import multiprocessing
import os


def work(x):
    return x * x, os.getppid() == parent


parent = os.getpid()
print("start method:", multiprocessing.get_start_method())
with multiprocessing.Pool(2) as pool:
    print(pool.map(work, range(6)))
    print(pool.apply(work, (7,)))
print("done")
