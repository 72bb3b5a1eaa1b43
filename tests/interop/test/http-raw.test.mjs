// Streamable HTTP and legacy SSE on the wire, without the SDK (checklist H1-H10, E1-E3).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { LATEST, RawHttp, RawSse, readReply } from '../lib/raw.mjs';
import { findByMarker, markerProgram, waitUntil } from '../lib/procs.mjs';
import { sleep, startServer } from '../lib/server.mjs';

describe('streamable http wire', { timeout: 120000 }, () => {
  let srv;
  before(async () => {
    srv = await startServer('http');
  });
  after(async () => {
    await srv?.stop();
  });

  const session = async () => {
    const raw = new RawHttp(srv.mcpUrl);
    const init = await raw.initialize();
    assert.equal(init.status, 200, `initialize -> ${init.status} ${init.text.slice(0, 300)}`);
    assert.ok(raw.sessionId, 'no Mcp-Session-Id on the initialize response');
    assert.equal(init.initializedStatus, 202, 'notifications/initialized was not answered 202');
    return raw;
  };

  it('healthz answers 200', async () => {
    const res = await fetch(new URL('/healthz', srv.baseUrl));
    await res.arrayBuffer();
    assert.equal(res.status, 200);
  });

  it('initialize: 200, JSON or SSE body, a visible-ASCII Mcp-Session-Id', async () => {
    const raw = new RawHttp(srv.mcpUrl);
    const reply = await raw.initialize();
    assert.equal(reply.status, 200);
    assert.match(reply.contentType, /^(application\/json|text\/event-stream)/);
    const msg = reply.messages.find((m) => m.id === 0);
    assert.equal(msg?.result?.protocolVersion, LATEST);
    assert.match(raw.sessionId ?? '', /^[\x21-\x7e]+$/);
    await raw.delete();
  });

  it('http-notification-202: a POSTed notification is 202 with no body', async () => {
    const raw = await session();
    const r = await raw.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 999 } });
    assert.equal(r.status, 202);
    assert.equal(r.text, '');
    await raw.delete();
  });

  it('a request in the session is answered (JSON or SSE) with the same id', async () => {
    const raw = await session();
    const r = await raw.post({ jsonrpc: '2.0', id: 'x1', method: 'ping' });
    assert.equal(r.status, 200);
    assert.match(r.contentType, /^(application\/json|text\/event-stream)/);
    const msg = r.messages.find((m) => m.id === 'x1');
    assert.deepEqual(msg?.result, {}, r.text);
    const call = await raw.post({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'exec', arguments: { code: 'print(6*7)' } },
    });
    assert.equal(call.status, 200);
    assert.equal(call.messages.find((m) => m.id === 2)?.result?.structuredContent?.stdout, '42\n', call.text.slice(0, 300));
    await raw.delete();
  });

  it('http-session-required: a POST without Mcp-Session-Id after initialize is 400', async () => {
    const raw = await session();
    const r = await raw.post({ jsonrpc: '2.0', id: 5, method: 'ping' }, { 'Mcp-Session-Id': null });
    assert.equal(r.status, 400);
    await raw.delete();
  });

  it('an unknown Mcp-Session-Id is 404', async () => {
    const raw = await session();
    const r = await raw.post({ jsonrpc: '2.0', id: 6, method: 'ping' }, { 'Mcp-Session-Id': 'no-such-session-0123456789' });
    assert.equal(r.status, 404);
    await raw.delete();
  });

  it('http-session-delete: DELETE ends the session, then its id is 404', async () => {
    const raw = await session();
    const status = await raw.delete();
    assert.ok(status === 200 || status === 204, `DELETE -> ${status}`);
    const r = await raw.post({ jsonrpc: '2.0', id: 7, method: 'ping' });
    assert.equal(r.status, 404);
  });

  it('http-bad-protocol-version: MCP-Protocol-Version 1999-01-01 is 400; none is accepted', async () => {
    const raw = await session();
    const bad = await raw.post({ jsonrpc: '2.0', id: 8, method: 'ping' }, { 'MCP-Protocol-Version': '1999-01-01' });
    assert.equal(bad.status, 400);
    const none = await raw.post({ jsonrpc: '2.0', id: 9, method: 'ping' }, { 'MCP-Protocol-Version': null });
    assert.equal(none.status, 200, 'no MCP-Protocol-Version header should mean 2025-03-26, not an error');
    await raw.delete();
  });

  it('malformed JSON in a POST is 400 (with -32700 if there is a JSON body)', async () => {
    const raw = await session();
    const r = await raw.post('{"jsonrpc": "2.0", "id": 1, "method": ');
    assert.equal(r.status, 400);
    const err = r.messages.find((m) => m.error);
    if (r.messages.length) assert.equal(err?.error?.code, -32700, r.text);
    const ok = await raw.post({ jsonrpc: '2.0', id: 10, method: 'ping' });
    assert.equal(ok.status, 200, 'the session broke after garbage');
    await raw.delete();
  });

  it('deep-nesting: 200,000 nested brackets are 400 with -32600, in a session and before one', async () => {
    const deep = `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"x": ${'['.repeat(200000)}${']'.repeat(200000)}}}`;
    const fresh = new RawHttp(srv.mcpUrl);
    const r0 = await fresh.post(deep);
    assert.equal(r0.status, 400, r0.text.slice(0, 300));
    assert.equal(r0.messages.find((m) => m.error)?.error?.code, -32600, r0.text.slice(0, 300));
    const raw = await session();
    const r = await raw.post(deep.replace('initialize', 'ping'));
    assert.equal(r.status, 400, r.text.slice(0, 300));
    assert.equal(r.messages.find((m) => m.error)?.error?.code, -32600, r.text.slice(0, 300));
    const ok = await raw.post({ jsonrpc: '2.0', id: 10, method: 'ping' });
    assert.equal(ok.status, 200, 'the server or the session broke after the nesting');
    const health = await fetch(new URL('/healthz', srv.baseUrl));
    await health.arrayBuffer();
    assert.equal(health.status, 200);
    await raw.delete();
  });

  it('http-get-stream: GET /mcp with Accept text/event-stream is an event stream', async () => {
    const raw = await session();
    const ac = new AbortController();
    const res = await fetch(srv.mcpUrl, {
      headers: raw.baseHeaders({ 'Content-Type': null, Accept: 'text/event-stream' }),
      signal: ac.signal,
    });
    try {
      assert.equal(res.status, 200, `GET -> ${res.status}`);
      assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    } finally {
      ac.abort();
    }
    await raw.delete();
  });

  it('an invalid Origin is 403 (H2)', async () => {
    const raw = new RawHttp(srv.mcpUrl);
    const res = await fetch(srv.mcpUrl, {
      method: 'POST',
      headers: { ...raw.baseHeaders(), Origin: 'http://evil.example' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    const reply = await readReply(res);
    assert.equal(reply.status, 403, `Origin http://evil.example -> ${reply.status}`);
  });
});

describe('streamable http wire, stateless era (2026-07-28)', { timeout: 120000 }, () => {
  const V = '2026-07-28';
  let srv;
  before(async () => {
    srv = await startServer('http');
  });
  after(async () => {
    await srv?.stop();
  });

  const meta = (extra = {}) => ({
    'io.modelcontextprotocol/protocolVersion': V,
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'interop', version: '1' },
    ...extra,
  });
  // A request with the headers a conforming client sends; `headers` overrides them (null removes).
  const send = (id, method, params, headers = {}) => {
    const raw = new RawHttp(srv.mcpUrl);
    const name = params.name ?? params.uri;
    return raw.post(
      { jsonrpc: '2.0', id, method, params: { ...params, _meta: params._meta ?? meta() } },
      { 'MCP-Protocol-Version': V, 'Mcp-Method': method, ...(name !== undefined ? { 'Mcp-Name': name } : {}), ...headers },
      20000,
    );
  };
  const only = (reply, id) => {
    const msg = reply.messages.find((m) => m.id === id);
    assert.ok(msg, `no reply with id ${id}: ${reply.status} ${reply.text.slice(0, 300)}`);
    return msg;
  };

  it('server/discover, tools/list and tools/call need no initialize and mint no session', async () => {
    const d = await send('d', 'server/discover', {});
    assert.equal(d.status, 200, d.text);
    assert.equal(d.headers.get('mcp-session-id'), null);
    assert.deepEqual(only(d, 'd').result.supportedVersions.slice(0, 2), [V, LATEST]);
    const list = await send('l', 'tools/list', {});
    assert.equal(list.status, 200);
    const tools = only(list, 'l').result;
    assert.deepEqual(tools.tools.map((t) => t.name), ['exec', 'session_list', 'session_close']);
    assert.equal(tools.resultType, 'complete');
    assert.equal(tools.cacheScope, 'public');
    const call = await send('c', 'tools/call', { name: 'exec', arguments: { code: 'print(6*7)' } });
    assert.equal(call.status, 200, call.text.slice(0, 300));
    assert.equal(call.headers.get('mcp-session-id'), null);
    const result = only(call, 'c').result;
    assert.equal(result.structuredContent.stdout, '42\n');
    assert.equal(result.resultType, 'complete');
    assert.equal(result._meta['io.modelcontextprotocol/serverInfo'].name, 'mcp-exec');
  });

  it('sessions: stateless requests are one caller; a handshake session is another', async () => {
    const exec = (id, args) => send(id, 'tools/call', { name: 'exec', arguments: args }, { Accept: 'application/json' });
    const opened = only(await exec('s1', { code: 'x = 41', session: 'new' }), 's1').result.structuredContent;
    assert.match(opened.session, /^s[0-9a-f]{8}_[0-9a-f]{32}$/);
    const next = only(await exec('s2', { code: 'x + 1', session: opened.session }), 's2').result;
    assert.equal(next.structuredContent.result, '42', 'the next stateless request reaches the session');
    const listed = only(await send('s3', 'tools/call', { name: 'session_list', arguments: {} }), 's3').result;
    assert.ok(listed.structuredContent.sessions.some((x) => x.session === opened.session));
    // A client of the handshake era is another caller: the stateless session is not its own.
    const conn = await srv.connect();
    const foreign = await conn.client.callTool({ name: 'exec', arguments: { code: 'x', session: opened.session } });
    assert.equal(foreign.isError, true);
    assert.match(foreign.content[0].text, /^unknown session: no session of yours/);
    const closed = only(await send('s4', 'tools/call', { name: 'session_close', arguments: { session: opened.session } }), 's4');
    assert.equal(closed.result.structuredContent.closed, true);
  });

  it('a JSON-only client gets the call as JSON, an event-stream client as a stream', async () => {
    const args = { name: 'exec', arguments: { code: 'print("j")' } };
    const json = await send(1, 'tools/call', args, { Accept: 'application/json' });
    assert.match(json.contentType, /^application\/json/);
    assert.equal(only(json, 1).result.structuredContent.stdout, 'j\n');
    const sse = await send(2, 'tools/call', args, { Accept: 'text/event-stream' });
    assert.match(sse.contentType, /^text\/event-stream/);
    assert.equal(only(sse, 2).result.structuredContent.stdout, 'j\n');
    // An answer given at once follows the Accept too; only an error is JSON whatever it says.
    const discover = await send(3, 'server/discover', {}, { Accept: 'text/event-stream' });
    assert.match(discover.contentType, /^text\/event-stream/);
    assert.ok(only(discover, 3).result.supportedVersions, discover.text);
    const unknown = await send(4, 'no/such/method', {}, { Accept: 'text/event-stream' });
    assert.equal(unknown.status, 404);
    assert.match(unknown.contentType, /^application\/json/);
  });

  it('a non-ASCII tool name comes base64-encoded in Mcp-Name and is compared decoded', async () => {
    const name = 'ex\u00e9c';
    const encoded = `=?base64?${Buffer.from(name).toString('base64')}?=`;
    const r = await send(3, 'tools/call', { name, arguments: { code: 'pass' } }, { 'Mcp-Name': encoded });
    // The headers match the body, so the request reaches the server core: no such tool (invalid
    // params, 400), not a header mismatch.
    assert.equal(r.status, 400, r.text);
    assert.equal(only(r, 3).error?.code, -32602, r.text);
    const exec = await send(4, 'tools/call', { name: 'exec', arguments: { code: 'pass' } },
      { 'Mcp-Name': `=?base64?${Buffer.from('exec').toString('base64')}?=` });
    assert.equal(exec.status, 200, exec.text);
    assert.equal(only(exec, 4).result.structuredContent.exit_code, 0);
  });

  it('headers that disagree with the body, or are missing, are 400 with -32020 and run nothing', async () => {
    const args = { name: 'exec', arguments: { code: 'print("ran")' } };
    const cases = [
      ['Mcp-Name names another tool', { 'Mcp-Name': 'other' }],
      ['no Mcp-Name', { 'Mcp-Name': null }],
      ['no Mcp-Method', { 'Mcp-Method': null }],
      ['Mcp-Method names another method', { 'Mcp-Method': 'tools/list' }],
      ['a version header other than _meta', { 'MCP-Protocol-Version': LATEST }],
      ['no version header', { 'MCP-Protocol-Version': null }],
      ['an encoded name that is not base64', { 'Mcp-Name': '=?base64?e x e c?=' }],
    ];
    for (const [what, headers] of cases) {
      const r = await send(5, 'tools/call', args, headers);
      assert.equal(r.status, 400, `${what}: ${r.status} ${r.text.slice(0, 300)}`);
      assert.equal(r.messages[0]?.error?.code, -32020, `${what}: ${r.text.slice(0, 300)}`);
    }
  });

  it('an unsupported version is 400 with -32022 and the supported list', async () => {
    const r = await send(6, 'tools/list', { _meta: meta({ 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }) },
      { 'MCP-Protocol-Version': '2099-01-01' });
    assert.equal(r.status, 400, r.text);
    const err = r.messages[0]?.error;
    assert.equal(err?.code, -32022, r.text);
    assert.ok(err.data.supported.includes(V) && err.data.supported.includes(LATEST), r.text);
    assert.equal(err.data.requested, '2099-01-01');
    assert.equal(r.messages[0].id, 6, 'the error names the request it answers');
  });

  it('a request that does not name its revision in _meta is 400 with -32602, discover too', async () => {
    for (const m of [{}, { 'io.modelcontextprotocol/clientInfo': { name: 'x', version: '1' } }]) {
      const raw = new RawHttp(srv.mcpUrl);
      const r = await raw.post({ jsonrpc: '2.0', id: 12, method: 'server/discover', params: Object.keys(m).length ? { _meta: m } : {} },
        { 'MCP-Protocol-Version': V, 'Mcp-Method': 'server/discover' });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.messages[0]?.error?.code, -32602, r.text);
    }
  });

  it('an unknown method is 404 with -32601; ping and initialize are unknown in this era', async () => {
    for (const method of ['no/such/method', 'ping', 'initialize', 'logging/setLevel']) {
      const r = await send(7, method, {});
      assert.equal(r.status, 404, `${method}: ${r.status} ${r.text}`);
      assert.equal(only(r, 7).error.code, -32601, r.text);
    }
  });

  it('GET and DELETE are 405; Mcp-Session-Id and Last-Event-ID are ignored', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(srv.mcpUrl, { method, headers: { 'MCP-Protocol-Version': V, Accept: 'text/event-stream' } });
      await res.arrayBuffer();
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get('allow'), 'POST');
    }
    const r = await send(8, 'tools/list', {}, { 'Mcp-Session-Id': 'no-such-session', 'Last-Event-ID': '5' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('mcp-session-id'), null);
  });

  it('a body naming the new revision under an old or absent header is -32020, not a session error', async () => {
    const raw = new RawHttp(srv.mcpUrl);
    const body = { jsonrpc: '2.0', id: 9, method: 'tools/list', params: { _meta: meta() } };
    for (const version of [LATEST, null]) {
      const r = await raw.post(body, { 'MCP-Protocol-Version': version, 'Mcp-Method': 'tools/list' });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.messages[0]?.error?.code, -32020, r.text);
    }
  });

  it('an unknown version header is -32022 in the handshake era too', async () => {
    const raw = new RawHttp(srv.mcpUrl);
    const init = await raw.initialize();
    assert.equal(init.status, 200);
    const r = await raw.post({ jsonrpc: '2.0', id: 10, method: 'ping' }, { 'MCP-Protocol-Version': '1999-01-01' });
    assert.equal(r.status, 400);
    assert.equal(r.messages[0]?.error?.code, -32022, r.text);
    await raw.delete();
  });

  it('closing the response stream cancels the run: its processes die', async () => {
    const marker = `mcp-exec-interop-stateless-cancel-${randomUUID()}`;
    const ac = new AbortController();
    const res = await fetch(srv.mcpUrl, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'text/event-stream',
        'MCP-Protocol-Version': V,
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'exec',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 11,
        method: 'tools/call',
        params: { name: 'exec', arguments: { code: markerProgram(marker, 30), timeout_s: 60 }, _meta: meta() },
      }),
      signal: ac.signal,
    });
    assert.equal(res.status, 200);
    await waitUntil(() => findByMarker(marker).length > 0, 10000, `the sandboxed process ${marker}`);
    ac.abort();
    await waitUntil(() => findByMarker(marker).length === 0, 5000, 'the processes of the cancelled run to die');
  });
});

