// The stateless era's (2026-07-28) wire by hand, for what the SDKs do not speak: requests with
// their revision in params._meta (and, over HTTP, the headers that mirror them), and
// subscriptions/listen streams on stdio and Streamable HTTP.
import assert from 'node:assert/strict';

import { RawStdio, readReply, sseEvents } from './raw.mjs';

export const MODERN = '2026-07-28';
export const TASKS = 'io.modelcontextprotocol/tasks';
export const SUB_ID = 'io.modelcontextprotocol/subscriptionId';

export function meta(extension = true) {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: 'interop-subscriptions', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': extension ? { extensions: { [TASKS]: {} } } : {},
  };
}

export function request(id, method, params, extension = true) {
  return { jsonrpc: '2.0', id, method, params: { ...params, _meta: meta(extension) } };
}

// The headers of a stateless POST: the revision, and the body fields they mirror.
export function headersFor(msg, accept) {
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

export async function postHttp(url, msg, accept = 'application/json, text/event-stream') {
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
export class Inbox {
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
export async function listenHttp(url, msg) {
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
export async function wire(transport, srv) {
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

export function tasksNote(taskId, status) {
  return (m) => m.method === 'notifications/tasks' && m.params?.taskId === taskId && (!status || m.params.status === status);
}
