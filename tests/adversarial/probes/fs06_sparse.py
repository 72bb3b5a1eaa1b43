# FS-06 (catalogue: a 100 GB sparse file): a file of PARAMS["size"] bytes that holds no data. A
# collector that read it would take that much memory, or put it in the result. mcp-exec: every
# file of the run is capped at the workspace's size (RLIMIT_FSIZE, hard), so in the default
# 64 MiB workspace the truncate fails with EFBIG and the largest sparse file is that size;
# whatever its size, the collector lists it and reads none of it past the output file cap.
import resource

path = "/tmp/outputs/huge.bin"
observe("RLIMIT_FSIZE", resource.getrlimit(resource.RLIMIT_FSIZE)[0])
with open(path, "wb") as f:
    if observe("truncate", attempt(f.truncate, PARAMS["size"])) == "EFBIG":
        observe("truncate to RLIMIT_FSIZE",
                attempt(f.truncate, resource.getrlimit(resource.RLIMIT_FSIZE)[0]))
st = os.stat(path)
observe("size", st.st_size)
observe("blocks", st.st_blocks)
report()
