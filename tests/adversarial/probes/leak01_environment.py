# LEAK-01: the supervisor's environment (MCP_EXEC_AUTH_TOKEN, cloud credentials) inherited by
# the program or readable from another process. The caller starts mcp-exec with variables
# named in PARAMS["names"]; their values are not given here, so that the probe's own
# command line cannot hold them. mcp-exec: the program gets exactly PATH, HOME, LANG,
# MPLBACKEND, MCP_EXEC_FIGURE_MAX_PX (with the rootfs's figure backend) and
# PYTHONDONTWRITEBYTECODE; init's /proc/1/environ is closed (EACCES).
allowed = {"PATH", "HOME", "LANG", "MPLBACKEND", "MCP_EXEC_FIGURE_MAX_PX",
           "PYTHONDONTWRITEBYTECODE"}
observe("environment", sorted(os.environ))
for key in os.environ:
    # PWD naming the cwd is set by the sandbox's own chdir (bwrap does), and holds nothing of the host.
    if key not in allowed and not (key == "PWD" and os.environ[key] == os.getcwd()):
        escaped("inherited " + key)
for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()) + ["self"]:
    try:
        blob = open("/proc/%s/environ" % pid, "rb").read().decode(errors="replace")
        observe("/proc/%s/environ" % pid, "ok")
    except OSError as e:
        observe("/proc/%s/environ" % pid, errname(e.errno))
        continue
    for name in PARAMS["names"]:
        if name + "=" in blob:
            escaped("%s in /proc/%s/environ" % (name, pid))
report()
