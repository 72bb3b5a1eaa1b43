// auth-token (checklist E4, contract): with MCP_EXEC_AUTH_TOKEN set, every HTTP and SSE request
// must carry `X-MCP-AUTH: <token>` or `Authorization: Bearer <token>`, else 401.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { callExec, execTool } from '../lib/exec.mjs';
import { LATEST, RawHttp, RawSse, initializeRequest } from '../lib/raw.mjs';
import { startServer } from '../lib/server.mjs';

const TOKEN = `tok-${randomUUID()}`;
// Wrong in several ways: another token, the same length, a prefix, a different case.
const WRONG = [`tok-${randomUUID()}`, TOKEN.slice(0, -1) + (TOKEN.endsWith('a') ? 'b' : 'a'), TOKEN.slice(0, 8), TOKEN.toUpperCase()];

async function postInit(url, headers) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(initializeRequest(0)),
    signal: AbortSignal.timeout(10000),
  });
  await res.arrayBuffer();
  return res;
}

async function getSse(url, headers) {
  const ac = new AbortController();
  const res = await fetch(url, { headers: { Accept: 'text/event-stream', ...headers }, signal: ac.signal });
  ac.abort();
  return res.status;
}

for (const transport of ['http', 'sse']) {
  describe(`auth-token over ${transport}`, { timeout: 120000 }, () => {
    let srv;
    before(async () => {
      srv = await startServer(transport, { env: { MCP_EXEC_AUTH_TOKEN: TOKEN } });
    });
    after(async () => {
      await srv?.stop();
    });

    if (transport === 'http') {
      it('POST /mcp without a token is 401', async () => {
        assert.equal((await postInit(srv.mcpUrl, {})).status, 401);
      });
      it('POST /mcp with a wrong token is 401 (X-MCP-AUTH and Bearer)', async () => {
        for (const w of WRONG) {
          assert.equal((await postInit(srv.mcpUrl, { 'X-MCP-AUTH': w })).status, 401, `X-MCP-AUTH: ${w}`);
          assert.equal((await postInit(srv.mcpUrl, { Authorization: `Bearer ${w}` })).status, 401, `Bearer ${w}`);
        }
        assert.equal((await postInit(srv.mcpUrl, { 'X-MCP-AUTH': '' })).status, 401, 'empty X-MCP-AUTH');
        assert.equal((await postInit(srv.mcpUrl, { Authorization: TOKEN })).status, 401, 'Authorization without Bearer');
      });
      it('POST /mcp with the right token is 200 (X-MCP-AUTH and Bearer)', async () => {
        assert.equal((await postInit(srv.mcpUrl, { 'X-MCP-AUTH': TOKEN })).status, 200);
        assert.equal((await postInit(srv.mcpUrl, { Authorization: `Bearer ${TOKEN}` })).status, 200);
      });
      it('a request in an authenticated session without the token is 401', async () => {
        const raw = new RawHttp(srv.mcpUrl, { 'X-MCP-AUTH': TOKEN });
        const init = await raw.initialize();
        assert.equal(init.status, 200);
        const r = await raw.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'X-MCP-AUTH': null });
        assert.equal(r.status, 401);
        const ok = await raw.post({ jsonrpc: '2.0', id: 2, method: 'ping' });
        assert.equal(ok.status, 200);
        await raw.delete();
      });
    } else {
      it('GET /sse without a token is 401', async () => {
        assert.equal(await getSse(srv.sseUrl, {}), 401);
      });
      it('GET /sse with a wrong token is 401 (X-MCP-AUTH and Bearer)', async () => {
        for (const w of WRONG) {
          assert.equal(await getSse(srv.sseUrl, { 'X-MCP-AUTH': w }), 401, `X-MCP-AUTH: ${w}`);
          assert.equal(await getSse(srv.sseUrl, { Authorization: `Bearer ${w}` }), 401, `Bearer ${w}`);
        }
      });
      it('GET /sse with the right token is the event stream (X-MCP-AUTH and Bearer)', async () => {
        for (const h of [{ 'X-MCP-AUTH': TOKEN }, { Authorization: `Bearer ${TOKEN}` }]) {
          const raw = new RawSse(srv.sseUrl, h);
          try {
            assert.equal(await raw.open(), 200);
            assert.equal(raw.firstEvent.event, 'endpoint');
          } finally {
            raw.close();
          }
        }
      });
      it('POST to the message endpoint without or with a wrong token is 401', async () => {
        const raw = new RawSse(srv.sseUrl, { 'X-MCP-AUTH': TOKEN });
        try {
          assert.equal(await raw.open(), 200);
          // Without any token (a bare fetch: raw.post would add the stream's header).
          const res = await fetch(raw.endpoint, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify(initializeRequest(1)),
          });
          await res.arrayBuffer();
          assert.equal(res.status, 401, 'POST without a token');
          const wrong = await raw.post(initializeRequest(2), { 'X-MCP-AUTH': WRONG[0] });
          assert.equal(wrong.status, 401, 'POST with a wrong token');
          // Nothing was accepted: the session is still unused and initializes normally.
          const init = await raw.initialize();
          assert.equal(init.result?.protocolVersion, LATEST);
        } finally {
          raw.close();
        }
      });
    }

    it('the SDK client without a token cannot connect', async () => {
      await assert.rejects(srv.connect({ headers: {} }));
    });

    it('the SDK client with a wrong token cannot connect', async () => {
      await assert.rejects(srv.connect({ headers: { 'X-MCP-AUTH': WRONG[0] } }));
    });

    it('the SDK client with X-MCP-AUTH works', async () => {
      const conn = await srv.connect({ headers: { 'X-MCP-AUTH': TOKEN } });
      const { validate } = await execTool(conn.client);
      const { sc } = await callExec(conn, validate, { code: 'print("authorized")' });
      assert.equal(sc.stdout, 'authorized\n');
      await conn.client.close();
    });

    it('the SDK client with Authorization: Bearer works', async () => {
      const conn = await srv.connect({ headers: { Authorization: `Bearer ${TOKEN}` } });
      const { validate } = await execTool(conn.client);
      const { sc } = await callExec(conn, validate, { code: 'print("bearer")' });
      assert.equal(sc.stdout, 'bearer\n');
      await conn.client.close();
    });
  });
}
