// Starts the built mcp-exec binary on one transport and connects the official MCP TypeScript SDK
// client to it.
//
//   const srv = await startServer('http', { env: { MCP_EXEC_AUTH_TOKEN: 't' } });
//   const { client, tap } = await srv.connect({ headers: { 'X-MCP-AUTH': 't' } });
//   ...
//   await srv.stop();   // closes every client, stops the server, fails if it did not exit
//
// stdio: every connect() spawns its own `mcp-exec serve` (that is what stdio means); stop() closes
// their stdin and checks that each process exited. http / sse: one `mcp-exec serve` process with
// MCP_EXEC_TRANSPORT=http|sse on 127.0.0.1:<free port>, ready once GET /healthz answers 200.
//
// Environment:
//   MCP_EXEC_BIN           the binary (default: ../../../build/mcp-exec from this file)
//   MCP_EXEC_TEST_ROOTFS   passed to the server as MCP_EXEC_ROOTFS when set
//   MCP_EXEC_ENGINE, MCP_EXEC_POOL_SIZE, MCP_EXEC_PRELOAD
//                          passed to every server: the engine the suite runs in (default auto)
//   MCP_EXEC_TEST_VERBOSE  set to 1 to copy the servers' stderr (their logs) to ours
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, accessSync, constants as fsConstants } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';

const here = path.dirname(fileURLToPath(import.meta.url));

export const TRANSPORTS = ['stdio', 'http', 'sse'];

export const BIN = process.env.MCP_EXEC_BIN
  ? path.resolve(process.env.MCP_EXEC_BIN)
  : path.resolve(here, '../../../build/mcp-exec');

const VERBOSE = process.env.MCP_EXEC_TEST_VERBOSE === '1';
const STDERR_KEEP = 64 * 1024;

export function assertBinary() {
  if (!existsSync(BIN)) {
    throw new Error(`mcp-exec binary not found at ${BIN}: build it (ninja -C build) or set MCP_EXEC_BIN`);
  }
  accessSync(BIN, fsConstants.X_OK);
}

// The engine the suite runs every server in (tests/meson.build: interop-pool), with its settings.
const ENGINE_SETTINGS = new Set(['MCP_EXEC_ENGINE', 'MCP_EXEC_POOL_SIZE', 'MCP_EXEC_PRELOAD']);

// The environment every server gets: the caller's (PATH, HOME, ...) minus MCP_EXEC_* settings
// that would change behaviour under test (the engine's are kept), plus the rootfs and the case's
// own settings.
export function serverEnv(extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('MCP_EXEC_') && !ENGINE_SETTINGS.has(k)) continue;
    env[k] = v;
  }
  if (process.env.MCP_EXEC_TEST_ROOTFS) env.MCP_EXEC_ROOTFS = process.env.MCP_EXEC_TEST_ROOTFS;
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = String(v);
  }
  return env;
}

// A TCP port nobody listens on right now (bind to 0, read, close).
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Keeps the tail of a stream's text, for error messages.
class TextTail {
  constructor(label) {
    this.label = label;
    this.text = '';
  }
  attach(stream) {
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      if (VERBOSE) process.stderr.write(chunk);
      this.text += chunk;
      if (this.text.length > STDERR_KEEP) this.text = this.text.slice(-STDERR_KEEP);
    });
    return this;
  }
  lines() {
    return this.text.split('\n').filter(Boolean);
  }
  toString() {
    const t = this.text.trimEnd();
    return t ? `\n--- ${this.label} (tail) ---\n${t.slice(-4000)}\n---` : `\n(${this.label}: empty)`;
  }
}

// Records every message in both directions of an SDK transport; forwards everything else.
export class TapTransport {
  constructor(inner) {
    this.inner = inner;
    this.sent = [];
    this.received = [];
    inner.onmessage = (message, extra) => {
      this.received.push(message);
      this.onmessage?.(message, extra);
    };
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
  }
  start() {
    return this.inner.start();
  }
  send(message, options) {
    this.sent.push(message);
    return this.inner.send(message, options);
  }
  close() {
    return this.inner.close();
  }
  get sessionId() {
    return this.inner.sessionId;
  }
  setProtocolVersion(version) {
    this.inner.setProtocolVersion?.(version);
  }
  // The response the server sent to the request with this id, or undefined.
  responseTo(id) {
    return this.received.find((m) => m.id === id && ('result' in m || 'error' in m));
  }
}

