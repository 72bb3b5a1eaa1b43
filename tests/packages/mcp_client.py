# A small MCP client over stdio for the packages suite (tests/packages/check): starts
# `mcp-exec serve` (newline-delimited JSON-RPC on its stdin and stdout), does the handshake
# (initialize with protocolVersion 2025-06-18, notifications/initialized), and calls tools,
# one at a time or several at once on the one connection. Standard library only.
#
#   with Server([BIN, "serve"], env) as srv:
#       result = srv.exec({"code": "print(1)", "packages": ["mcpx-a"]})
#       ids = [srv.send_exec(args) for _ in range(4)]; results = [srv.wait(i) for i in ids]
#
# A response that is a JSON-RPC error comes back as {"rpc_error": {...}}; the notifications the
# server sent (progress, log messages) are kept in `notifications`, in arrival order, each with
# the number of responses received before it (`seen_responses`).
import json
import os
import subprocess
import threading
import time

PROTOCOL = "2025-06-18"


class ServerGone(Exception):
    pass


class Server:
    def __init__(self, argv, env, stderr_path=None, init_timeout=30):
        self.stderr_file = open(stderr_path, "ab") if stderr_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr_file)
        self.lock = threading.Condition()
        self.write_lock = threading.Lock()
        self.responses = {}
        self.notifications = []
        self.response_count = 0
        self.next_id = 1
        self.closed = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        init = self.request("initialize", {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "mcp-exec-packages-check", "version": "1.0"}},
            timeout=init_timeout)
        if "rpc_error" in init:
            raise ServerGone(f"initialize: {init}")
        self.notify("notifications/initialized", {})

    def _read(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                if "id" in msg and ("result" in msg or "error" in msg):
                    self.responses[msg["id"]] = msg
                    self.response_count += 1
                elif "method" in msg:
                    msg["seen_responses"] = self.response_count
                    msg["received_at"] = time.monotonic()
                    self.notifications.append(msg)
                self.lock.notify_all()
        with self.lock:
            self.closed = True
            self.lock.notify_all()

    def _write(self, msg):
        data = (json.dumps(msg) + "\n").encode()
        with self.write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def notify(self, method, params):
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def send(self, method, params):
        with self.lock:
            rid = self.next_id
            self.next_id += 1
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def wait(self, rid, timeout=180):
        deadline = time.monotonic() + timeout
        with self.lock:
            while rid not in self.responses:
                left = deadline - time.monotonic()
                if self.closed:
                    raise ServerGone(f"the server closed its stdout before answering {rid}")
                if left <= 0:
                    raise TimeoutError(f"no answer to request {rid} in {timeout} s")
                self.lock.wait(left)
            msg = self.responses.pop(rid)
        if "error" in msg:
            return {"rpc_error": msg["error"]}
        return msg["result"]

    def request(self, method, params, timeout=180):
        return self.wait(self.send(method, params), timeout)

    def send_exec(self, arguments, progress_token=None):
        params = {"name": "exec", "arguments": arguments}
        if progress_token is not None:
            params["_meta"] = {"progressToken": progress_token}
        return self.send("tools/call", params)

    def exec(self, arguments, progress_token=None, timeout=180):
        return self.wait(self.send_exec(arguments, progress_token), timeout)

    def call_tool(self, name, arguments, timeout=60):
        return self.request("tools/call", {"name": name, "arguments": arguments}, timeout)

    def progress(self, token):
        with self.lock:
            return [n for n in self.notifications if n.get("method") == "notifications/progress"
                    and n.get("params", {}).get("progressToken") == token]

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.stderr_file is not subprocess.DEVNULL:
            self.stderr_file.close()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def text_of(result):
    """The text items of a tool result, joined."""
    return "\n".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")


def structured(result):
    return result.get("structuredContent") or {}


def brief(result, limit=1500):
    """A result for a failure's detail: short, one JSON line."""
    s = json.dumps(result)
    return s if len(s) <= limit else s[:limit] + "..."


if __name__ == "__main__":
    # A manual check: python3 mcp_client.py BIN 'code' [package...]
    import sys
    with Server([sys.argv[1], "serve"], dict(os.environ)) as srv:
        print(json.dumps(srv.exec({"code": sys.argv[2], "packages": sys.argv[3:]},
                                  progress_token="manual"), indent=1))
        print(json.dumps(srv.progress("manual"), indent=1))
