# personality(2) beyond the values Docker allows: READ_IMPLIES_EXEC (all readable memory
# executable), ADDR_NO_RANDOMIZE (no ASLR for what the program runs), MMAP_PAGE_ZERO.
# mcp-exec: only PER_LINUX, PER_LINUX32, UNAME26 and the query pass the filter (EPERM
# otherwise). The original persona is restored whenever a change went through.
QUERY = 0xFFFFFFFF
original, err = raw("personality", QUERY)
observe("query", err or "ok")
for label, persona in (("READ_IMPLIES_EXEC", 0x0400000), ("ADDR_NO_RANDOMIZE", 0x0040000),
                       ("MMAP_PAGE_ZERO", 0x0100000)):
    ret, err = raw("personality", persona)
    must_fail(label, err or "ok")
    if err is None:
        raw("personality", original)
observe("PER_LINUX", call("personality", 0))
report()
