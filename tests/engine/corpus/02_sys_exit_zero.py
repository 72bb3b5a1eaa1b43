import sys

print("before sys.exit(0)")
sys.exit(0)
print("never printed")
