# IPC-02: channels from one run to the next: the workspace, /dev/shm, POSIX shared memory and
# the keyrings. PARAMS: "phase" ("write" leaves markers named after PARAMS["token"]; "read"
# looks for them). mcp-exec: a fresh tmpfs for /tmp and for /dev/shm per run; keyrings denied.
token = PARAMS["token"]
paths = ["/tmp/marker-" + token, "/tmp/.cache/marker-" + token, "/dev/shm/marker-" + token,
         "/dev/shm/sem.marker-" + token]
if PARAMS["phase"] == "write":
    os.makedirs("/tmp/.cache", exist_ok=True)
    for path in paths:
        observe("write " + path, attempt(lambda: open(path, "w").write(token)))
    observe("add_key", call("add_key", b"user", token.encode(), b"x", 1, -4))  # user keyring
else:
    for path in paths:
        result = observe("read " + path, attempt(lambda: open(path).read()))
        if result == "ok":
            escaped("found the previous run's " + path)
    ret, err = raw("request_key", b"user", token.encode(), None, 0)
    result = observe("request_key", err or "ok")
    if result == "ok":
        escaped("found the previous run's key")
report()