// Records the messages of a v2 transport in place. The v2 client looks at the transport itself
// (hasPerRequestStream decides whether an abort closes the request's stream or sends
// notifications/cancelled; the exact StdioClientTransport class runs the 'auto' probe on a sibling
// process), so a wrapper like TapTransport above would change what it does.
export function tapInPlace(inner) {
  const tap = {
    sent: [],
    received: [],
    responseTo(id) {
      return this.received.find((m) => m.id === id && ('result' in m || 'error' in m));
    },
  };
  const send = inner.send.bind(inner);
  inner.send = (message, options) => {
    tap.sent.push(message);
    return send(message, options);
  };
  let handler;
  Object.defineProperty(inner, 'onmessage', {
    configurable: true,
    get: () => handler,
    set: (fn) => {
      handler = fn
        ? (message, extra) => {
            tap.received.push(message);
            fn(message, extra);
          }
        : fn;
    },
  });
  return tap;
}

// Waits for a ChildProcess to exit; resolves {code, signal} or null after `ms`.
export function waitExit(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
}

// Closes an SDK2 client; when its transport started a stdio server, checks that the server
// exited cleanly on the closed stdin (SIGKILL after 5 s otherwise).
export async function closeV2Client(client, inner) {
  const child = inner._process;
  await client.close().catch(() => {});
  if (child) {
    const e = await waitExit(child, 5000);
    if (!e) child.kill('SIGKILL');
    assert.ok(e && (e.code === 0 || e.signal === 'SIGTERM'), `stdio server ended with ${JSON.stringify(e)}`);
  }
}

function describeExit(e) {
  return e.signal ? `signal ${e.signal}` : `exit code ${e.code}`;
}

class ServerHandle {
  constructor(transport, env) {
    this.transport = transport;
    this.env = env;
    this.clients = [];
    this.stdioProcs = []; // stdio: one child per client
    this.proc = null; // http/sse: the one server
    this.stderr = null;
    this.port = null;
    this.baseUrl = null;
  }

  get mcpUrl() {
    return new URL('/mcp', this.baseUrl);
  }
  get sseUrl() {
    return new URL('/sse', this.baseUrl);
  }

