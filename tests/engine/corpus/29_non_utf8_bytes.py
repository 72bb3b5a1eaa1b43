import sys

sys.stdout.write("text first\n")
sys.stdout.flush()
sys.stdout.buffer.write(b"latin-1 caf\xe9, lone continuation \x80, truncated \xe2\x82\n")
sys.stdout.buffer.write(b"valid \xe2\x82\xac and a NUL \x00 byte\n")
sys.stdout.buffer.flush()
sys.stderr.buffer.write(b"stderr \xff\xfe bytes\n")
print("surrogate escape:", "\udcff".encode("utf-8", "surrogateescape"))
