// Runs in flight, the same cases on every transport: cancellation (U2, L9), progress (U3),
// concurrent calls, and a client that goes away mid-run (DESIGN invariant 7).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { callExec, execTool } from '../lib/exec.mjs';
import { findByMarker, markerProgram, waitUntil } from '../lib/procs.mjs';
import { TRANSPORTS, sleep, startServer } from '../lib/server.mjs';

const unknownIdErrors = (errors) => errors.map(String).filter((e) => /unknown (message ID|token)/i.test(e));

for (const transport of TRANSPORTS) {
  describe(`runtime over ${transport}`, { timeout: 180000 }, () => {
    let srv;
    let conn;
    let validate;
    const call = (args, opts) => callExec(conn, validate, args, opts);

    before(async () => {
      // MCP_EXEC_MAX_CONCURRENCY defaults to the CPU count; the concurrency case needs 4.
      srv = await startServer(transport, { env: { MCP_EXEC_MAX_CONCURRENCY: 4 } });
      conn = await srv.connect();
      ({ validate } = await execTool(conn.client));
    });
    after(async () => {
      await srv?.stop();
    });

    it('cancel: aborting a sleep(30) call kills its sandbox, sends no result, and a new call works', async () => {
      const marker = `mcp-exec-interop-cancel-${randomUUID()}`;
      const ac = new AbortController();
      const t0 = performance.now();
      const pending = call({ code: markerProgram(marker, 30), timeout_s: 60 }, { signal: ac.signal, timeout: 60000 });
      pending.catch(() => {});
      // The run really started: its marked process is visible from the host.
      await waitUntil(() => findByMarker(marker).length > 0, 10000, `the sandboxed process ${marker}`);
      await sleep(Math.max(0, 1000 - (performance.now() - t0)));
      const ta = performance.now();
      ac.abort('test cancels');
      await assert.rejects(pending);
      assert.ok(performance.now() - ta < 1000, 'the call did not reject promptly');

      const req = conn.tap.sent.find((m) => m.method === 'tools/call' && m.params?.arguments?.code?.includes(marker));
      assert.ok(req, 'the tools/call was not sent');
      const cancelled = conn.tap.sent.find(
        (m) => m.method === 'notifications/cancelled' && m.params?.requestId === req.id,
      );
      assert.ok(cancelled, 'the SDK sent no notifications/cancelled');

      // Every process of the run dies (the marked one was started in a new session).
      const tk = performance.now();
      await waitUntil(() => findByMarker(marker).length === 0, 5000, `the processes of the cancelled run to die`).catch(
        (e) => {
          throw new Error(`${e.message}: still alive ${findByMarker(marker)}${srv.logs()}`);
        },
      );
      const killMs = performance.now() - tk;

      // A new call works.
      const { sc } = await call({ code: 'print("after cancel")' });
      assert.equal(sc.stdout, 'after cancel\n');

      // No result is sent for the cancelled request (contract), even a while later.
      await sleep(1000);
      assert.equal(conn.tap.responseTo(req.id), undefined, 'the server answered the cancelled request');
      assert.deepEqual(unknownIdErrors(conn.errors), []);
      assert.ok(killMs < 3000, `the cancelled run took ${killMs.toFixed(0)} ms to die`);
    });

    it('progress: a 3 s run with a progressToken gets >= 2 increasing notifications, none after the result', async () => {
      const notes = [];
      const t0 = performance.now();
      const { sc } = await call(
        { code: 'import time\ntime.sleep(3)\nprint("done")' },
        { onprogress: (p) => notes.push({ ...p, at: performance.now() - t0 }) },
      );
      assert.equal(sc.stdout, 'done\n');
      const req = conn.tap.sent.filter((m) => m.method === 'tools/call').at(-1);
      const token = req.params?._meta?.progressToken;
      assert.ok(token !== undefined, 'the SDK set no progressToken');
      assert.ok(notes.length >= 2, `only ${notes.length} progress notifications: ${JSON.stringify(notes)}`);
      for (let i = 0; i < notes.length; i++) {
        assert.equal(typeof notes[i].progress, 'number');
        if (i > 0) assert.ok(notes[i].progress > notes[i - 1].progress, `progress not increasing: ${JSON.stringify(notes)}`);
        if (notes[i].total !== undefined) assert.ok(notes[i].progress <= notes[i].total);
      }
      // "at least once a second while the run goes on" (with slack for scheduling).
      const times = [0, ...notes.map((n) => n.at)];
      const gaps = times.slice(1).map((t, i) => t - times[i]);
      assert.ok(Math.max(...gaps) < 1600, `gaps between progress notifications: ${gaps.map((g) => g.toFixed(0))} ms`);

      // None after the result (U3), checked on the wire a while later.
      await sleep(1500);
      const idx = (pred) => conn.tap.received.findIndex(pred);
      const resultAt = idx((m) => m.id === req.id && 'result' in m);
      const lastProgressAt = conn.tap.received.findLastIndex(
        (m) => m.method === 'notifications/progress' && m.params?.progressToken === token,
      );
      assert.ok(resultAt >= 0);
      assert.ok(lastProgressAt < resultAt, 'a progress notification came after the result');
      assert.deepEqual(unknownIdErrors(conn.errors), []);
    });

    it('progress: a call without a progressToken gets no progress notifications', async () => {
      const before = conn.tap.received.length;
      const { sc } = await call({ code: 'import time\ntime.sleep(1.5)\nprint("quiet")' });
      assert.equal(sc.stdout, 'quiet\n');
      const progress = conn.tap.received.slice(before).filter((m) => m.method === 'notifications/progress');
      assert.deepEqual(progress, []);
    });

    it('concurrency: 4 calls run at once (each waits until all 4 are running)', async () => {
      // Each program starts a child carrying the marker and waits for it; the test kills the
      // children only once all four are there, so no call can finish before all four run.
      const marker = `mcpexec-interop-concurrency-${randomUUID()}`;
      const program = (i) => `import subprocess, sys
subprocess.run([sys.executable, "-c", "import time; time.sleep(60)", ${JSON.stringify(marker)}])
print(${i})`;
      const pending = [0, 1, 2, 3].map((i) => call({ code: program(i), timeout_s: 60 }, { timeout: 90000 }));
      const waiting = await waitUntil(() => {
        const pids = findByMarker(marker);
        return pids.length === 4 && pids;
      }, 30000, 'four calls running at once');
      for (const pid of waiting) process.kill(pid, 'SIGKILL');
      const results = await Promise.all(pending);
      results.forEach(({ sc }, i) => {
        assert.equal(sc.stdout, `${i}\n`, 'results went to the wrong requests');
        assert.equal(sc.exit_code, 0);
      });
    });

    it('disconnect: a client that goes away mid-run leaves no sandbox process', async () => {
      const other = await srv.connect({ name: 'goes-away' });
      await execTool(other.client);
      const marker = `mcp-exec-interop-disconnect-${randomUUID()}`;
      const pending = other.client.callTool(
        { name: 'exec', arguments: { code: markerProgram(marker, 30), timeout_s: 60 } },
        undefined,
        { timeout: 60000 },
      );
      pending.catch(() => {});
      await waitUntil(() => findByMarker(marker).length > 0, 10000, `the sandboxed process ${marker}`);
      if (transport === 'http') await other.transport.terminateSession(); // DELETE: the session ends
      await other.client.close(); // stdio: stdin EOF; sse: the event stream closes
      await waitUntil(() => findByMarker(marker).length === 0, 5000, 'the runs of the departed client to die').catch(
        (e) => {
          throw new Error(`${e.message}: still alive ${findByMarker(marker)}${srv.logs()}`);
        },
      );
      // The server (and the other client) carry on.
      const { sc } = await call({ code: 'print("still here")' });
      assert.equal(sc.stdout, 'still here\n');
    });
  });
}
