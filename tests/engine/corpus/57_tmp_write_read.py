import os

path = "/tmp/notes/data.txt"
os.makedirs(os.path.dirname(path))
with open(path, "w") as f:
    f.write("first line\nsecond line\n")
with open(path, "a") as f:
    f.write("appended\n")
with open(path) as f:
    print(f.read(), end="")
st = os.stat(path)
print("size:", st.st_size, "mode:", oct(st.st_mode), "uid:", st.st_uid, "gid:", st.st_gid)
print("relative open works:", open("notes/data.txt").readline().strip())
os.rename(path, "/tmp/notes/renamed.txt")
print(os.listdir("/tmp/notes"))
print("statvfs /tmp:", os.statvfs("/tmp").f_bsize)
