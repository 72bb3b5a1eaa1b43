# LEAK-02: the host's paths and the supervisor's command line, through what /proc shows of the
# sandbox's own mounts and processes. PARAMS["host_paths"]: paths on the host (the rootfs, the
# mcp-exec binary) that must not be named anywhere inside. PARAMS["look_in"]: "mounts" (the mount
# table), "cmdline" (the command line of every visible process), or both (the default).
look_in = PARAMS.get("look_in", ["mounts", "cmdline"])
sources = {}
if "mounts" in look_in:
    sources["/proc/self/mountinfo"] = open("/proc/self/mountinfo").read()
    sources["/proc/self/mounts"] = open("/proc/self/mounts").read()
    observe("mount roots", [l.split()[3] for l in sources["/proc/self/mountinfo"].splitlines()])
if "cmdline" in look_in:
    for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
        try:
            sources["/proc/%s/cmdline" % pid] = open("/proc/%s/cmdline" % pid, "rb").read().decode(errors="replace").replace("\0", " ")
        except OSError as e:
            observe("/proc/%s/cmdline" % pid, errname(e.errno))
    observe("init cmdline", sources.get("/proc/1/cmdline", "")[:300])
leaks = {}
for source, text in sources.items():
    for path in PARAMS["host_paths"]:
        if path in text:
            leaks.setdefault(source, []).append(path)
            escaped("%s names the host path %s" % (source, path))
observe("host paths named", leaks)
report()
