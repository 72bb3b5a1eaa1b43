// Wire-level clients without the SDK, for what the SDK will not send or hides: garbage, odd
// protocol versions, missing headers, and a byte-exact view of the server's stdout.
import { spawn } from 'node:child_process';

import { BIN, waitExit } from './server.mjs';

export const LATEST = '2025-11-25';
export const SUPPORTED = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

export function initializeRequest(id, protocolVersion = LATEST) {
  return {
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw-interop', version: '1.0.0' } },
  };
}
export const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' };

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

// ---------------------------------------------------------------------------------------------
// stdio: one `mcp-exec serve` child; every stdout line is kept verbatim and parsed.
export class RawStdio {
  constructor(env) {
    this.child = spawn(BIN, ['serve'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.lines = []; // every stdout line, verbatim
    this.messages = []; // the ones that parsed
    this.badLines = []; // the ones that did not
    this.stderrText = '';
    this.waiters = [];
    this.pending = '';
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk) => {
      this.pending += chunk;
      let i;
      while ((i = this.pending.indexOf('\n')) >= 0) {
        const line = this.pending.slice(0, i);
        this.pending = this.pending.slice(i + 1);
        this.onLine(line);
      }
    });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (c) => {
      this.stderrText += c;
      if (this.stderrText.length > 65536) this.stderrText = this.stderrText.slice(-65536);
    });
    this.child.stdin.on('error', () => {});
  }
  onLine(line) {
    this.lines.push(line);
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      this.badLines.push(line);
      return;
    }
    this.messages.push(msg);
    this.waiters = this.waiters.filter((w) => {
      if (w.pred(msg)) {
        w.resolve(msg);
        return false;
      }
      return true;
    });
  }
  stderrTail() {
    return this.stderrText ? `\n--- server stderr ---\n${this.stderrText.slice(-3000)}` : '';
  }
  writeLine(text) {
    this.child.stdin.write(text + '\n');
  }
  send(msg) {
    this.writeLine(JSON.stringify(msg));
  }
  waitFor(pred, ms = 10000, what = 'a message') {
    const found = this.messages.find(pred);
    if (found) return Promise.resolve(found);
    const p = new Promise((resolve) => this.waiters.push({ pred, resolve }));
    return withTimeout(p, ms, `${what}${this.stderrTail()}`);
  }
  request(msg, ms = 10000) {
    this.send(msg);
    return this.waitFor((m) => m.id === msg.id && ('result' in m || 'error' in m), ms, `the response to ${msg.method} id ${msg.id}`);
  }
  async initialize(protocolVersion = LATEST) {
    const res = await this.request(initializeRequest(0, protocolVersion));
    this.send(INITIALIZED);
    return res;
  }
  closeStdin() {
    this.child.stdin.end();
  }
  exited(ms) {
    return waitExit(this.child, ms);
  }
  async kill() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGKILL');
      await waitExit(this.child, 2000);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Server-Sent Events: a minimal parser over a fetch body.
export async function* sseEvents(body) {
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of body) {
    buf += decoder.decode(chunk, { stream: true });
    buf = buf.replace(/\r\n?/g, '\n');
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const ev = { event: 'message', data: [], id: undefined };
      let any = false;
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const c = line.indexOf(':');
        const field = c < 0 ? line : line.slice(0, c);
        let value = c < 0 ? '' : line.slice(c + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'event') ev.event = value;
        else if (field === 'data') ev.data.push(value);
        else if (field === 'id') ev.id = value;
        else continue;
        any = true;
      }
      if (any) yield { event: ev.event, data: ev.data.join('\n'), id: ev.id };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP: one POST per message; the reply is JSON or an SSE stream (both handled).
export class RawHttp {
  constructor(mcpUrl, headers = {}) {
    this.url = mcpUrl;
    this.headers = headers;
    this.sessionId = undefined;
    this.protocolVersion = undefined;
  }
  baseHeaders(extra = {}) {
    const h = {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...this.headers,
    };
    if (this.sessionId !== undefined) h['Mcp-Session-Id'] = this.sessionId;
    if (this.protocolVersion !== undefined) h['MCP-Protocol-Version'] = this.protocolVersion;
    for (const [k, v] of Object.entries(extra)) {
      // Case-insensitive override; null removes.
      for (const key of Object.keys(h)) if (key.toLowerCase() === k.toLowerCase()) delete h[key];
      if (v !== null) h[k] = v;
    }
    return h;
  }
  // POSTs `body` (an object, or a string sent as is). Returns {status, headers, messages, text}:
  // messages are the JSON-RPC messages of the reply, from a JSON body or from SSE `message` events.
  async post(body, extraHeaders = {}, ms = 15000) {
    const res = await fetch(this.url, {
      method: 'POST',
      headers: this.baseHeaders(extraHeaders),
      body: typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(ms),
    });
    return readReply(res);
  }
  async initialize(protocolVersion = LATEST) {
    const reply = await this.post(initializeRequest(0, protocolVersion), {});
    this.sessionId = reply.headers.get('mcp-session-id') ?? undefined;
    const msg = reply.messages.find((m) => m.id === 0);
    if (msg?.result?.protocolVersion) this.protocolVersion = msg.result.protocolVersion;
    if (reply.status === 200 && this.sessionId !== undefined) {
      const n = await this.post(INITIALIZED);
      reply.initializedStatus = n.status;
    }
    return reply;
  }
  async delete(extraHeaders = {}) {
    const res = await fetch(this.url, {
      method: 'DELETE',
      headers: this.baseHeaders(extraHeaders),
      signal: AbortSignal.timeout(10000),
    });
    await res.arrayBuffer();
    return res.status;
  }
}

