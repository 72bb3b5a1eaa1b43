"""Helpers shared by tools/soak and tools/faults: start `mcp-exec serve` over Streamable HTTP on
a free loopback port with a token file, talk to it on keep-alive connections, and read what it
holds (descriptors, threads, memory, mounts, processes, run cgroups) from /proc and
/sys/fs/cgroup. Standard library only; only loopback is used.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import tempfile
import time

PROTOCOL_VERSION = '2025-11-25'


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Client:
    """One keep-alive connection to /mcp in a given session."""

    def __init__(self, port, token, session=None, timeout=120):
        self.conn = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout)
        self.token = token
        self.session = session

    def post(self, message):
        """Returns (HTTP status, Mcp-Session-Id, the JSON-RPC reply or None)."""
        headers = {'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream',
                   'X-MCP-AUTH': self.token}
        if self.session:
            headers['Mcp-Session-Id'] = self.session
            headers['MCP-Protocol-Version'] = PROTOCOL_VERSION
        self.conn.request('POST', '/mcp', json.dumps(message), headers)
        res = self.conn.getresponse()
        body = res.read().decode()
        if res.getheader('Content-Type', '').startswith('text/event-stream'):
            data = [line[6:] for line in body.splitlines() if line.startswith('data: ')]
            body = data[-1] if data else ''
        try:
            reply = json.loads(body) if body else None
        except ValueError:
            reply = {'raw': body[:200]}
        return res.status, res.getheader('Mcp-Session-Id'), reply

    def exec(self, request_id, code, timeout_s=None):
        """A tools/call of exec; returns (HTTP status, the call's result or the whole reply)."""
        arguments = {'code': code}
        if timeout_s is not None:
            arguments['timeout_s'] = timeout_s
        status, _, reply = self.post({'jsonrpc': '2.0', 'id': request_id, 'method': 'tools/call',
                                      'params': {'name': 'exec', 'arguments': arguments}})
        return status, ((reply or {}).get('result') or reply or {})

    def close(self):
        self.conn.close()


def initialize(port, token, name='soak', timeout=120):
    """A Client in a new, initialized session."""
    c = Client(port, token, timeout=timeout)
    status, session, _ = c.post({'jsonrpc': '2.0', 'id': 0, 'method': 'initialize', 'params': {
        'protocolVersion': PROTOCOL_VERSION, 'capabilities': {}, 'clientInfo': {'name': name, 'version': '1'}}})
    if status != 200 or not session:
        c.close()
        raise RuntimeError(f'initialize answered {status}')
    c.session = session
    c.post({'jsonrpc': '2.0', 'method': 'notifications/initialized'})
    return c


def get(port, path, timeout=10):
    """A GET without a token (e.g. /healthz); returns (status, body)."""
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout)
    try:
        conn.request('GET', path)
        res = conn.getresponse()
        return res.status, res.read().decode(errors='replace')
    finally:
        conn.close()


class Server:
    """`mcp-exec serve --transport http` on a free loopback port, with a token file.

    env: extra variables; preexec_fn: passed to Popen (e.g. to lower RLIMIT_NOFILE).
    """

    def __init__(self, binary, rootfs=None, env=None, preexec_fn=None, name='mcp-exec', port=None):
        self.name = name
        self.token = os.urandom(16).hex()
        self.tokdir = tempfile.TemporaryDirectory(prefix=f'mcp-exec-{name}-')
        token_file = os.path.join(self.tokdir.name, 'token')
        with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), 'w') as f:
            f.write(self.token)
        self.port = port or free_port()
        full_env = dict(os.environ, MCP_EXEC_TRANSPORT='http', MCP_EXEC_ADDR=f'127.0.0.1:{self.port}',
                        MCP_EXEC_AUTH_TOKEN_FILE=token_file)
        full_env.pop('MCP_EXEC_AUTH_TOKEN', None)
        if rootfs:
            full_env['MCP_EXEC_ROOTFS'] = rootfs
        full_env.update(env or {})
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([binary, 'serve'], env=full_env, stdout=subprocess.DEVNULL,
                                     stderr=self.log, preexec_fn=preexec_fn)
        self.pid = self.proc.pid

    def wait_ready(self, seconds=30):
        """Waits (bounded) until the port accepts; raises RuntimeError with the log's tail if not."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                socket.create_connection(('127.0.0.1', self.port), timeout=1).close()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f'the server did not start:\n{self.log_tail()}')
                time.sleep(0.05)

    def log_tail(self, n=2000):
        self.log.seek(0)
        return self.log.read().decode(errors='replace')[-n:]

    def client(self, name='client', timeout=120):
        return initialize(self.port, self.token, name, timeout)

    def stop(self, seconds=30):
        """SIGTERM, then SIGKILL after `seconds`; returns (exit status, seconds taken, killed)."""
        if self.proc.poll() is not None:
            return self.proc.returncode, 0.0, False
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=seconds)
            return self.proc.returncode, time.monotonic() - t0, False
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return self.proc.returncode, time.monotonic() - t0, True


def descendants(pid):
    children = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def processes_with(marker):
    """Pids of the host's live processes whose command line contains `marker`."""
    needle = marker.encode()
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                if needle in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def run_cgroup_dirs(pid):
    """The server's run cgroups (named run-<server pid>-...) in every hierarchy."""
    prefix = f'run-{pid}-'
    found = []
    for root, dirs, _ in os.walk('/sys/fs/cgroup'):
        found.extend(os.path.join(root, d) for d in dirs if d.startswith(prefix))
        if root.count('/') > 6:
            dirs[:] = []
    return found


def run_cgroups(pid):
    return len(run_cgroup_dirs(pid))


def fd_count(pid):
    return len(os.listdir(f'/proc/{pid}/fd'))


def snapshot(pid):
    status = {}
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            key, _, value = line.partition(':')
            status[key] = value.strip()
    with open(f'/proc/{pid}/mountinfo') as f:
        mounts = sum(1 for _ in f)
    return {
        'fds': fd_count(pid),
        'threads': int(status['Threads']),
        'rss_mib': int(status['VmRSS'].split()[0]) / 1024,
        'mounts': mounts,
        'processes': len(descendants(pid)),
        'run_cgroups': run_cgroups(pid),
    }


def wait_until(predicate, seconds, step=0.05):
    """Polls predicate() (bounded); returns (its last value, seconds waited)."""
    t0 = time.monotonic()
    while True:
        value = predicate()
        if value or time.monotonic() - t0 > seconds:
            return value, time.monotonic() - t0
        time.sleep(step)
