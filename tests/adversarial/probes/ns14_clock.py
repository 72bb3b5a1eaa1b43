# NS-14: set the host's clock (settimeofday, clock_settime, adjtimex, clock_adjtime). Every
# attempt sets the current time, so that even one that worked would change nothing much.
# mcp-exec: all denied by seccomp (EPERM), the read-only adjtimex query included.
import time


class Timeval(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("usec", ctypes.c_long)]


class Timespec(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]


now = time.time()
refused("settimeofday", "settimeofday", ctypes.byref(Timeval(int(now), int(now % 1 * 1e6))), None)
now = time.time()
refused("clock_settime REALTIME", "clock_settime", 0, ctypes.byref(Timespec(int(now), int(now % 1 * 1e9))))
timex = (ctypes.c_uint8 * 256)()
ctypes.cast(timex, ctypes.POINTER(ctypes.c_uint32))[0] = 0x4000  # ADJ_SETOFFSET... with 0 offset
refused("adjtimex ADJ_SETOFFSET 0", "adjtimex", ctypes.byref(timex))
refused("clock_adjtime ADJ_SETOFFSET 0", "clock_adjtime", 0, ctypes.byref(timex))
query = (ctypes.c_uint8 * 256)()
observe("adjtimex query", call("adjtimex", ctypes.byref(query)))
report()
