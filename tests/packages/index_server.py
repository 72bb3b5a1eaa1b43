#!/usr/bin/python3
# A PEP 503 (and PEP 691) simple index over HTTPS for the index tests of packages on demand
# (tests/packages/check_index, tests/interop/test/packages-index.test.mjs), with hostile
# behaviours chosen per project. Standard library only, plus the openssl CLI for make-certs.
#
#   index_server.py serve --root DIR --port-file F --cert CERT --key KEY
#                         [--mode MODE[,MODE...]] [--project NAME=MODE[,MODE...]]...
#                         [--credentials user:pass] [--log L] [--host 127.0.0.1]
#   index_server.py make-certs DIR
#   index_server.py proxy --port-file F --log L
#
# (`serve` is the default: `index_server.py --root DIR ...` is the same.)
#
# serve: DIR's wheels (*.whl) and sdists (*.tar.gz, *.zip) as a simple index at
# https://127.0.0.1:PORT/simple/ (the root lists every project; /simple/<normalised>/ is a
# project's page, PEP 503 HTML or, when the Accept header asks for
# application/vnd.pypi.simple.v1+json and the project has the mode `json`, PEP 691 JSON), and
# the files at /files/FILENAME. A page's links are relative (`../../files/F#sha256=HEX`), or
# absolute (`https://127.0.0.1:PORT/files/F#sha256=HEX`) for a project with the mode
# `absolute`; each has data-requires-python="&gt;=3.7" when the file is a py3 wheel. A page
# asked for under a name that is not normalised is a 404 (a client must normalise; a 301 as
# PyPI answers would be a redirect, which the server under test never follows). Binds the host
# on port 0 and writes the port to F (atomically) once listening. Threaded: a connection's TLS
# handshake and requests run in a thread of its own, so a client that hangs holds up nobody.
#
# Modes, each for every project (--mode) or for one project (--project NAME=MODES, NAME in any
# spelling; a project's own modes are added to the global ones):
#   absolute       the page's links are absolute URLs (same scheme, host and port)
#   foreign-host   the page's links are absolute URLs to https://localhost:PORT (this server, and
#                  its certificate is good for localhost: only the host's name differs)
#   foreign-scheme the page's links are absolute URLs to http://127.0.0.1:PORT (plain HTTP)
#   json           PEP 691 JSON pages when the Accept header asks for them (else HTML)
#   lying-hash     the page's #sha256= is not the file's (the sha256 of other bytes)
#   no-hash        the page's links have no #sha256= fragment
#   redirect       the page is a 302 to https://127.0.0.2:PORT/simple/NAME/ (another host)
#   redirect-file  the files are a 302 to https://127.0.0.2:PORT/files/F (another host)
#   hang           the page request is read and never answered (the connection stays open)
#   hang-file      the same for the project's files
#   huge           a file is answered with Content-Length 5 GB and zeros, at most 64 MB/s
#   huge-nolength  a file is zeros without a Content-Length (until the client hangs up), 64 MB/s
#   trickle        a file is answered with its Content-Length, then 100 bytes a second
#   auth           a request for the project (page or file) needs HTTP basic auth matching
#                  --credentials, else 401 with WWW-Authenticate (with --mode auth: every
#                  request, the root page included)
# --log L: one JSON line per request: {"time", "client", "method", "path", "host", "accept",
# "authorization" (null, "ok" or "wrong"), "user_agent", "status", "project", "modes"}.
#
# make-certs DIR: writes a test CA (ca.pem, ca.key), a server certificate for IP 127.0.0.1 and
# DNS localhost signed by it (server.pem, server.key), and a second CA that signed nothing
# (other-ca.pem), with the openssl CLI. Prints DIR.
#
# proxy: a minimal HTTP CONNECT proxy on 127.0.0.1 (port 0, written to F): for each CONNECT
# host:port it appends {"time", "client", "target", "headers": [header names]} to L, connects,
# answers 200 and tunnels both ways. Anything but CONNECT is a 405, logged with its method.
import argparse
import base64
import hashlib
import html
import http.server
import json
import os
import re
import select
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import unquote

MODES = {"absolute", "foreign-host", "foreign-scheme", "json", "lying-hash", "no-hash", "redirect", "redirect-file", "hang",
         "hang-file", "huge", "huge-nolength", "trickle", "auth"}
