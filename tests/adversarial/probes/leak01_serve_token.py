# LEAK-01: the server's secrets in what the sandbox can read of its own processes: their
# command lines and environments. The caller runs this through `mcp-exec serve` started with
# --auth-token PARAMS["token"] (passed here on stdin, which serve's command line does not
# hold). Expected: the token appears nowhere.
token = PARAMS["token"]
for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
    for what in ("cmdline", "environ"):
        path = "/proc/%s/%s" % (pid, what)
        try:
            blob = open(path, "rb").read()
        except OSError as e:
            observe(path, errname(e.errno))
            continue
        observe(path, blob.decode(errors="replace").split("\0")[:3] if what == "cmdline" else "ok")
        if token.encode() in blob:
            escaped("the server's auth token is in " + path)
report()
