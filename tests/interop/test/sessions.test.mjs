// Sessions (docs/sessions.md) with the SDK client, the same cases on every transport: state that
// stays across calls, session_list and session_close, idle expiry and the limit on open
// sessions, concurrent calls in one session (refused), and the answer to a handle that is not
// the caller's: on HTTP and SSE another protocol session's handle gets exactly the answer of a
// made-up one; on stdio every connection is a server process of its own, whose handles another
// process tells apart as from another server (a restart, or another replica).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { callExec, execTool } from '../lib/exec.mjs';
import { TRANSPORTS, sleep, startServer } from '../lib/server.mjs';

const HANDLE = /^s[0-9a-f]{8}_[0-9a-f]{32}$/;

function errorText(result) {
  assert.equal(result.isError, true, `expected a tool error, got ${JSON.stringify(result).slice(0, 400)}`);
  return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

async function tool(conn, name, args, timeout = 30000) {
  return conn.client.callTool({ name, arguments: args }, undefined, { timeout });
}

for (const transport of TRANSPORTS) {
  describe(`sessions over ${transport}`, { timeout: 240000 }, () => {
    let srv;
    let a;
    let b;
    let validate;
    const exec = (conn, args, opts) => callExec(conn, validate, args, opts);

    before(async () => {
      srv = await startServer(transport, {
        env: { MCP_EXEC_PRELOAD: '', MCP_EXEC_MAX_CONCURRENCY: 4, MCP_EXEC_MAX_SESSIONS: 3 },
      });
      a = await srv.connect();
      b = await srv.connect();
      ({ validate } = await execTool(a.client));
    });
    after(async () => {
      await srv?.stop();
    });

    it('state stays across calls, and a last expression is the result', async () => {
      const { sc: opened } = await exec(a, { code: 'import math\nx = 41\nx', session: 'new' });
      assert.match(opened.session, HANDLE);
      assert.equal(opened.result, '41');
      assert.ok(!Number.isNaN(Date.parse(opened.expires_at)), opened.expires_at);
      const { sc } = await exec(a, { code: 'x += 1\nprint(x)\nmath.sqrt(x * x)', session: opened.session });
      assert.equal(sc.stdout, '42\n');
      assert.equal(sc.result, '42.0');
      assert.equal(sc.session, opened.session);
      const list = (await tool(a, 'session_list', {})).structuredContent;
      assert.ok(list.sessions.some((s) => s.session === opened.session && s.calls === 2), JSON.stringify(list));
      assert.equal((await tool(a, 'session_close', { session: opened.session })).structuredContent.closed, true);
      assert.equal(errorText(await tool(a, 'exec', { code: 'x', session: opened.session })), 'session ended: closed');
    });

    it("another caller's handle gets the answer a made-up one gets", async () => {
      const { sc } = await exec(a, { code: 'secret = 1', session: 'new' });
      const madeUp = `${sc.session.slice(0, 10)}${randomBytes(16).toString('hex')}`;
      const foreign = errorText(await tool(b, 'exec', { code: 'secret', session: sc.session }));
      if (transport === 'stdio') {
        // Each stdio connection is a server process of its own.
        assert.match(foreign, /^unknown session: the handle is from another mcp-exec server process/);
      } else {
        assert.equal(foreign, errorText(await tool(b, 'exec', { code: 'secret', session: madeUp })));
        assert.match(foreign, /^unknown session: no session of yours/);
        assert.equal(errorText(await tool(b, 'session_close', { session: sc.session })), foreign);
      }
      assert.deepEqual((await tool(b, 'session_list', {})).structuredContent.sessions, []);
      const { sc: still } = await exec(a, { code: 'secret', session: sc.session });
      assert.equal(still.result, '1', 'the owner still has it');
      await tool(a, 'session_close', { session: sc.session });
    });

    it('a second call while one runs in the session is refused', async () => {
      const { sc } = await exec(a, { code: 'import time\nn = 0', session: 'new' });
      const slow = exec(a, { code: 'time.sleep(2)\nn += 1\nn', session: sc.session });
      await sleep(500);
      const busy = errorText(await tool(a, 'exec', { code: 'n += 10', session: sc.session }));
      assert.match(busy, /^session busy/);
      assert.equal((await slow).sc.result, '1');
      await tool(a, 'session_close', { session: sc.session });
    });

    it('output streams while a call in a session runs', async () => {
      const { sc } = await exec(a, { code: 'import time', session: 'new' });
      const progress = [];
      const { sc: streamed } = await exec(
        a,
        { code: 'for i in range(4):\n    print(i, flush=True)\n    time.sleep(0.4)', session: sc.session },
        { onprogress: (p) => progress.push(p) },
      );
      assert.equal(streamed.stdout, '0\n1\n2\n3\n');
      assert.ok(progress.length >= 2, `progress notifications: ${JSON.stringify(progress)}`);
      assert.ok(progress.some((p) => /0/.test(p.message ?? '')), JSON.stringify(progress));
      await tool(a, 'session_close', { session: sc.session });
    });

    it('the open sessions are limited, and closing one makes room', async () => {
      const handles = [];
      for (let i = 0; i < 3; i++) handles.push((await exec(a, { code: String(i), session: 'new' })).sc.session);
      assert.match(errorText(await tool(a, 'exec', { code: '1', session: 'new' })), /too many sessions/);
      await tool(a, 'session_close', { session: handles[0] });
      const { sc } = await exec(a, { code: '3', session: 'new' });
      assert.equal(sc.result, '3');
      for (const h of [...handles.slice(1), sc.session]) await tool(a, 'session_close', { session: h });
    });
  });

  describe(`sessions and a restart over ${transport}`, { timeout: 120000 }, () => {
    it("a handle of the server's previous process says the session did not survive it", async () => {
      const env = { MCP_EXEC_PRELOAD: '' };
      const first = await startServer(transport, { env });
      const conn = await first.connect();
      const { validate } = await execTool(conn.client);
      const { sc } = await callExec(conn, validate, { code: 'x = 1', session: 'new' });
      await first.stop();
      const second = await startServer(transport, { env });
      try {
        const again = await second.connect();
        assert.match(
          errorText(await tool(again, 'exec', { code: 'x', session: sc.session })),
          /^unknown session: the handle is from another mcp-exec server process.*does not survive a restart/,
        );
      } finally {
        await second.stop();
      }
    });
  });

  describe(`session expiry over ${transport}`, { timeout: 120000 }, () => {
    let srv;
    let conn;
    let validate;
    before(async () => {
      srv = await startServer(transport, { env: { MCP_EXEC_PRELOAD: '', MCP_EXEC_SESSION_IDLE_S: 1 } });
      conn = await srv.connect();
      ({ validate } = await execTool(conn.client));
    });
    after(async () => {
      await srv?.stop();
    });

    it('an idle session ends, and its handle says so', async () => {
      const { sc } = await callExec(conn, validate, { code: 'x = 1', session: 'new' });
      await sleep(2500);
      assert.match(errorText(await tool(conn, 'exec', { code: 'x', session: sc.session })), /^session ended: idle for 1 s/);
      assert.deepEqual((await tool(conn, 'session_list', {})).structuredContent.sessions, []);
    });
  });
}
