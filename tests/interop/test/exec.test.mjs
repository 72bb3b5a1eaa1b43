// The `exec` tool contract, the same cases on every transport (checklist section 7, T3-T6).
// Every successful call is checked by lib/exec.mjs: Ajv against outputSchema, the contract's
// fields and types, and the text item holding the same JSON.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';

import { callExec, execTool, expectToolError, utf8Bytes } from '../lib/exec.mjs';
import { TRANSPORTS, startServer } from '../lib/server.mjs';

const MIB = 1024 * 1024;

for (const transport of TRANSPORTS) {
  describe(`exec over ${transport}`, { timeout: 180000 }, () => {
    let srv;
    let conn;
    let validate;
    const call = (args, opts) => callExec(conn, validate, args, opts);

    before(async () => {
      srv = await startServer(transport, { env: { MCP_EXEC_MAX_CONCURRENCY: 4 } });
      conn = await srv.connect();
      ({ validate } = await execTool(conn.client));
    });
    after(async () => {
      await srv?.stop();
    });

    it('exec-print: stdout, exit 0, isError false', async () => {
      const { result, sc } = await call({ code: 'print("hello from the sandbox")' });
      assert.equal(result.isError ?? false, false);
      assert.equal(sc.stdout, 'hello from the sandbox\n');
      assert.equal(sc.stderr, '');
      assert.equal(sc.exit_code, 0);
      assert.equal(sc.truncated, false);
      assert.equal(sc.timed_out, false);
      assert.ok(!('signal' in sc), 'signal on a normal exit');
    });

    it('exec-stderr: stderr and stdout kept apart', async () => {
      const { sc } = await call({
        code: 'import sys\nprint("out")\nprint("err", file=sys.stderr)\nsys.stderr.write("more\\n")',
      });
      assert.equal(sc.stdout, 'out\n');
      assert.equal(sc.stderr, 'err\nmore\n');
      assert.equal(sc.exit_code, 0);
    });

    it('exec-stderr: an uncaught exception is exit 1 with the traceback, not a tool error', async () => {
      const { result, sc } = await call({ code: 'raise ValueError("boom")' });
      assert.equal(result.isError ?? false, false);
      assert.equal(sc.exit_code, 1);
      assert.match(sc.stderr, /Traceback[\s\S]*ValueError: boom/);
    });

    it('exec-unicode: non-ASCII text round-trips in code, stdout, stderr and stdin', async () => {
      const text = 'héllo wörld — Привет, 你好, 🌍';
      const { sc } = await call({
        code: `import sys\nprint(${JSON.stringify(text)})\nprint(sys.stdin.read()[::-1], file=sys.stderr)`,
        stdin: 'абв✓',
      });
      assert.equal(sc.stdout, `${text}\n`);
      assert.equal(sc.stderr, '✓вба\n');
    });

    it('exec-unicode: invalid UTF-8 output becomes U+FFFD, the result stays valid JSON', async () => {
      const { sc } = await call({ code: 'import os\nos.write(1, b"a\\xffb\\n")' });
      assert.equal(sc.stdout, 'a\uFFFDb\n');
    });

    it('exit-code: sys.exit(3) is exit_code 3 and isError false', async () => {
      const { result, sc } = await call({ code: 'import sys\nprint("bye")\nsys.exit(3)' });
      assert.equal(result.isError ?? false, false);
      assert.equal(sc.exit_code, 3);
      assert.equal(sc.stdout, 'bye\n');
      assert.equal(sc.timed_out, false);
    });

    it('exit-signal: a program killed by SIGKILL reports signal SIGKILL', async () => {
      const { result, sc } = await call({
        code: 'import os, signal\nprint("x", flush=True)\nos.kill(os.getpid(), signal.SIGKILL)',
      });
      assert.equal(result.isError ?? false, false);
      assert.equal(sc.signal, 'SIGKILL');
      assert.notEqual(sc.exit_code, 0);
      assert.equal(sc.stdout, 'x\n');
      assert.equal(sc.timed_out, false);
    });

    it('stdin: the program reads the given stdin', async () => {
      const { sc } = await call({
        code: 'import sys\ndata = sys.stdin.read()\nprint(len(data), data.upper())',
        stdin: 'hello\nworld',
      });
      assert.equal(sc.stdout, '11 HELLO\nWORLD\n');
      assert.equal(sc.exit_code, 0);
    });

    it('stdin: without stdin the program reads EOF at once', async () => {
      const { sc, elapsedMs } = await call({ code: 'import sys\nprint(repr(sys.stdin.read()))', timeout_s: 10 });
      assert.equal(sc.stdout, "''\n");
      assert.equal(sc.timed_out, false);
      assert.ok(elapsedMs < 5000, `took ${elapsedMs} ms`);
    });

    it('stdin: 1 MiB exactly (the cap) is accepted', async () => {
      const { sc } = await call({
        code: 'import sys\nd = sys.stdin.buffer.read()\nprint(len(d), d.count(b"z"))',
        stdin: 'z'.repeat(MIB),
      });
      assert.equal(sc.stdout, `${MIB} ${MIB}\n`);
    });

    it('timeout: timeout_s 1 with sleep 5 is timed_out true, exit_code -1, isError false', async () => {
      const { result, sc, elapsedMs } = await call({
        code: 'import time\nprint("started", flush=True)\ntime.sleep(5)\nprint("finished")',
        timeout_s: 1,
      });
      assert.equal(result.isError ?? false, false);
      assert.equal(sc.timed_out, true);
      assert.equal(sc.exit_code, -1);
      assert.equal(sc.stdout, 'started\n', 'output before the deadline is kept, nothing after');
      assert.ok(sc.duration_ms >= 900 && sc.duration_ms < 3000, `duration_ms ${sc.duration_ms}`);
      assert.ok(elapsedMs < 4000, `the call took ${elapsedMs.toFixed(0)} ms`);
    });

    it('output-truncation: 3 MB of output is cut to 1 MiB and truncated true', async () => {
      const { sc } = await call({
        code: 'import sys\nfor _ in range(3):\n    sys.stdout.write("x" * 1000000)\nsys.stdout.flush()\nsys.stderr.write("e" * 100)',
        timeout_s: 30,
      });
      assert.equal(sc.truncated, true);
      assert.equal(sc.timed_out, false);
      const total = utf8Bytes(sc.stdout) + utf8Bytes(sc.stderr);
      assert.ok(total <= MIB + 64, `kept ${total} bytes, cap is ${MIB}`);
      assert.ok(total >= MIB - 64, `kept only ${total} bytes of the first MiB`);
      assert.match(sc.stdout.slice(0, 1000), /^x+$/);
    });

    it('output under the cap is complete and truncated false', async () => {
      const { sc } = await call({ code: 'import sys\nsys.stdout.write("o" * 500000)' });
      assert.equal(sc.truncated, false);
      assert.equal(sc.stdout.length, 500000);
    });

    it('empty-code: isError true with a message', async () => {
      const msg = await expectToolError(conn, { code: '' });
      assert.match(msg, /code|empty/i);
    });

    it('stdin-too-large: 1 MiB + 1 byte of stdin is isError true', async () => {
      const msg = await expectToolError(conn, { code: 'print(1)', stdin: 'a'.repeat(MIB + 1) });
      assert.match(msg, /stdin/i);
    });

    it('wrong types: code 42, missing code, timeout_s "x" are tool errors', async () => {
      await expectToolError(conn, { code: 42 });
      await expectToolError(conn, { stdin: 'no code' });
      await expectToolError(conn, { code: 'print(1)', timeout_s: 'x' });
      await expectToolError(conn, { code: 'print(1)', stdin: 7 });
      // The session is still usable.
      const { sc } = await call({ code: 'print(2)' });
      assert.equal(sc.stdout, '2\n');
    });

    it('ephemeral-workspace: a file written by one call is absent in the next', async () => {
      const name = `marker-${randomUUID()}.txt`;
      const writer = `import os, pathlib
p = pathlib.Path(${JSON.stringify(name)})
p.write_text("secret")
h = pathlib.Path.home() / ${JSON.stringify(name)}
h.write_text("secret")
print(p.resolve().exists(), h.exists())`;
      const first = await call({ code: writer });
      assert.equal(first.sc.stdout, 'True True\n', first.sc.stderr);
      const reader = `import pathlib
print(pathlib.Path(${JSON.stringify(name)}).exists(), (pathlib.Path.home() / ${JSON.stringify(name)}).exists())`;
      const second = await call({ code: reader });
      assert.equal(second.sc.stdout, 'False False\n');
    });

    it('imports: numpy, pandas, matplotlib, yaml, jinja2, PIL work', async () => {
      const { sc } = await call({
        code: `import io, numpy as np, pandas as pd, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt, yaml, jinja2
from PIL import Image
print(int(np.arange(5).sum()))
print(int(pd.DataFrame({"a": [1, 2, 3]})["a"].sum()))
print(yaml.safe_load("a: [1, 2]"))
print(jinja2.Template("Hello {{ n }}!").render(n="MCP"))
print(Image.new("RGB", (3, 2)).size)
fig, ax = plt.subplots(); ax.plot([1, 2, 3]); b = io.BytesIO(); fig.savefig(b, format="png")
print(b.getvalue()[:8] == b"\\x89PNG\\r\\n\\x1a\\n")`,
        timeout_s: 60,
      });
      assert.equal(sc.exit_code, 0, sc.stderr);
      assert.equal(sc.stdout, "10\n6\n{'a': [1, 2]}\nHello MCP!\n(3, 2)\nTrue\n");
    });

    it("network-denied: the sandbox cannot reach the server's own port, nor the outside", async () => {
      let port = srv.port;
      let listener;
      if (transport === 'stdio') {
        // stdio has no port of its own: open one on the host's loopback.
        listener = net.createServer((s) => {
          s.on('error', () => {});
          s.end();
        });
        await new Promise((r) => listener.listen(0, '127.0.0.1', r));
        port = listener.address().port;
      }
      try {
        // The port is reachable from the host (so a refusal inside proves isolation).
        await new Promise((resolve, reject) => {
          const s = net.connect(port, '127.0.0.1', () => {
            s.on('error', () => {});
            s.end();
            resolve();
          });
          s.on('error', reject);
        });
        const { sc } = await call({
          code: `import socket
def probe(addr):
    try:
        socket.create_connection(addr, timeout=3).close()
        return "CONNECTED"
    except ConnectionRefusedError:
        return "REFUSED"
    except OSError as e:
        return "OSERROR"
print(probe(("127.0.0.1", ${port})))
print(probe(("1.1.1.1", 53)))
try:
    socket.getaddrinfo("registry.npmjs.org", 443)
    print("RESOLVED")
except OSError:
    print("NO-DNS")`,
          timeout_s: 20,
        });
        assert.equal(sc.stdout, 'REFUSED\nOSERROR\nNO-DNS\n', sc.stderr);
      } finally {
        listener?.close();
      }
    });

    it('timeout_s is clamped: 0 runs with at least one second', async () => {
      const { sc } = await call({ code: 'import time\ntime.sleep(0.3)\nprint("ok")', timeout_s: 0 });
      assert.equal(sc.timed_out, false);
      assert.equal(sc.stdout, 'ok\n');
    });
  });
}
