# NS-12: a syscall through the i386 ABI (int 0x80), whose numbers differ from x86_64's, from
# machine code the program maps itself. mcp-exec: the filter kills the process (SIGSYS) for a
# syscall of an architecture it was not built for. Prints only if it survived.
import mmap

if platform.machine() != "x86_64":
    observe("int 0x80 getpid", "not x86_64")
else:
    code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])  # mov eax, 20 (getpid); int 0x80; ret
    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    fn = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
    ret = fn()
    result = observe("int 0x80 getpid", "ok" if ret == os.getpid() else errname(-ret) if ret < 0 else ret)
    if result == "ok":
        escaped("a syscall through the i386 ABI (int 0x80)")
report()
