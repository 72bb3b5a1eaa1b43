import os

status = dict(line.split(":", 1) for line in open("/proc/self/status"))
for key in ("Name", "State", "Threads", "SigBlk", "SigIgn", "SigCgt", "NoNewPrivs", "Seccomp",
            "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "Cpus_allowed_list"):
    print(key, status[key].strip())
print("cmdline:", open("/proc/self/cmdline", "rb").read().split(b"\0"))
print("comm:", open("/proc/self/comm").read().strip())
print("exe:", os.readlink("/proc/self/exe"))
print("cwd:", os.readlink("/proc/self/cwd"))
print("processes:", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
print("nice:", os.nice(0), "affinity:", sorted(os.sched_getaffinity(0)))
print("children:", open("/proc/self/task/{0}/children".format(os.getpid())).read().split())