HUGE = 5 * 1000 * 1000 * 1000
CHUNK = 1 << 20
HUGE_RATE = 64 << 20  # bytes a second
JSON_TYPE = "application/vnd.pypi.simple.v1+json"


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def project_of(filename):
    """The normalised project name of a wheel or sdist file name; None for anything else."""
    if filename.endswith(".whl"):
        return normalize(filename.split("-")[0])
    for ext in (".tar.gz", ".zip", ".tar.bz2"):
        if filename.endswith(ext):
            stem = filename[: -len(ext)]
            if "-" in stem:
                return normalize(stem.rsplit("-", 1)[0])
    return None


def parse_modes(text):
    modes = {m.strip() for m in text.split(",") if m.strip()}
    bad = modes - MODES
    if bad:
        raise SystemExit(f"index_server: unknown mode(s) {sorted(bad)}; known: {sorted(MODES)}")
    return modes


# --- serve --------------------------------------------------------------------------------------

class Index:
    def __init__(self, root, global_modes, project_modes, credentials, log_path):
        self.root = Path(root)
        self.global_modes = global_modes
        self.project_modes = project_modes
        self.credentials = credentials
        self.log_path = log_path
        self.log_lock = threading.Lock()
        self.port = None
        self.host = None
        self.stopping = threading.Event()

    def files(self):
        """project -> [(filename, sha256)], read afresh (the directory may change)."""
        out = {}
        for f in sorted(self.root.iterdir()):
            p = project_of(f.name)
            if p and f.is_file():
                out.setdefault(p, []).append(f.name)
        return out

    def modes(self, project):
        return self.global_modes | (self.project_modes.get(project, set()) if project else set())

    def log(self, entry):
        if not self.log_path:
            return
        entry["time"] = time.time()
        with self.log_lock, open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mcpx-index/1.0"
    index: Index = None  # set on the subclass

    def log_message(self, fmt, *args):  # quiet: the JSON log says what happened
        pass

    # -- helpers
    def record(self, status, project=None, modes=()):
        auth = self.headers.get("Authorization")
        state = None
        if auth is not None:
            state = "ok" if self.auth_ok() else "wrong"
        self.index.log({"client": self.client_address[0], "method": self.command,
                        "path": self.path, "host": self.headers.get("Host"),
                        "accept": self.headers.get("Accept"), "authorization": state,
                        "user_agent": self.headers.get("User-Agent"), "status": status,
                        "project": project, "modes": sorted(modes)})

    def auth_ok(self):
        if not self.index.credentials:
            return False
        want = "Basic " + base64.b64encode(self.index.credentials.encode()).decode()
        return self.headers.get("Authorization") == want

    def send_body(self, status, body, ctype, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def not_found(self, project=None, modes=()):
        self.record(404, project, modes)
        self.send_body(404, b"not found\n", "text/plain")

    def other_host(self, path):
        return f"https://127.0.0.2:{self.index.port}{path}"

    def hang(self, project, modes):
        """Read the request, answer nothing; return when the client hangs up or we stop."""
        self.record("hang", project, modes)
        self.close_connection = True
        sock = self.connection
        while not self.index.stopping.is_set():
            try:
                r, _, _ = select.select([sock], [], [], 0.5)
                if r and not sock.recv(1):
                    return
            except (OSError, ValueError, ssl.SSLError):
                return

    def check_auth(self, project, modes):
        if "auth" not in modes or self.auth_ok():
            return True
        self.record(401, project, modes)
        self.send_body(401, b"authentication required\n", "text/plain",
                       [("WWW-Authenticate", 'Basic realm="mcpx"')])
        return False

    def answered(self, found, project, modes, redirect, hang, path):
        """What a page and a file request share, in this order: a 404 unless `found`, a 401 for
        the mode auth, a 302 to `path` on the other host for the mode `redirect`, and no answer
        for the mode `hang`. True when one of them answered (the caller is done)."""
        if not found:
            self.not_found(project, modes)
            return True
        if not self.check_auth(project, modes):
            return True
        if redirect in modes:
            self.record(302, project, modes)
            self.send_body(302, b"", "text/plain", [("Location", self.other_host(path))])
            return True
        if hang in modes:
            self.hang(project, modes)
            return True
        return False

    # -- requests
    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        files = self.index.files()
        if path in ("/simple", "/simple/"):
            modes = self.index.global_modes
            if not self.check_auth(None, modes):
                return
            return self.root_page(files, modes)
        m = re.fullmatch(r"/simple/([^/]+)/?", path)
        if m:
            name = unquote(m.group(1))
            project = normalize(name)
            modes = self.index.modes(project)
            if self.answered(name == project and project in files, project, modes,
                             "redirect", "hang", f"/simple/{project}/"):
                return
            return self.project_page(project, files[project], modes)
        m = re.fullmatch(r"/files/([^/]+)", path)
        if m:
            filename = unquote(m.group(1))
            project = project_of(filename)
            modes = self.index.modes(project)
            if self.answered(project in files and filename in files[project], project, modes,
                             "redirect-file", "hang-file", f"/files/{filename}"):
                return
            if "huge" in modes or "huge-nolength" in modes:
                return self.huge(project, modes, "huge" in modes)
            data = (self.index.root / filename).read_bytes()
            if "trickle" in modes:
                return self.trickle(project, modes, data)
            self.record(200, project, modes)
            return self.send_body(200, data, "application/octet-stream")
        self.not_found()

    def root_page(self, files, modes):
        if "json" in modes and self.wants_json():
            body = json.dumps({"meta": {"api-version": "1.0"},
                               "projects": [{"name": p} for p in sorted(files)]}).encode()
            self.record(200, None, modes)
            return self.send_body(200, body, JSON_TYPE)
        links = "".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(files))
        body = ("<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" "
                "content=\"1.0\"><title>Simple index</title></head><body>\n"
                f"{links}</body></html>\n").encode()
        self.record(200, None, modes)
        self.send_body(200, body, "text/html; charset=utf-8")

    def wants_json(self):
        return JSON_TYPE in (self.headers.get("Accept") or "")

    def file_entries(self, project, names, modes):
        out = []
        for filename in names:
            digest = hashlib.sha256((self.index.root / filename).read_bytes()).hexdigest()
            if "lying-hash" in modes:
                digest = hashlib.sha256(b"not " + digest.encode()).hexdigest()
            if "foreign-host" in modes:
                url = f"https://localhost:{self.index.port}/files/{filename}"
            elif "foreign-scheme" in modes:
                url = f"http://{self.index.host}:{self.index.port}/files/{filename}"
            elif "absolute" in modes:
                url = f"https://{self.index.host}:{self.index.port}/files/{filename}"
            else:
                url = f"../../files/{filename}"
            rp = ">=3.7" if filename.endswith(".whl") and "-py3-" in filename else None
            out.append((filename, url, None if "no-hash" in modes else digest, rp))
        return out

    def project_page(self, project, names, modes):
        entries = self.file_entries(project, names, modes)
        if "json" in modes and self.wants_json():
            body = json.dumps({
                "meta": {"api-version": "1.0"}, "name": project,
                "files": [{"filename": f, "url": u, "hashes": {"sha256": d} if d else {},
                           **({"requires-python": rp} if rp else {})}
                          for f, u, d, rp in entries]}).encode()
            self.record(200, project, modes | {"served-json"})
            return self.send_body(200, body, JSON_TYPE)
        links = []
        for f, u, d, rp in entries:
            href = u + (f"#sha256={d}" if d else "")
            attr = f' data-requires-python="{html.escape(rp)}"' if rp else ""
            links.append(f'<a href="{html.escape(href)}"{attr}>{html.escape(f)}</a><br/>\n')
        body = ("<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" "
                f"content=\"1.0\"><title>Links for {project}</title></head><body>\n"
                f"<h1>Links for {project}</h1>\n{''.join(links)}</body></html>\n").encode()
        self.record(200, project, modes)
        self.send_body(200, body, "text/html; charset=utf-8")

    def huge(self, project, modes, with_length):
        self.record("huge", project, modes)
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if with_length:
            self.send_header("Content-Length", str(HUGE))
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        zeros = bytes(CHUNK)
        sent, t0 = 0, time.monotonic()
        try:
            while sent < HUGE and not self.index.stopping.is_set():
                self.wfile.write(zeros)
                sent += CHUNK
                ahead = sent / HUGE_RATE - (time.monotonic() - t0)
                if ahead > 0:
                    time.sleep(ahead)
        except (OSError, ssl.SSLError):
            pass
        self.index.log({"path": self.path, "project": project, "huge_sent": sent})

    def trickle(self, project, modes, data):
        self.record("trickle", project, modes)
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            for i in range(0, len(data), 100):
                if self.index.stopping.is_set():
                    return
                self.wfile.write(data[i:i + 100])
                self.wfile.flush()
                time.sleep(1)
        except (OSError, ssl.SSLError):
            pass


class TLSServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, addr, handler, context):
        self.context = context
        super().__init__(addr, handler)

    def finish_request(self, request, client_address):
        # The handshake in the connection's thread: a client that never speaks holds up nobody.
        request.settimeout(120)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            return
        tls.settimeout(None)
        try:
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def handle_error(self, request, client_address):
        pass


def write_port(port_file, port):
    tmp = Path(str(port_file) + ".tmp")
    tmp.write_text(f"{port}\n")
    os.replace(tmp, port_file)


def serve(args):
    project_modes = {}
    for item in args.project or []:
        name, _, modes = item.partition("=")
        project_modes.setdefault(normalize(name), set()).update(parse_modes(modes))
    index = Index(args.root, parse_modes(args.mode or ""), project_modes, args.credentials,
                  args.log)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    handler = type("BoundHandler", (Handler,), {"index": index})
    server = TLSServer((args.host, 0), handler, ctx)
    index.host, index.port = args.host, server.server_address[1]
    write_port(args.port_file, index.port)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        index.stopping.set()


# --- make-certs ---------------------------------------------------------------------------------

def make_certs(directory):
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)

    def ossl(*argv):
        subprocess.run(["openssl", *argv], check=True, cwd=d, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for name, cn in (("ca", "mcp-exec test CA"), ("other-ca", "mcp-exec other test CA")):
        ossl("req", "-x509", *ec, "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "30",
             "-subj", f"/CN={cn}", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    ossl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    (d / "server.ext").write_text(
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    ossl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", "server.pem", "-days", "30", "-sha256",
         "-extfile", "server.ext")
    for f in d.iterdir():
        f.chmod(0o600 if f.suffix == ".key" else 0o644)
    print(d)


# --- proxy --------------------------------------------------------------------------------------

class ProxyHandler(socketserver.BaseRequestHandler):
    log_path = None
    log_lock = threading.Lock()

    def log(self, entry):
        entry["time"] = time.time()
        entry["client"] = self.client_address[0]
        with self.log_lock, open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def handle(self):
        sock = self.request
        sock.settimeout(30)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = sock.recv(4096)
                if not chunk:
                    return
                head += chunk
        except OSError:
            return
        head, _, rest = head.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split()
        headers = [l.split(":", 1)[0] for l in lines[1:] if ":" in l]
        if len(parts) < 2 or parts[0].upper() != "CONNECT":
            self.log({"method": parts[0] if parts else "", "target": parts[1] if len(parts) > 1
                      else "", "headers": headers})
            sock.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n"
                         b"Connection: close\r\n\r\n")
            return
        target = parts[1]
        self.log({"method": "CONNECT", "target": target, "headers": headers})
        host, _, port = target.rpartition(":")
        try:
            upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
        except (OSError, ValueError):
            sock.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if rest:
            upstream.sendall(rest)
        sock.settimeout(None)
        upstream.settimeout(None)
        socks = [sock, upstream]
        try:
            while True:
                r, _, _ = select.select(socks, [], [], 300)
                if not r:
                    return
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        return
                    (upstream if s is sock else sock).sendall(data)
        except OSError:
            return
        finally:
            upstream.close()


class ThreadingTCP(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def proxy(args):
    handler = type("BoundProxy", (ProxyHandler,), {"log_path": args.log})
    Path(args.log).touch()
    server = ThreadingTCP(("127.0.0.1", 0), handler)
    write_port(args.port_file, server.server_address[1])
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


# --- main ---------------------------------------------------------------------------------------

def main(argv):
    if argv and argv[0] == "make-certs":
        if len(argv) != 2:
            raise SystemExit("usage: index_server.py make-certs DIR")
        return make_certs(argv[1])
    if argv and argv[0] == "proxy":
        p = argparse.ArgumentParser(prog="index_server.py proxy")
        p.add_argument("--port-file", required=True)
        p.add_argument("--log", required=True)
        return proxy(p.parse_args(argv[1:]))
    if argv and argv[0] == "serve":
        argv = argv[1:]
    p = argparse.ArgumentParser(prog="index_server.py")
    p.add_argument("--root", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--mode", help="modes for every project, comma-separated")
    p.add_argument("--project", action="append", metavar="NAME=MODES",
                   help="modes for one project, comma-separated (repeatable)")
    p.add_argument("--credentials", metavar="USER:PASS")
    p.add_argument("--log")
    p.add_argument("--host", default="127.0.0.1")
    serve(p.parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
