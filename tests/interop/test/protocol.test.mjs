// Lifecycle and the protocol surface, the same cases on every transport (checklist L1-L7, U1,
// T1, T2, T5): initialize, version negotiation, ping, tools/list, unknown tool.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { callExec, execTool } from '../lib/exec.mjs';
import { LATEST, SUPPORTED, rawInitialize } from '../lib/raw.mjs';
import { TRANSPORTS, startServer } from '../lib/server.mjs';

for (const transport of TRANSPORTS) {
  describe(`protocol over ${transport}`, { timeout: 120000 }, () => {
    let srv;
    let conn;
    let validate;

    before(async () => {
      srv = await startServer(transport, { env: { MCP_EXEC_MAX_CONCURRENCY: 4 } });
      conn = await srv.connect();
    });
    after(async () => {
      await srv?.stop();
    });

    it('initialize: serverInfo mcp-exec, protocolVersion, capabilities.tools, initialized sent', async () => {
      const info = conn.client.getServerVersion();
      assert.equal(info?.name, 'mcp-exec');
      assert.equal(typeof info.version, 'string');
      assert.ok(info.version.length > 0, 'serverInfo.version is empty');
      const caps = conn.client.getServerCapabilities();
      assert.ok(caps?.tools && typeof caps.tools === 'object', `capabilities.tools missing: ${JSON.stringify(caps)}`);
      const init = conn.tap.sent.find((m) => m.method === 'initialize');
      assert.ok(init, 'the SDK sent no initialize');
      const res = conn.tap.responseTo(init.id);
      assert.ok(res?.result, `initialize answered ${JSON.stringify(res)}`);
      assert.equal(res.jsonrpc, '2.0');
      assert.ok(SUPPORTED.includes(res.result.protocolVersion), `protocolVersion ${res.result.protocolVersion}`);
      // L6: the client's notifications/initialized followed the result.
      const initIndex = conn.tap.sent.indexOf(init);
      assert.ok(
        conn.tap.sent.slice(initIndex + 1).some((m) => m.method === 'notifications/initialized'),
        'no notifications/initialized after initialize',
      );
      // L6: the server sent no request of its own before that.
      const serverRequests = conn.tap.received.filter((m) => 'method' in m && 'id' in m && m.method !== 'ping');
      assert.deepEqual(serverRequests, [], 'server sent requests');
      if (transport === 'http') {
        // H7: a session id of visible ASCII.
        const sid = conn.transport.sessionId;
        assert.equal(typeof sid, 'string', 'no Mcp-Session-Id on the initialize response');
        assert.match(sid, /^[\x21-\x7e]+$/);
      }
    });

    it('version negotiation: the SDK asks 2025-11-25 and gets 2025-11-25', async () => {
      const init = conn.tap.sent.find((m) => m.method === 'initialize');
      assert.equal(init.params.protocolVersion, LATEST);
      assert.equal(conn.tap.responseTo(init.id).result.protocolVersion, LATEST);
    });

    it('version negotiation: each older supported version is answered with itself', async () => {
      for (const v of ['2025-06-18', '2025-03-26', '2024-11-05']) {
        const res = await rawInitialize(srv, v);
        assert.equal(res.result?.protocolVersion, v, `asked ${v}: ${JSON.stringify(res)}`);
        assert.equal(res.result.serverInfo?.name, 'mcp-exec');
      }
    });

    it('version negotiation: 1999-01-01 is answered with a version the server supports', async () => {
      const res = await rawInitialize(srv, '1999-01-01');
      assert.ok(res.result, `expected a result, got ${JSON.stringify(res)}`);
      assert.ok(
        SUPPORTED.includes(res.result.protocolVersion),
        `answered ${res.result.protocolVersion}, not one of ${SUPPORTED}`,
      );
    });

    it('ping answers promptly with an empty result', async () => {
      const t0 = performance.now();
      const res = await conn.client.ping({ timeout: 5000 });
      const ms = performance.now() - t0;
      const keys = Object.keys(res ?? {}).filter((k) => k !== '_meta');
      assert.deepEqual(keys, [], `ping result ${JSON.stringify(res)}`);
      assert.ok(ms < 1000, `ping took ${ms.toFixed(0)} ms`);
    });

    it('ping is answered while an exec call runs', async () => {
      ({ validate } = await execTool(conn.client));
      const running = callExec(conn, validate, { code: 'import time; time.sleep(2); print("done")' });
      await new Promise((r) => setTimeout(r, 300));
      const t0 = performance.now();
      await conn.client.ping({ timeout: 5000 });
      const ms = performance.now() - t0;
      const { sc } = await running;
      assert.equal(sc.stdout, 'done\n');
      assert.ok(ms < 500, `ping took ${ms.toFixed(0)} ms while a run was going on`);
    });

    it('tools/list: exec and the session tools, with input and output schemas', async () => {
      const { tools, tool, validate: v } = await execTool(conn.client);
      assert.deepEqual(
        tools.map((t) => t.name),
        ['exec', 'session_list', 'session_close'],
      );
      assert.match(tool.name, /^[A-Za-z0-9_.-]{1,128}$/);
      assert.equal(typeof tool.description, 'string');
      assert.ok(tool.description.length > 0, 'exec has no description');
      const input = tool.inputSchema;
      assert.equal(input.type, 'object');
      assert.ok(Array.isArray(input.required) && input.required.includes('code'), `required: ${JSON.stringify(input.required)}`);
      assert.ok(!input.required.includes('stdin') && !input.required.includes('timeout_s'), 'stdin/timeout_s must be optional');
      assert.equal(input.properties?.code?.type, 'string');
      assert.equal(input.properties?.stdin?.type, 'string');
      assert.equal(input.properties?.timeout_s?.type, 'integer');
      const output = tool.outputSchema;
      assert.equal(output.type, 'object');
      for (const f of ['stdout', 'stderr', 'exit_code', 'duration_ms', 'truncated', 'timed_out']) {
        assert.ok(output.properties?.[f], `outputSchema lacks ${f}`);
      }
      assert.equal(output.properties.stdout.type, 'string');
      assert.equal(output.properties.exit_code.type, 'integer');
      assert.equal(output.properties.timed_out.type, 'boolean');
      // The schema rejects what the contract rules out (so the Ajv check on results can fail).
      assert.equal(v({ stdout: 1 }), false, 'outputSchema accepts {stdout: 1}');
    });

    it('unknown tool: a JSON-RPC error or an isError result', async () => {
      let outcome;
      try {
        const r = await conn.client.callTool({ name: 'no-such-tool', arguments: {} }, undefined, { timeout: 10000 });
        outcome = r;
        assert.equal(r.isError, true, `unknown tool gave ${JSON.stringify(r)}`);
      } catch (e) {
        if (outcome) throw e;
        assert.equal(typeof e.code, 'number', `not a JSON-RPC error: ${e}`);
        assert.ok(e.code < 0, `error code ${e.code}`);
      }
      // And the session still works.
      await conn.client.ping({ timeout: 5000 });
    });

    it('every JSON-RPC message received is well formed (L1)', () => {
      assert.ok(conn.tap.received.length > 0);
      for (const m of conn.tap.received) {
        assert.equal(m.jsonrpc, '2.0', JSON.stringify(m));
        if ('id' in m && !('method' in m)) {
          assert.notEqual('result' in m, 'error' in m, `exactly one of result/error: ${JSON.stringify(m)}`);
          if ('error' in m) assert.ok(Number.isInteger(m.error.code));
        }
      }
      assert.deepEqual(conn.errors.map(String), [], 'the SDK client reported errors');
    });
  });
}
