# FS-07: the paths Docker masks (moby's default MaskedPaths): /proc/kcore (kernel memory),
# /proc/keys, /proc/timer_list and /proc/sched_debug (the host's timers and tasks),
# /proc/interrupts (the host's devices and per-CPU interrupt counts, a side channel on other
# tenants' activity), /proc/acpi, /proc/scsi ..., /sys/firmware and /sys/devices/virtual/powercap
# (RAPL energy counters, CVE-2020-8694 "Platypus"). mcp-exec: files covered with /dev/null (read
# empty), directories with an empty read-only tmpfs; there is no /sys at all.
for name in ("interrupts", "kcore", "keys", "latency_stats", "timer_list", "timer_stats",
             "sched_debug", "acpi", "asound", "scsi", "/sys/firmware",
             "/sys/devices/virtual/powercap"):
    path = name if name.startswith("/") else "/proc/" + name
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
        escaped("%s shows the host's data" % path)
report()
