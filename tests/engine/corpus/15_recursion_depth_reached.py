# run: {"documented": {"stdout": "docs/engine.md: the agent's two frames are under the program's (two fewer levels before RecursionError)"}}
import sys

deepest = 0


def down(n):
    global deepest
    deepest = n
    down(n + 1)


try:
    down(1)
except RecursionError as error:
    print("caught:", error)
print("limit:", sys.getrecursionlimit())
print("deepest call reached:", deepest)
