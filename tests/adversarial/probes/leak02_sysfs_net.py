# LEAK-02: the host's devices and network through /sys and /proc/net. PARAMS["host_interfaces"]:
# the host's network interfaces. mcp-exec: nothing is mounted on /sys; /proc/net belongs to the
# sandbox's network namespace (lo only, no host sockets).
observe("/sys", value(lambda: sorted(os.listdir("/sys"))))
for path in ("/sys/class/net", "/sys/block", "/sys/devices", "/sys/firmware"):
    result = observe(path, value(lambda: sorted(os.listdir(path))))
    if isinstance(result, list) and result and result != ["lo"]:
        escaped("%s lists %s" % (path, result[:5]))
dev = [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]
observe("/proc/net/dev", dev)
for name in PARAMS["host_interfaces"]:
    if name != "lo" and name in dev:
        escaped("the host's interface %s is in /proc/net/dev" % name)
for table in ("tcp", "tcp6", "udp", "unix"):
    lines = open("/proc/net/" + table).read().splitlines()[1:]
    observe("/proc/net/" + table, len(lines))
    if lines:
        escaped("/proc/net/%s lists %d sockets" % (table, len(lines)))
report()
