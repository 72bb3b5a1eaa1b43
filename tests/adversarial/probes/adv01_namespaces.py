# Invariant 1: new user, mount, pid, net, ipc, uts and cgroup namespaces; only the time
# namespace is the host's. PARAMS["host"]: the host's namespace links ("net:[4026531840]"...).
host = PARAMS["host"]
mine = observe("namespaces", {ns: os.readlink("/proc/self/ns/" + ns) for ns in host})
for ns in ("user", "mnt", "pid", "net", "ipc", "uts", "cgroup"):
    if mine.get(ns) == host.get(ns):
        escaped("shares the host's %s namespace" % ns)
observe("shared with the host", sorted(ns for ns in host if mine.get(ns) == host.get(ns)))
report()
