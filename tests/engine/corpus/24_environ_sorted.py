import os

for name in sorted(os.environ):
    print(f"{name}={os.environ[name]}")
