// The second generation of the official TypeScript SDK (@modelcontextprotocol/client 2.x, pinned
// in package-lock.json beside the 1.x @modelcontextprotocol/sdk the other files use) drives
// `mcp-exec serve` over stdio and Streamable HTTP. The v2 client speaks the 2025 handshake
// unless told otherwise (versionNegotiation mode 'legacy' is its default); with mode 'auto' or
// { pin: '2026-07-28' } it probes with server/discover and then sends every request stateless,
// with the revision in params._meta (and, over HTTP, in the MCP-Protocol-Version header). Each
// case checks the revision on the wire, not only what the client reports.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { checkExecResult, execTool } from '../lib/exec.mjs';
import { findByMarker, markerProgram, waitUntil } from '../lib/procs.mjs';
import { BIN, closeV2Client, sleep, startServer, tapInPlace } from '../lib/server.mjs';

const MODERN = '2026-07-28';
const VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';

// A v2 client on `srv` (a handle of lib/server.mjs), its transport tapped in place; over HTTP every
// fetch is recorded too (method, MCP-Protocol-Version, Mcp-Session-Id, status), so the headers
// the client and server exchanged can be checked.
async function connectV2(srv, versionNegotiation) {
  let inner;
  const requests = [];
  if (srv.transport === 'stdio') {
    inner = new StdioClientTransport({ command: BIN, args: ['serve'], env: srv.env, stderr: 'pipe' });
  } else {
    const tapFetch = async (url, init = {}) => {
      const headers = new Headers(init.headers);
      const res = await fetch(url, init);
      requests.push({
        method: init.method ?? 'GET',
        version: headers.get('mcp-protocol-version'),
        mcpMethod: headers.get('mcp-method'),
        sessionSent: headers.get('mcp-session-id'),
        sessionGot: res.headers.get('mcp-session-id'),
        status: res.status,
      });
      return res;
    };
    inner = new StreamableHTTPClientTransport(srv.mcpUrl, { fetch: tapFetch });
  }
  const tap = tapInPlace(inner);
  const client = new Client(
    { name: 'mcp-exec-interop-v2', version: '1.0.0' },
    versionNegotiation ? { capabilities: {}, versionNegotiation } : { capabilities: {} },
  );
  const errors = [];
  client.onerror = (e) => errors.push(e);
  await client.connect(inner, { timeout: 15000 });
  const conn = { client, tap, requests, errors, inner };
  srv.v2 = [...(srv.v2 ?? []), conn];
  return conn;
}

// Closes the v2 clients of `srv` (a stdio server exits on EOF: its process must end), then stops
// it through lib/server.mjs.
async function stopAll(srv) {
  if (!srv) return;
  for (const { client, inner } of srv.v2 ?? []) await closeV2Client(client, inner);
  await srv.stop();
}

function call(client, args, options = {}) {
  return client.callTool({ name: 'exec', arguments: args }, { timeout: 60000, ...options });
}

