# RES-07: flood stdout and stderr at the same time, with bytes that are not UTF-8, far past the
# output cap. mcp-exec: both pipes are drained concurrently, the result is capped and marked
# truncated, invalid bytes become U+FFFD. Prints PARAMS["mib"] MiB (16 by default) on each.
import threading

chunk = (b"\xff\xfe not utf-8 \xc3\x28 " * 4096)[:65536]
total = PARAMS.get("mib", 16) << 20


def flood(fd):
    written = 0
    while written < total:
        written += os.write(fd, chunk)


threads = [threading.Thread(target=flood, args=(fd,)) for fd in (1, 2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