describe('sse wire', { timeout: 120000 }, () => {
  let srv;
  before(async () => {
    srv = await startServer('sse');
  });
  after(async () => {
    await srv?.stop();
  });

  it('sse-endpoint-event: the first event is endpoint with a same-origin POST URI', async () => {
    const raw = new RawSse(srv.sseUrl);
    try {
      const status = await raw.open();
      assert.equal(status, 200);
      assert.match(raw.contentType, /^text\/event-stream/);
      assert.equal(raw.firstEvent.event, 'endpoint');
      const url = new URL(raw.firstEvent.data, srv.sseUrl);
      assert.equal(url.origin, srv.sseUrl.origin);
      assert.equal(url.pathname, '/messages');
      assert.ok(url.searchParams.get('sessionId'), `no sessionId in ${raw.firstEvent.data}`);
    } finally {
      raw.close();
    }
  });

  it('requests POSTed to the endpoint are answered as message events on the stream', async () => {
    const raw = new RawSse(srv.sseUrl);
    try {
      await raw.open();
      const init = await raw.initialize();
      assert.equal(init.result?.protocolVersion, LATEST);
      const r = await raw.post({ jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { name: 'exec', arguments: { code: 'print(6*7)' } } });
      assert.ok(r.status === 202 || r.status === 200, `POST -> ${r.status}`);
      const msg = await raw.waitMessage((m) => m.id === 'c', 15000, 'the tools/call response');
      assert.equal(msg.result?.structuredContent?.stdout, '42\n');
    } finally {
      raw.close();
    }
  });

  it('a POST for an unknown sessionId is 4xx', async () => {
    const res = await fetch(new URL('/messages?sessionId=no-such-session', srv.baseUrl), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    await res.arrayBuffer();
    assert.ok(res.status >= 400 && res.status < 500, `-> ${res.status}`);
  });

  it('malformed JSON POSTed to the endpoint: 4xx or a -32700 event; the session keeps working', async () => {
    const raw = new RawSse(srv.sseUrl);
    try {
      await raw.open();
      await raw.initialize();
      const r = await raw.post('{"jsonrpc": "2.0", "id": 1, "method": ');
      if (!(r.status >= 400 && r.status < 500)) {
        assert.ok(r.status >= 200 && r.status < 300, `-> ${r.status}`);
        const e = await raw.waitMessage((m) => m.error?.code === -32700, 5000, 'a -32700 event');
        assert.equal(e.id, null);
      }
      const pong = await raw.request({ jsonrpc: '2.0', id: 'p', method: 'ping' });
      assert.deepEqual(pong.result, {});
    } finally {
      raw.close();
    }
  });

  it('closing the event stream ends the session: its endpoint stops accepting', async () => {
    const raw = new RawSse(srv.sseUrl);
    await raw.open();
    await raw.initialize();
    raw.close();
    await sleep(500);
    const r = await raw.post({ jsonrpc: '2.0', id: 1, method: 'ping' });
    assert.ok(r.status >= 400 && r.status < 500, `POST after the stream closed -> ${r.status}`);
  });
});