  async startHttp() {
    this.port = await freePort();
    const addr = `127.0.0.1:${this.port}`;
    this.env.MCP_EXEC_TRANSPORT = this.transport;
    this.env.MCP_EXEC_ADDR = addr;
    this.proc = spawn(BIN, ['serve'], { env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.stdout = new TextTail(`${this.transport} server stdout`).attach(this.proc.stdout);
    this.stderr = new TextTail(`${this.transport} server stderr`).attach(this.proc.stderr);
    this.spawnError = null;
    this.proc.on('error', (e) => (this.spawnError = e));
    this.baseUrl = new URL(`http://${addr}/`);

    const deadline = Date.now() + 15000;
    let last = 'no attempt';
    while (Date.now() < deadline) {
      if (this.spawnError) throw new Error(`cannot start ${BIN}: ${this.spawnError.message}`);
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
        throw new Error(
          `mcp-exec serve (${this.transport}) exited before it was ready: ` +
            `${describeExit({ code: this.proc.exitCode, signal: this.proc.signalCode })}${this.stderr}`,
        );
      }
      // If the server logs its bound address, believe it (it must be the one we asked for).
      const listening = this.stderr
        .lines()
        .map((l) => {
          try {
            return JSON.parse(l);
          } catch {
            return null;
          }
        })
        .find((o) => o && /listening/.test(o.msg) && typeof (o.addr ?? o.address) === 'string');
      const bound = listening?.addr ?? listening?.address;
      if (bound && bound !== addr) {
        const m = /:(\d+)$/.exec(bound);
        if (m) {
          this.port = Number(m[1]);
          this.baseUrl = new URL(`http://127.0.0.1:${this.port}/`);
        }
      }
      try {
        const res = await fetch(new URL('/healthz', this.baseUrl), {
          headers: this.authHeaders,
          signal: AbortSignal.timeout(1000),
        });
        await res.arrayBuffer();
        if (res.status === 200) return;
        last = `GET /healthz -> ${res.status}`;
      } catch (e) {
        last = `GET /healthz: ${e.cause?.code ?? e.message}`;
      }
      await sleep(50);
    }
    throw new Error(`mcp-exec serve (${this.transport}) not ready after 15 s (${last})${this.stderr}`);
  }

  // A connected SDK client. options.headers go on every HTTP request (default: the auth header
  // when the server was started with MCP_EXEC_AUTH_TOKEN); options.name names
  // the client. Returns { client, tap, errors, transport } where errors collects client.onerror.
  async connect(options = {}) {
    let inner;
    let child = null;
    const headers = options.headers ?? this.authHeaders;
    const requestInit = headers && Object.keys(headers).length ? { headers } : undefined;
    let stderr = null;
    if (this.transport === 'stdio') {
      inner = new StdioClientTransport({
        command: BIN,
        args: ['serve'],
        env: this.env,
        stderr: 'pipe',
      });
    } else if (this.transport === 'http') {
      inner = new StreamableHTTPClientTransport(this.mcpUrl, { requestInit });
    } else {
      inner = new SSEClientTransport(this.sseUrl, { requestInit });
    }
    const tap = new TapTransport(inner);
    const client = new Client({ name: options.name ?? 'mcp-exec-interop', version: '1.0.0' }, { capabilities: {} });
    const errors = [];
    client.onerror = (e) => errors.push(e);
    if (this.transport === 'stdio') {
      // Capture the process before connect() so that even a failed handshake can be diagnosed.
      stderr = new TextTail('stdio server stderr');
      const origStart = inner.start.bind(inner);
      inner.start = async () => {
        const p = origStart();
        stderr.attach(inner.stderr);
        await p;
        child = inner._process;
        this.stdioProcs.push({ child, stderr });
      };
    }
    try {
      await client.connect(tap, { timeout: 15000 });
    } catch (e) {
      const tail = stderr ?? this.stderr ?? '';
      e.message += String(tail);
      throw e;
    }
    const conn = { client, tap, errors, transport: inner, child, stderr: stderr ?? this.stderr };
    this.clients.push(conn);
    return conn;
  }

  // Everything the server(s) logged so far, for assertion messages.
  logs() {
    if (this.transport === 'stdio') return this.stdioProcs.map((p) => String(p.stderr)).join('');
    return String(this.stderr ?? '');
  }

  // Closes the clients, stops the server(s), and throws if one did not exit or died abnormally.
  async stop() {
    const problems = [];
    await Promise.all(this.clients.map((c) => c.client.close().catch(() => {})));
    this.clients = [];
    if (this.transport === 'stdio') {
      // The SDK's close() ended stdin (then SIGTERM/SIGKILL after 2 s each): the server must exit
      // on EOF, so by now each process should have exited on its own, with status 0.
      for (const { child, stderr } of this.stdioProcs) {
        let e = await waitExit(child, 5000);
        if (!e) {
          child.kill('SIGKILL');
          e = await waitExit(child, 2000);
          problems.push(`stdio server pid ${child.pid} still running 5 s after stdin was closed${stderr}`);
        } else if (!(e.code === 0 || e.signal === 'SIGTERM')) {
          problems.push(`stdio server pid ${child.pid} ended with ${describeExit(e)}${stderr}`);
        }
      }
      this.stdioProcs = [];
    } else if (this.proc) {
      const proc = this.proc;
      this.proc = null;
      if (proc.exitCode !== null || proc.signalCode !== null) {
        problems.push(
          `${this.transport} server died during the tests: ` +
            `${describeExit({ code: proc.exitCode, signal: proc.signalCode })}${this.stderr}`,
        );
      } else {
        proc.kill('SIGTERM');
        let e = await waitExit(proc, 5000);
        if (!e) {
          proc.kill('SIGKILL');
          e = await waitExit(proc, 2000);
          problems.push(`${this.transport} server did not exit within 5 s of SIGTERM${this.stderr}`);
        } else if (!(e.code === 0 || e.code === 143 || e.signal === 'SIGTERM')) {
          problems.push(`${this.transport} server ended with ${describeExit(e)} after SIGTERM${this.stderr}`);
        }
      }
    }
    if (problems.length) throw new Error(problems.join('\n'));
  }
}

// Starts a server for `transport` ('stdio' | 'http' | 'sse'). options.env: extra environment
// (MCP_EXEC_* settings) for the server.
export async function startServer(transport, options = {}) {
  assertBinary();
  if (!TRANSPORTS.includes(transport)) throw new Error(`unknown transport ${transport}`);
  const handle = new ServerHandle(transport, serverEnv(options.env ?? {}));
  const token = options.env?.MCP_EXEC_AUTH_TOKEN;
  handle.authHeaders = token ? { 'X-MCP-AUTH': String(token) } : {};
  if (transport !== 'stdio') {
    try {
      await handle.startHttp();
    } catch (e) {
      if (handle.proc && handle.proc.exitCode === null) {
        handle.proc.kill('SIGKILL');
        await waitExit(handle.proc, 2000);
      }
      throw e;
    }
  }
  return handle;
}