export async function readReply(res) {
  const type = res.headers.get('content-type') ?? '';
  const out = { status: res.status, headers: res.headers, contentType: type, messages: [], text: '' };
  if (type.startsWith('text/event-stream')) {
    for await (const ev of sseEvents(res.body)) {
      out.text += ev.data + '\n';
      if (ev.event === 'message' && ev.data) {
        try {
          out.messages.push(JSON.parse(ev.data));
        } catch {
          /* keep text */
        }
      }
    }
  } else {
    out.text = await res.text();
    if (out.text.trim()) {
      try {
        const v = JSON.parse(out.text);
        out.messages = Array.isArray(v) ? v : [v];
      } catch {
        /* not JSON */
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Legacy HTTP+SSE: GET /sse (events), POST to the endpoint it names.
export class RawSse {
  constructor(sseUrl, headers = {}) {
    this.url = sseUrl;
    this.headers = headers;
    this.events = [];
    this.waiters = [];
    this.abort = new AbortController();
  }
  // Opens the stream; returns the response status (and, on 200, waits for the endpoint event).
  async open(ms = 10000) {
    const res = await fetch(this.url, {
      headers: { Accept: 'text/event-stream', ...this.headers },
      signal: this.abort.signal,
    });
    this.status = res.status;
    this.contentType = res.headers.get('content-type') ?? '';
    if (res.status !== 200) {
      await res.arrayBuffer().catch(() => {});
      return res.status;
    }
    this.pump = (async () => {
      try {
        for await (const ev of sseEvents(res.body)) {
          this.events.push(ev);
          this.waiters = this.waiters.filter((w) => {
            if (w.pred(ev)) {
              w.resolve(ev);
              return false;
            }
            return true;
          });
        }
      } catch {
        /* aborted */
      }
    })();
    const first = await this.waitEvent(() => true, ms, 'the first SSE event');
    this.firstEvent = first;
    if (first.event === 'endpoint') this.endpoint = new URL(first.data, this.url);
    return res.status;
  }
  waitEvent(pred, ms = 10000, what = 'an SSE event') {
    const found = this.events.find(pred);
    if (found) return Promise.resolve(found);
    const p = new Promise((resolve) => this.waiters.push({ pred, resolve }));
    return withTimeout(p, ms, what);
  }
  waitMessage(pred, ms = 10000, what = 'a message') {
    return this.waitEvent(
      (ev) => {
        if (ev.event !== 'message') return false;
        try {
          return pred(JSON.parse(ev.data));
        } catch {
          return false;
        }
      },
      ms,
      what,
    ).then((ev) => JSON.parse(ev.data));
  }
  async post(body, extraHeaders = {}) {
    const res = await fetch(this.endpoint, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...this.headers, ...extraHeaders },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(10000),
    });
    const text = await res.text();
    return { status: res.status, text };
  }
  async request(msg, ms = 10000) {
    const r = await this.post(msg);
    if (r.status < 200 || r.status >= 300) throw new Error(`POST ${msg.method} -> ${r.status} ${r.text}`);
    return this.waitMessage((m) => m.id === msg.id && ('result' in m || 'error' in m), ms, `the response to ${msg.method}`);
  }
  async initialize(protocolVersion = LATEST) {
    const res = await this.request(initializeRequest(0, protocolVersion));
    await this.post(INITIALIZED);
    return res;
  }
  close() {
    this.abort.abort();
  }
}

// ---------------------------------------------------------------------------------------------
// One raw initialize on any transport of a started server (lib/server.mjs); returns the
// JSON-RPC response (result or error) and closes the raw session.
export async function rawInitialize(srv, protocolVersion) {
  if (srv.transport === 'stdio') {
    const raw = new RawStdio(srv.env);
    try {
      return await raw.initialize(protocolVersion);
    } finally {
      await raw.kill();
    }
  }
  if (srv.transport === 'http') {
    const raw = new RawHttp(srv.mcpUrl, srv.authHeaders ?? {});
    const reply = await raw.initialize(protocolVersion);
    if (raw.sessionId !== undefined) await raw.delete().catch(() => {});
    const msg = reply.messages.find((m) => m.id === 0);
    if (!msg) throw new Error(`initialize -> HTTP ${reply.status}, no response message: ${reply.text.slice(0, 300)}`);
    return msg;
  }
  const raw = new RawSse(srv.sseUrl, srv.authHeaders ?? {});
  try {
    const status = await raw.open();
    if (status !== 200) throw new Error(`GET /sse -> ${status}`);
    return await raw.initialize(protocolVersion);
  } finally {
    raw.close();
  }
}
