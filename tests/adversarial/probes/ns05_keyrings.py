# NS-05 (CVE-2016-0728): the kernel keyrings are not namespaced: keys persist across runs of
# the same host uid and are a kernel attack surface. mcp-exec: keyctl, add_key and
# request_key are denied by seccomp (EPERM); /proc/keys is masked (reads empty).
KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, KEY_SPEC_PROCESS_KEYRING = 0, -3, -2
refused("keyctl get session keyring", "keyctl", KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1)
refused("add_key user", "add_key", b"user", b"mcpexec-probe", b"x", 1, KEY_SPEC_PROCESS_KEYRING)
refused("request_key", "request_key", b"user", b"mcpexec-probe-absent", None, 0, also=("ENOKEY",))
observe("/proc/keys bytes", value(lambda: len(open("/proc/keys", "rb").read())))
report()
