# FS-10 (CVE-2022-27649, CVE-2022-24769: inheritable capabilities): every capability set empty,
# no_new_privs, a seccomp filter; raising a capability back fails (EPERM).
fields = observe("status", status_fields("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
                                         "NoNewPrivs", "Seccomp", "Seccomp_filters"))
for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
    if int(fields[name], 16) != 0:
        escaped("%s is %s" % (name, fields[name]))


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


header = CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
data = (CapData * 2)(CapData(0xffffffff, 0xffffffff, 0xffffffff),
                     CapData(0xffffffff, 0xffffffff, 0xffffffff))
refused("capset all", "capset", ctypes.byref(header), data)
PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN = 47, 2, 21
ctypes.set_errno(0)
rc = libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0)
must_fail("raise ambient CAP_SYS_ADMIN", "ok" if rc == 0 else errname(ctypes.get_errno()))
ctypes.set_errno(0)
rc = libc.prctl(38, 0, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS back to 0
must_fail("clear no_new_privs", "ok" if rc == 0 else errname(ctypes.get_errno()), also=("EINVAL",))
report()
