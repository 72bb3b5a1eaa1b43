// The same tool set and the same results on all three transports (the contract: "identical tool
// set everywhere").
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { callExec, execTool, expectToolError } from '../lib/exec.mjs';
import { TRANSPORTS, startServer } from '../lib/server.mjs';

describe('same results on stdio, http and sse', { timeout: 120000 }, () => {
  const servers = {};
  const conns = {};
  const validators = {};
  const startErrors = {};

  before(async () => {
    // Start what can be started; a transport that cannot start fails the cases, with its reason.
    for (const t of TRANSPORTS) {
      try {
        servers[t] = await startServer(t);
        conns[t] = await servers[t].connect();
        validators[t] = (await execTool(conns[t].client)).validate;
      } catch (e) {
        startErrors[t] = e;
      }
    }
  });
  after(async () => {
    const errors = [];
    for (const t of TRANSPORTS) await servers[t]?.stop().catch((e) => errors.push(e));
    if (errors.length) throw errors[0];
  });

  const ready = () => {
    for (const t of TRANSPORTS) if (startErrors[t]) throw new Error(`${t}: ${startErrors[t].message}`);
  };

  it('tools/list is identical', async () => {
    ready();
    const lists = {};
    for (const t of TRANSPORTS) lists[t] = (await conns[t].client.listTools()).tools;
    assert.deepEqual(lists.stdio.map((t) => t.name), ['exec', 'session_list', 'session_close']);
    assert.deepEqual(lists.http, lists.stdio, 'http differs from stdio');
    assert.deepEqual(lists.sse, lists.stdio, 'sse differs from stdio');
  });

  it('one deterministic program gives the same structuredContent (minus duration_ms)', async () => {
    ready();
    const args = {
      code: `import json, sys
data = sys.stdin.read()
print(json.dumps({"n": len(data), "upper": data.upper(), "argv": sys.argv[1:]}, sort_keys=True))
print("to stderr: é", file=sys.stderr)
sys.exit(5)`,
      stdin: 'same on every transport: é ✓',
      timeout_s: 10,
    };
    const out = {};
    for (const t of TRANSPORTS) {
      const { sc } = await callExec(conns[t], validators[t], args);
      const { duration_ms: _d, memory_peak_bytes: _m, cpu_time_ms: _c, limits_backend: _b, ...rest } = sc;
      out[t] = rest;
    }
    assert.deepEqual(out.stdio, {
      stdout: '{"argv": [], "n": 28, "upper": "SAME ON EVERY TRANSPORT: \\u00c9 \\u2713"}\n',
      stderr: 'to stderr: é\n',
      exit_code: 5,
      truncated: false,
      timed_out: false,
      oom_killed: false,
      files: [],
      environment: 'default',
    });
    assert.deepEqual(out.http, out.stdio, 'http differs from stdio');
    assert.deepEqual(out.sse, out.stdio, 'sse differs from stdio');
  });

  it('a timed-out run gives the same result', async () => {
    ready();
    const out = {};
    for (const t of TRANSPORTS) {
      const { sc } = await callExec(conns[t], validators[t], {
        code: 'import time\nprint("a", flush=True)\ntime.sleep(10)',
        timeout_s: 1,
      });
      const { duration_ms: _d, memory_peak_bytes: _m, cpu_time_ms: _c, limits_backend: _b, ...rest } = sc;
      out[t] = rest;
    }
    assert.equal(out.stdio.timed_out, true);
    assert.equal(out.stdio.exit_code, -1);
    assert.deepEqual(out.http, out.stdio, 'http differs from stdio');
    assert.deepEqual(out.sse, out.stdio, 'sse differs from stdio');
  });

  it('empty code is the same tool error', async () => {
    ready();
    const msgs = {};
    for (const t of TRANSPORTS) msgs[t] = await expectToolError(conns[t], { code: '' });
    assert.equal(msgs.http, msgs.stdio);
    assert.equal(msgs.sse, msgs.stdio);
  });
});
