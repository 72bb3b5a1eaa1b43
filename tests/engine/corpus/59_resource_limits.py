import resource

for name in ("RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_CORE", "RLIMIT_FSIZE", "RLIMIT_STACK",
             "RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_MEMLOCK"):
    print(name, resource.getrlimit(getattr(resource, name)))
