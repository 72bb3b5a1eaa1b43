import multiprocessing
import sys


def describe(x):
    main = sys.modules["__main__"]
    return x + 1, __name__, main.__name__, getattr(main, "__file__", None)


if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        for row in pool.map(describe, range(3)):
            print(row)
    q = ctx.Queue()
    p = ctx.Process(target=q.put, args=("sent from a spawned process",))
    p.start()
    print(q.get())
    p.join()
    print("spawned exitcode:", p.exitcode)
