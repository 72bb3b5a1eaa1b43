// The stateless era's (2026-07-28) subscriptions/listen, and the tasks extension's
// notifications/tasks on it, on stdio and Streamable HTTP.
//
// SDK2 (@modelcontextprotocol/client 2.4.0) opens and closes subscriptions (client.listen), but
// does not take a task for an answer ("Unsupported result type 'task' for tools/call") and its
// listen filter has no taskIds: the task cases speak the wire by hand (lib/raw.mjs).
//  - a 65 s run (past the SDKs' 60 s default request timeout) as a task: the client listens for
//    it and is told of its end, with the result inlined, on the one stream (over HTTP one event
//    stream open for the whole run, kept alive by the server);
//  - SDK2's listen() is acknowledged (a filter this server has nothing for: an empty one), and
//    its close() reaches the server on each transport: 70 in a row, past the 64 one client may
//    keep open, each open at once;
//  - over HTTP, a server that stops ends an open SDK2 subscription with its response, which the
//    SDK reports as 'graceful';
//  - over HTTP, a listen that accepts JSON only is refused (-32600, naming text/event-stream),
//    and taskIds without the extension declared is -32021.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { RawStdio, readReply, sseEvents } from '../lib/raw.mjs';
import { BIN, closeV2Client, startServer } from '../lib/server.mjs';

const MODERN = '2026-07-28';
const TASKS = 'io.modelcontextprotocol/tasks';
const SUB_ID = 'io.modelcontextprotocol/subscriptionId';
const LONG_S = 65;

function meta(extension = true) {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: 'interop-subscriptions', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': extension ? { extensions: { [TASKS]: {} } } : {},
  };
}

function request(id, method, params, extension = true) {
  return { jsonrpc: '2.0', id, method, params: { ...params, _meta: meta(extension) } };
}

// The headers of a stateless POST: the revision, and the body fields they mirror.
function headersFor(msg, accept) {
  const h = {
    'Content-Type': 'application/json',
    Accept: accept,
    'MCP-Protocol-Version': MODERN,
    'Mcp-Method': msg.method,
  };
  const name = msg.params?.name ?? msg.params?.taskId;
  if (name !== undefined) h['Mcp-Name'] = name;
  return h;
}

async function postHttp(url, msg, accept = 'application/json, text/event-stream') {
  const res = await fetch(url, {
    method: 'POST',
    headers: headersFor(msg, accept),
    body: JSON.stringify(msg),
    signal: AbortSignal.timeout(15000),
  });
  const reply = await readReply(res);
  return { status: reply.status, message: reply.messages.find((m) => m.id === msg.id) };
}

