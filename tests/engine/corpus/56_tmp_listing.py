import os

print(sorted(os.listdir("/tmp")))
for top, dirs, files in sorted(os.walk("/tmp")):
    print(top, sorted(dirs), sorted(files))
print(sorted(os.listdir("/tmp/outputs")))
