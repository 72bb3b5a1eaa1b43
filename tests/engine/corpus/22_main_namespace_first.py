import sys

print(sorted(vars(sys.modules["__main__"])))
print(sorted(globals()) == sorted(vars(sys.modules["__main__"])))
print(globals() is vars(sys.modules["__main__"]))