// Messages that arrive one by one, each waited for by a predicate.
class Inbox {
  constructor() {
    this.messages = [];
    this.waiters = [];
  }
  push(msg) {
    this.messages.push(msg);
    const waiting = [];
    for (const w of this.waiters) {
      if (w.pred(msg)) w.resolve(msg);
      else waiting.push(w);
    }
    this.waiters = waiting;
  }
  waitFor(pred, ms, what) {
    const found = this.messages.find(pred);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}: got ${JSON.stringify(this.messages).slice(0, 2000)}`)), ms);
      this.waiters.push({ pred, resolve: (m) => (clearTimeout(timer), resolve(m)) });
    });
  }
}

// A subscriptions/listen over HTTP: one POST whose event stream stays open; close() aborts it.
async function listenHttp(url, msg) {
  const abort = new AbortController();
  const res = await fetch(url, { method: 'POST', headers: headersFor(msg, 'application/json, text/event-stream'), body: JSON.stringify(msg), signal: abort.signal });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const inbox = new Inbox();
  const pump = (async () => {
    try {
      for await (const ev of sseEvents(res.body)) if (ev.event === 'message' && ev.data) inbox.push(JSON.parse(ev.data));
    } catch {
      /* aborted */
    }
  })();
  return {
    inbox,
    async close() {
      abort.abort();
      await pump;
    },
  };
}

// One client's wire on `transport`: requests answered in order, and an inbox of everything.
async function wire(transport, srv) {
  if (transport === 'stdio') {
    const raw = new RawStdio(srv.env);
    const inbox = new Inbox();
    raw.onLine = ((orig) =>
      function onLine(line) {
        orig.call(this, line);
        try {
          inbox.push(JSON.parse(line));
        } catch {
          /* RawStdio keeps it */
        }
      })(raw.onLine);
    return {
      call: (msg) => raw.request(msg, 15000),
      async listen(msg) {
        raw.send(msg);
        return { inbox, close: async () => raw.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: msg.id } }) };
      },
      async end() {
        raw.closeStdin();
        const e = await raw.exited(10000);
        assert.ok(e && e.code === 0, `stdio server ended with ${JSON.stringify(e)}${raw.stderrTail()}`);
      },
    };
  }
  return {
    call: async (msg) => (await postHttp(srv.mcpUrl, msg)).message,
    listen: (msg) => listenHttp(srv.mcpUrl, msg),
    async end() {},
  };
}

function tasksNote(taskId, status) {
  return (m) => m.method === 'notifications/tasks' && m.params?.taskId === taskId && (!status || m.params.status === status);
}

describe('subscriptions/listen (2026-07-28)', { concurrency: true, timeout: 200000 }, () => {
  for (const transport of ['stdio', 'http']) {
    describe(`over ${transport}`, { concurrency: true }, () => {
      let srv;
      before(async () => {
        srv = await startServer(transport, { env: { MCP_EXEC_MAX_CONCURRENCY: 4 } });
      });
      after(async () => {
        await srv?.stop();
      });

      it(`a ${LONG_S} s run as a task: its end, with the result, comes on the listen stream`, async () => {
        const w = await wire(transport, srv);
        const marker = `mcp-exec-interop-listen-${randomUUID()}`;
        const created = await w.call(
          request(1, 'tools/call', {
            name: 'exec',
            arguments: { code: `import time\ntime.sleep(${LONG_S})\nprint(${JSON.stringify(marker)})`, timeout_s: LONG_S + 60 },
          }),
        );
        assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
        const { taskId } = created.result;
        const sub = await w.listen(request('listen-long', 'subscriptions/listen', { notifications: { taskIds: [taskId] } }));
        const ack = await sub.inbox.waitFor((m) => m.method === 'notifications/subscriptions/acknowledged', 10000, 'the acknowledgement');
        assert.deepEqual(ack.params.notifications, { taskIds: [taskId] });
        assert.equal(ack.params._meta[SUB_ID], 'listen-long');
        const working = await sub.inbox.waitFor(tasksNote(taskId), 10000, 'the task as it is');
        assert.equal(working.params.status, 'working');
        const t0 = performance.now();
        const ended = await sub.inbox.waitFor(tasksNote(taskId, 'completed'), (LONG_S + 45) * 1000, 'the task completed');
        assert.ok(performance.now() - t0 >= (LONG_S - 5) * 1000, 'told of the end before the run could have ended');
        assert.equal(ended.params._meta[SUB_ID], 'listen-long');
        const sc = ended.params.result.structuredContent;
        assert.equal(sc.exit_code, 0, sc.stderr);
        assert.equal(sc.stdout, `${marker}\n`);
        assert.ok(sc.duration_ms >= LONG_S * 1000, `duration_ms ${sc.duration_ms}`);
        assert.ok(!sub.inbox.messages.some((m) => m.id === 'listen-long'), 'the open subscription was answered');
        await sub.close();
        await w.end();
      });

      it('SDK2 listen() is acknowledged and its close() reaches the server, 70 times in a row', async () => {
        const inner = transport === 'stdio' ? new StdioClientTransport({ command: BIN, args: ['serve'], env: srv.env, stderr: 'pipe' }) : new StreamableHTTPClientTransport(srv.mcpUrl);
        const client = new Client({ name: 'interop-listen', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } });
        await client.connect(inner, { timeout: 15000 });
        try {
          for (let i = 0; i < 70; ++i) {
            const sub = await client.listen({ toolsListChanged: true }, { timeout: 10000 });
            assert.deepEqual(sub.honoredFilter, {}, `round ${i}`);
            await sub.close();
            assert.equal(await sub.closed, 'local');
          }
        } finally {
          await closeV2Client(client, inner);
        }
      });

      it('taskIds without the tasks extension declared is -32021', async () => {
        const w = await wire(transport, srv);
        const r = await w.call(request(3, 'subscriptions/listen', { notifications: { taskIds: [] } }, false));
        assert.equal(r.error?.code, -32021, JSON.stringify(r));
        assert.deepEqual(r.error.data.requiredCapabilities, { extensions: { [TASKS]: {} } });
        await w.end();
      });
    });
  }

  describe('over http only', () => {
    it('a listen that accepts JSON only is refused, naming text/event-stream', async () => {
      const srv = await startServer('http');
      try {
        const r = await postHttp(srv.mcpUrl, request(4, 'subscriptions/listen', { notifications: {} }), 'application/json');
        assert.equal(r.message?.error?.code, -32600, JSON.stringify(r));
        assert.match(r.message.error.message, /text\/event-stream/);
      } finally {
        await srv.stop();
      }
    });

    it("a server that stops ends an SDK2 subscription with its response: 'graceful'", async () => {
      const srv = await startServer('http');
      const inner = new StreamableHTTPClientTransport(srv.mcpUrl);
      const client = new Client({ name: 'interop-listen-stop', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } });
      await client.connect(inner, { timeout: 15000 });
      const sub = await client.listen({ toolsListChanged: true }, { timeout: 10000 });
      await srv.stop();
      assert.equal(await sub.closed, 'graceful');
      await client.close().catch(() => {});
    });
  });
});
