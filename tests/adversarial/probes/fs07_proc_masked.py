# FS-07: the /proc files Docker masks: /proc/kcore (kernel memory), /proc/keys, /proc/timer_list
# and /proc/sched_debug (the host's timers and tasks), /proc/acpi, /proc/scsi ...
# PARAMS["host_has"]: those the host has. mcp-exec: files covered with /dev/null (read empty),
# directories with an empty read-only tmpfs.
for name in ("kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug",
             "acpi", "asound", "scsi"):
    path = "/proc/" + name
    if not os.path.exists(path):
        observe(name, "absent")
        continue
    if os.path.isdir(path):
        result = observe(name, value(lambda: sorted(os.listdir(path))))
        leaked = isinstance(result, list) and result
    else:
        result = observe(name, value(lambda: len(open(path, "rb").read(65536))))
        leaked = isinstance(result, int) and result > 0
    if leaked:
        escaped("/proc/%s shows the host's data" % name)
report()
