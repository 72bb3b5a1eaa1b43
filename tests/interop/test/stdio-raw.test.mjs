// stdio on the wire, without the SDK (checklist S1-S3, L2, L8): the server's stdout carries
// nothing but JSON-RPC, garbage gets -32700 and the server keeps going, EOF ends it and its runs.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, it } from 'node:test';

import { findByMarker, markerProgram, waitUntil } from '../lib/procs.mjs';
import { LATEST, RawStdio } from '../lib/raw.mjs';
import { assertBinary, serverEnv, sleep } from '../lib/server.mjs';

function execCall(id, args, meta) {
  return {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'exec', arguments: args, ...(meta ? { _meta: meta } : {}) },
  };
}

describe('stdio wire', { timeout: 120000 }, () => {
  let raw;
  const start = () => {
    assertBinary();
    raw = new RawStdio(serverEnv({ MCP_EXEC_MAX_CONCURRENCY: 4 }));
    return raw;
  };
  afterEach(async () => {
    await raw?.kill();
    raw = undefined;
  });

  it('stdio-clean-stdout: user output never reaches the server stdout; every line is JSON-RPC', async () => {
    start();
    await sleep(300);
    assert.deepEqual(raw.lines, [], 'the server wrote to stdout before any request');
    const init = await raw.initialize();
    assert.equal(init.result?.protocolVersion, LATEST);
    const code = `import os, subprocess, sys
print("print to stdout")
print('{"jsonrpc": "2.0", "id": 999, "result": {}}')
sys.stdout.flush()
os.write(1, b"os.write to fd 1\\n")
os.write(2, b"os.write to fd 2\\n")
subprocess.run([sys.executable, "-c", "import os; os.write(1, b'child fd 1\\\\n')"])
sys.stdout.write("line\\n" * 20000)
sys.stdout.write("no newline at the end")`;
    const res = await raw.request(execCall(1, { code }, { progressToken: 'clean-1' }), 20000);
    assert.equal(res.result?.isError ?? false, false, JSON.stringify(res).slice(0, 500));
    const sc = res.result.structuredContent;
    assert.equal(
      sc.stdout,
      'print to stdout\n{"jsonrpc": "2.0", "id": 999, "result": {}}\nos.write to fd 1\nchild fd 1\n' +
        'line\n'.repeat(20000) +
        'no newline at the end',
    );
    assert.equal(sc.stderr, 'os.write to fd 2\n');
    const pong = await raw.request({ jsonrpc: '2.0', id: 2, method: 'ping' });
    assert.deepEqual(pong.result, {});
    await sleep(200);
    assert.deepEqual(raw.badLines.map((l) => l.slice(0, 200)), [], 'non-JSON lines on the server stdout');
    for (const m of raw.messages) {
      assert.equal(m.jsonrpc, '2.0', `not JSON-RPC: ${JSON.stringify(m).slice(0, 200)}`);
      assert.ok(typeof m.method === 'string' || 'result' in m || 'error' in m, JSON.stringify(m).slice(0, 200));
    }
    assert.ok(!raw.messages.some((m) => m.id === 999), 'the program\'s fake JSON-RPC line reached the client');
    // Exactly: initialize result, the call result, the ping result, plus progress notifications.
    const responses = raw.messages.filter((m) => !('method' in m)).map((m) => m.id);
    assert.deepEqual(responses, [0, 1, 2]);
  });

  it('malformed-json: garbage gets -32700 with id null, and the server keeps running', async () => {
    start();
    await raw.initialize();
    raw.writeLine('{"jsonrpc": "2.0", "id": 1, "method": ');
    const e1 = await raw.waitFor((m) => m.error?.code === -32700, 5000, 'a -32700 parse error');
    assert.equal(e1.id, null);
    assert.equal(e1.jsonrpc, '2.0');
    assert.equal(typeof e1.error.message, 'string');
    raw.writeLine('this is not json \u00ff');
    await raw.waitFor((m) => m.error?.code === -32700 && m !== e1, 5000, 'a second -32700');
    const pong = await raw.request({ jsonrpc: '2.0', id: 2, method: 'ping' });
    assert.deepEqual(pong.result, {});
    const res = await raw.request(execCall(3, { code: 'print("alive")' }), 15000);
    assert.equal(res.result?.structuredContent?.stdout, 'alive\n');
    assert.equal(raw.child.exitCode, null, 'the server exited');
  });

  it('deep-nesting: 200,000 nested brackets get -32600 and the server keeps running', async () => {
    start();
    await raw.initialize();
    const deep = '['.repeat(200000) + ']'.repeat(200000);
    raw.writeLine(`{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": ${deep}}}`);
    const e = await raw.waitFor((m) => m.error?.code === -32600, 10000, 'a -32600 for the nesting');
    assert.equal(e.id, null);
    assert.match(e.error.message, /nested deeper than 64/);
    const pong = await raw.request({ jsonrpc: '2.0', id: 2, method: 'ping' });
    assert.deepEqual(pong.result, {});
    assert.equal(raw.child.exitCode, null, 'the server exited');
  });

  it('invalid requests: unknown method -32601 with its id; a message without method gets an error', async () => {
    start();
    await raw.initialize();
    const r1 = await raw.request({ jsonrpc: '2.0', id: 'abc', method: 'no/such/method' });
    assert.equal(r1.error?.code, -32601, JSON.stringify(r1));
    assert.equal(r1.id, 'abc');
    raw.send({ jsonrpc: '2.0', id: 7 });
    const r2 = await raw.waitFor((m) => m.id === 7 || (m.id === null && m.error), 5000, 'an error for a request without method');
    assert.ok(Number.isInteger(r2.error?.code), JSON.stringify(r2));
    const r3 = await raw.request({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'exec', arguments: 'x' } });
    assert.ok(r3.error || r3.result?.isError === true, `arguments "x": ${JSON.stringify(r3)}`);
    const pong = await raw.request({ jsonrpc: '2.0', id: 9, method: 'ping' });
    assert.deepEqual(pong.result, {});
  });

  it('stateless era (2026-07-28): server/discover and an exec with no handshake, a log level per request', async () => {
    start();
    const meta = (extra = {}) => ({
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/clientInfo': { name: 'interop', version: '1' },
      ...extra,
    });
    const d = await raw.request({ jsonrpc: '2.0', id: 'd', method: 'server/discover', params: { _meta: meta() } });
    assert.deepEqual(d.result?.supportedVersions?.slice(0, 2), ['2026-07-28', '2025-11-25'], JSON.stringify(d));
    assert.ok(d.result.capabilities.tools, JSON.stringify(d));
    assert.equal(d.result.resultType, 'complete');
    assert.equal(d.result._meta['io.modelcontextprotocol/serverInfo'].name, 'mcp-exec');
    const list = await raw.request({ jsonrpc: '2.0', id: 'l', method: 'tools/list', params: { _meta: meta() } });
    assert.deepEqual(list.result.tools.map((t) => t.name), ['exec', 'session_list', 'session_close']);
    assert.ok(Number.isInteger(list.result.ttlMs) && list.result.ttlMs >= 0, JSON.stringify(list.result.ttlMs));
    assert.equal(list.result.cacheScope, 'public');
    // Output flushed, then 0.5 s, so that it goes out while the program runs.
    const code = 'import sys, time\nprint("out", flush=True)\nprint("err", file=sys.stderr, flush=True)\ntime.sleep(0.5)';
    const quiet = await raw.request(execCall('q', { code }, meta()), 20000);
    assert.equal(quiet.result?.structuredContent?.stdout, 'out\n', JSON.stringify(quiet).slice(0, 500));
    assert.equal(quiet.result.resultType, 'complete');
    const logged = await raw.request(execCall('g', { code }, meta({ 'io.modelcontextprotocol/logLevel': 'debug' })), 20000);
    assert.equal(logged.result?.structuredContent?.stderr, 'err\n', JSON.stringify(logged).slice(0, 500));
    const logs = raw.messages.filter((m) => m.method === 'notifications/message');
    assert.ok(logs.length >= 1, 'the request that set a level got its output as log messages');
    assert.ok(logs.every((m) => raw.messages.indexOf(m) > raw.messages.indexOf(quiet)), 'the request without a level got log messages');
    const ping = await raw.request({ jsonrpc: '2.0', id: 'p', method: 'ping', params: { _meta: meta() } });
    assert.equal(ping.error?.code, -32601, JSON.stringify(ping));
    const old = await raw.request({ jsonrpc: '2.0', id: 'o', method: 'tools/list', params: { _meta: meta({ 'io.modelcontextprotocol/protocolVersion': '1900-01-01' }) } });
    assert.equal(old.error?.code, -32022, JSON.stringify(old));
    assert.equal(old.error.data.requested, '1900-01-01');
    // The handshake era still works beside it, on the same connection.
    const init = await raw.initialize();
    assert.equal(init.result?.protocolVersion, LATEST);
  });

  it('notifications get no response', async () => {
    start();
    await raw.initialize();
    raw.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 12345 } });
    raw.send({ jsonrpc: '2.0', method: 'notifications/something_unknown' });
    const pong = await raw.request({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    assert.deepEqual(pong.result, {});
    await sleep(200);
    const others = raw.messages.filter((m) => m.id !== 0 && m.id !== 'p');
    assert.deepEqual(others, []);
  });

  it('MCP_EXEC_AUTH_TOKEN does not apply to stdio', async () => {
    assertBinary();
    raw = new RawStdio(serverEnv({ MCP_EXEC_AUTH_TOKEN: 'only-for-http' }));
    const init = await raw.initialize();
    assert.equal(init.result?.protocolVersion, LATEST);
    const res = await raw.request(execCall(1, { code: 'print("no token needed")' }), 15000);
    assert.equal(res.result?.structuredContent?.stdout, 'no token needed\n');
  });

  it('eof: closing stdin ends the server with status 0', async () => {
    start();
    await raw.initialize();
    raw.closeStdin();
    const e = await raw.exited(3000);
    assert.ok(e, `still running 3 s after EOF${raw.stderrTail()}`);
    assert.deepEqual(e, { code: 0, signal: null });
  });

  it('eof mid-run: closing stdin kills the running sandbox and the server exits', async () => {
    start();
    await raw.initialize();
    const marker = `mcp-exec-interop-eof-${randomUUID()}`;
    raw.send(execCall(1, { code: markerProgram(marker, 30), timeout_s: 60 }));
    await waitUntil(() => findByMarker(marker).length > 0, 10000, `the sandboxed process ${marker}`);
    raw.closeStdin();
    const e = await raw.exited(5000);
    assert.ok(e, `still running 5 s after EOF${raw.stderrTail()}`);
    await waitUntil(() => findByMarker(marker).length === 0, 3000, 'the run to die').catch((err) => {
      throw new Error(`${err.message}: still alive ${findByMarker(marker)}`);
    });
  });

  // Output sent while a run goes on (progress and log notifications, up to ~80 KiB/s) used to be
  // written to stdout by the run's own supervisor: a client that stopped reading filled the pipe,
  // the write blocked, and with it the supervisor's deadline, so the run outlived its timeout.
  it('stdio-stalled-client: a client that stops reading does not keep a run past its timeout', async () => {
    start();
    await raw.initialize();
    assert.deepEqual((await raw.request({ jsonrpc: '2.0', id: 1, method: 'logging/setLevel', params: { level: 'info' } })).result, {});
    const marker = `mcp-exec-interop-stalled-${randomUUID()}`;
    const code = `import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", ${JSON.stringify(marker)}],
                 start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
while True:
    print("y" * 500, flush=True)
    time.sleep(0.01)`;
    raw.child.stdout.pause();
    const t0 = performance.now();
    raw.send(execCall(2, { code, timeout_s: 3 }, { progressToken: 'stalled' }));
    await waitUntil(() => findByMarker(marker).length > 0, 10000, `the sandboxed process ${marker}`);
    // Still not reading: the run dies at its 3 s timeout all the same.
    await waitUntil(() => findByMarker(marker).length === 0, 7000, 'the run to die at its timeout').catch((err) => {
      throw new Error(`${err.message}: still alive ${findByMarker(marker)}${raw.stderrTail()}`);
    });
    const diedMs = performance.now() - t0;
    raw.child.stdout.resume();
    const res = await raw.waitFor((m) => m.id === 2, 10000, 'the result');
    assert.equal(res.result?.structuredContent?.timed_out, true, JSON.stringify(res).slice(0, 300));
    assert.ok(res.result.structuredContent.duration_ms < 4000, `duration_ms ${res.result.structuredContent.duration_ms}`);
    assert.ok(diedMs < 6000, `the run died ${diedMs.toFixed(0)} ms after the call`);
    assert.deepEqual(raw.badLines.map((l) => l.slice(0, 100)), [], 'a broken line on stdout');
    assert.ok(raw.messages.some((m) => m.method === 'notifications/progress'));
  });

  it('cancel on the wire: notifications/cancelled kills the run and no response follows', async () => {
    start();
    await raw.initialize();
    const marker = `mcp-exec-interop-rawcancel-${randomUUID()}`;
    raw.send(execCall(41, { code: markerProgram(marker, 30), timeout_s: 60 }));
    await waitUntil(() => findByMarker(marker).length > 0, 10000, `the sandboxed process ${marker}`);
    raw.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 41, reason: 'test' } });
    await waitUntil(() => findByMarker(marker).length === 0, 3000, 'the cancelled run to die').catch((err) => {
      throw new Error(`${err.message}: still alive ${findByMarker(marker)}${raw.stderrTail()}`);
    });
    const pong = await raw.request({ jsonrpc: '2.0', id: 42, method: 'ping' });
    assert.deepEqual(pong.result, {});
    await sleep(1000);
    assert.equal(
      raw.messages.find((m) => m.id === 41),
      undefined,
      'the server answered the cancelled request',
    );
  });
});
