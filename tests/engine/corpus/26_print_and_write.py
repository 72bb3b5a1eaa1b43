import sys

print("plain print")
print("several", "values", 3, 4.5, None, sep="|", end="!\n")
written = sys.stdout.write("written without a newline")
print()
print("write returned", written)
sys.stdout.write("the last text has no newline")