for (const transport of ['stdio', 'http']) {
  describe(`${transport}: v2 SDK client (@modelcontextprotocol/client)`, () => {
    let srv;
    before(async () => {
      srv = await startServer(transport, { env: { MCP_EXEC_MAX_CONCURRENCY: 2 } });
    });
    after(async () => {
      await stopAll(srv);
    });

    it("default (versionNegotiation 'legacy'): the 2025 initialize handshake, then exec works", async () => {
      const { client, tap, requests } = await connectV2(srv);
      assert.equal(client.getProtocolEra(), 'legacy');
      const init = tap.sent.find((m) => m.method === 'initialize');
      assert.ok(init, 'the default v2 client sent no initialize');
      assert.ok(!tap.sent.some((m) => m.method === 'server/discover'), 'the default v2 client probed');
      const answer = tap.responseTo(init.id);
      assert.equal(answer?.result?.protocolVersion, '2025-11-25');
      assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
      if (transport === 'http') {
        assert.ok(requests.some((r) => r.sessionGot), 'no Mcp-Session-Id minted in the 2025 era');
      }
      const { validate } = await execTool(client);
      const sc = checkExecResult(await call(client, { code: 'print(6*7)' }), validate);
      assert.equal(sc.stdout, '42\n');
    });

    for (const mode of ['auto', { pin: MODERN }]) {
      const label = typeof mode === 'string' ? mode : `pin ${MODERN}`;
      describe(`versionNegotiation ${label}`, () => {
        let conn;
        let validate;
        before(async () => {
          conn = await connectV2(srv, { mode });
        });

        it('negotiates 2026-07-28 with server/discover, no initialize, no session', async () => {
          const { client, tap, requests } = conn;
          assert.equal(client.getProtocolEra(), 'modern');
          assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
          assert.ok(!tap.sent.some((m) => m.method === 'initialize'), 'a modern client sent initialize');
          // Over HTTP the probe is a POST on the connection; on stdio the v2 client runs it on a
          // sibling `mcp-exec serve` spawned from the same parameters and starts the session's
          // process after, so that process sees no probe (and no initialize).
          let discovered = client.getDiscoverResult();
          if (transport === 'http') {
            const discover = tap.sent.find((m) => m.method === 'server/discover');
            assert.ok(discover, 'no server/discover probe on the wire');
            discovered = tap.responseTo(discover.id)?.result;
          } else {
            assert.ok(!tap.sent.some((m) => m.method === 'server/discover'), 'the stdio probe ran in place');
          }
          assert.ok(discovered?.supportedVersions?.includes(MODERN), JSON.stringify(discovered));
          assert.equal(discovered._meta?.[SERVER_INFO_KEY]?.name, 'mcp-exec');
          assert.equal(client.getServerVersion()?.name, 'mcp-exec');
          if (transport === 'http') {
            assert.ok(requests.length > 0);
            assert.ok(requests.every((r) => r.method === 'POST'), JSON.stringify(requests));
            assert.ok(requests.every((r) => !r.sessionGot && !r.sessionSent), 'a session id on the wire');
            assert.ok(requests.every((r) => r.status === 200), JSON.stringify(requests));
          }
        });

        it('tools/list: exec, sent with the revision in _meta; the result is complete and cacheable', async () => {
          const { client, tap, requests } = conn;
          ({ validate } = await execTool(client));
          const list = tap.sent.findLast((m) => m.method === 'tools/list');
          assert.equal(list?.params?._meta?.[VERSION_KEY], MODERN);
          const answer = tap.responseTo(list.id)?.result;
          assert.equal(answer?.resultType, 'complete');
          assert.ok(Number.isInteger(answer.ttlMs), `ttlMs ${answer.ttlMs}`);
          assert.ok(['public', 'private'].includes(answer.cacheScope), `cacheScope ${answer.cacheScope}`);
          if (transport === 'http') {
            const post = requests.findLast((r) => r.mcpMethod === 'tools/list');
            assert.equal(post?.version, MODERN, JSON.stringify(requests));
          }
        });

        it('exec: print(6*7) is "42\\n"', async () => {
          const { client, tap } = conn;
          const result = await call(client, { code: 'print(6*7)' });
          const sc = checkExecResult(result, validate);
          assert.equal(sc.stdout, '42\n');
          assert.equal(sc.exit_code, 0);
          const req = tap.sent.findLast((m) => m.method === 'tools/call');
          assert.equal(req.params._meta?.[VERSION_KEY], MODERN);
          assert.equal(tap.responseTo(req.id)?.result?.resultType, 'complete');
        });

        it('exec: bad code is a result with a non-zero exit_code and the traceback', async () => {
          const result = await call(conn.client, { code: 'def broken(:\n' });
          assert.equal(result.isError ?? false, false);
          const sc = checkExecResult(result, validate);
          assert.notEqual(sc.exit_code, 0);
          assert.match(sc.stderr, /SyntaxError/);
        });

        it('exec: an empty program is an isError result', async () => {
          const result = await call(conn.client, { code: '' });
          assert.equal(result.isError, true);
          assert.ok(result.content?.[0]?.text, JSON.stringify(result));
        });

        it('cancel: aborting a sleeping run kills its processes and the next call works', async () => {
          const { client, tap } = conn;
          const marker = `mcp-exec-interop-v2-cancel-${randomUUID()}`;
          const ac = new AbortController();
          const pending = call(client, { code: markerProgram(marker, 30), timeout_s: 60 }, { signal: ac.signal });
          pending.catch(() => {});
          await waitUntil(() => findByMarker(marker).length > 0, 10000, `the sandboxed process ${marker}`);
          const ta = performance.now();
          ac.abort('test cancels');
          await assert.rejects(pending);
          assert.ok(performance.now() - ta < 1000, 'the call did not reject promptly');
          const req = tap.sent.find((m) => m.method === 'tools/call' && m.params?.arguments?.code?.includes(marker));
          if (transport === 'stdio') {
            // stdio has no connection per request: the client says so with notifications/cancelled.
            const note = tap.sent.find((m) => m.method === 'notifications/cancelled' && m.params?.requestId === req.id);
            assert.ok(note, 'the v2 client sent no notifications/cancelled on stdio');
          }
          await waitUntil(() => findByMarker(marker).length === 0, 5000, 'the processes of the cancelled run to die').catch(
            (e) => {
              throw new Error(`${e.message}: still alive ${findByMarker(marker)}${srv.logs()}`);
            },
          );
          const sc = checkExecResult(await call(client, { code: 'print("after cancel")' }), validate);
          assert.equal(sc.stdout, 'after cancel\n');
          await sleep(300);
          assert.equal(tap.responseTo(req.id), undefined, 'the server answered the cancelled request');
        });
      });
    }
  });
}
