# IPC-01: System V shared memory that outlives the sandbox (ndrewh/nsjail-shm-dos), and SysV
# objects seen across runs. PARAMS: "phase" ("create" leaves a segment, a semaphore set and a
# message queue behind under PARAMS["key"]; "check" looks for them), "key". mcp-exec: every run
# has its own IPC namespace, destroyed with the run (with everything in it).
libc.shmget.restype = ctypes.c_int
libc.shmat.restype = ctypes.c_void_p
key = PARAMS["key"]
IPC_CREAT = 0o1000
if PARAMS["phase"] == "create":
    shm = libc.shmget(key, 4 << 20, IPC_CREAT | 0o600)
    observe("shmget 4 MiB", "ok" if shm >= 0 else errname(ctypes.get_errno()))
    if shm >= 0:
        addr = libc.shmat(shm, None, 0)
        ctypes.memset(addr, 0x5A, 4 << 20)  # touch every page
        observe("shm touched", True)
    observe("semget", "ok" if libc.semget(key, 1, IPC_CREAT | 0o600) >= 0 else errname(ctypes.get_errno()))
    observe("msgget", "ok" if libc.msgget(key, IPC_CREAT | 0o600) >= 0 else errname(ctypes.get_errno()))
else:
    for kind in ("shm", "sem", "msg"):
        lines = open("/proc/sysvipc/" + kind).read().splitlines()[1:]
        observe("/proc/sysvipc/" + kind, len(lines))
        if lines:
            escaped("%d %s objects of another run visible" % (len(lines), kind))
    for fn in ("shmget", "semget", "msgget"):
        ctypes.set_errno(0)
        ret = getattr(libc, fn)(key, 0, 0)
        result = observe(fn + " key", "ok" if ret >= 0 else errname(ctypes.get_errno()))
        if result == "ok":
            escaped("%s found the other run's object" % fn)
report()
