// MCP tasks (2025-11-25 wire, "experimental" in the SDKs) for `exec`'s tools/call, through the
// official SDK clients on stdio, Streamable HTTP and SSE.
//
// The headline: a run longer than the client's request timeout. The SDKs give every
// request 60 s (DEFAULT_REQUEST_TIMEOUT_MSEC) unless told otherwise, so a plain tools/call of a
// 90 s program fails at 60 s whatever the server does; started as a task (SDK1's
// client.experimental.tasks.callToolStream with params.task), the call answers at once and the
// client polls tasks/get (each poll a short request, each within the 60 s) until the task has
// ended, then tasks/result gives the CallToolResult. So, on each transport, with the SDK's default
// timeout (no timeout option anywhere):
//  - a 90 s program run as a task completes: exit_code 0 and its marker on stdout;
//  - the same 90 s run without a task fails as the client's timeout says (McpError
//    RequestTimeout, -32001) and the server cleans up: the SDK sends notifications/cancelled,
//    the run's processes (one carries a unique marker in its argv) are gone within seconds, the
//    server logs the run's exec line with cancelled true, and it never answers the request.
// The same two through SDK2 (2.x) on the three transports (SSE through its deprecated
// SSEClientTransport): the task by hand, and a plain callTool that fails at 60 s (SdkError
// REQUEST_TIMEOUT) while the server, told with notifications/cancelled, kills the run. And in the
// stateless era (2026-07-28, the tasks extension, which has no SSE) by hand on stdio and
// Streamable HTTP, told of its end, with the result, on a subscriptions/listen stream.
// These fourteen cases each take 60-95 s, so they run concurrently (the suites below are
// `concurrency: true`, and the short cases run beside them on their own servers): the file costs
// about 95-100 s instead of 18 minutes.
//
// The short cases (seconds each):
//  - SDK2 (@modelcontextprotocol/client 2.4.0) has no task runtime: it drives the 2025 wire by
//    hand with client.request and specTypeSchemas (create, tasks/get to completed, tasks/result,
//    tasks/list) on stdio, Streamable HTTP and SSE;
//  - tasks/cancel of a running task answers status cancelled once the run's processes are dead,
//    and tasks/result then gives an isError result; cancelling a terminal task is -32602;
//  - a task running in an exec session ends cancelled when session_close closes the session;
//    tasks/cancel of one interrupts the call as notifications/cancelled does (KeyboardInterrupt),
//    and the session, with what its code started, lives on until session_close;
//  - a malformed params.task (ttl a string, negative; task not an object) is -32602 and makes no task;
//  - a task past MCP_EXEC_MAX_TASKS_PER_CALLER is refused with a JSON-RPC error whose message,
//    naming the setting, reaches SDK1's caller (a tool result would fail its parse);
//  - an unknown taskId is -32602 "Failed to retrieve task: Task not found" for tasks/get,
//    tasks/result and tasks/cancel; on HTTP (two Mcp-Session-Ids) and SSE (two SSE sessions)
//    another session's taskId gets exactly that answer, and its cancel does nothing;
//  - on Streamable HTTP, a tasks/result opened while the task runs carries the run's progress
//    notifications with the tools/call's own progressToken and the related-task _meta; with no
//    tasks/result they and the task's end (notifications/tasks/status) come on the session's GET
//    stream, of which one is open at a time (a new GET ends the old), and DELETE ends it;
//  - a caller that goes away (stdio EOF, HTTP session DELETE, SSE stream closed) takes its running
//    tasks with it: their processes die.
//  - in the stateless era (by hand, on stdio and Streamable HTTP) tasks/cancel of a running task
//    also answers only once every process of the run is dead, and tasks/get then says cancelled;
//  - a server that keeps MCP_EXEC_MAX_TASKS tasks (one from a 2025-11-25 HTTP session, one from
//    the stateless credential: two callers, each below MCP_EXEC_MAX_TASKS_PER_CALLER) refuses the
//    next, naming the setting: a JSON-RPC error in 2025-11-25, a tool error in the stateless era;
//    cancelled, its tasks make room for the next.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { CallToolResultSchema, CreateTaskResultSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { takeResult } from '@modelcontextprotocol/sdk/experimental/tasks';
import {
  Client as ClientV2,
  DEFAULT_REQUEST_TIMEOUT_MSEC as DEFAULT_TIMEOUT_V2,
  ProtocolError as ProtocolErrorV2,
  SdkError as SdkErrorV2,
  SdkErrorCode as SdkErrorCodeV2,
  SSEClientTransport as SseTransportV2,
  StreamableHTTPClientTransport as HttpTransportV2,
  specTypeSchemas,
} from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioTransportV2 } from '@modelcontextprotocol/client/stdio';

import { checkExecResult, execTool } from '../lib/exec.mjs';
import { findByMarker, markerProgram, waitUntil } from '../lib/procs.mjs';
import { RawHttp, sseEvents } from '../lib/raw.mjs';
import { BIN, TRANSPORTS, closeV2Client, sleep, startServer, tapInPlace } from '../lib/server.mjs';
import { SUB_ID, request, tasksNote, wire } from '../lib/stateless.mjs';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const NOT_FOUND = /^MCP error -32602: Failed to retrieve task: Task not found/;
// The long runs: past the SDKs' 60 s default request timeout by half a minute.
const LONG_S = 90;
const SDK_DEFAULT_TIMEOUT_MS = 60000;
const TERMINAL = ['completed', 'failed', 'cancelled'];

// The JSON-RPC error a request (a promise) must end with; fails if it succeeds.
async function rpcError(promise, what) {
  let value;
  try {
    value = await promise;
  } catch (e) {
    assert.ok(Number.isInteger(e.code), `${what}: not a JSON-RPC error: ${e.stack ?? e}`);
    return e;
  }
  assert.fail(`${what}: expected a JSON-RPC error, got ${JSON.stringify(value).slice(0, 400)}`);
}

// Starts `exec` as a task through SDK1 (params.task {ttl}) and returns the Task of the
// CreateTaskResult, checked.
async function createTask(conn, args, ttl = 60000, extra = {}) {
  const created = await conn.client.request(
    { method: 'tools/call', params: { name: 'exec', arguments: args } },
    CreateTaskResultSchema,
    { task: { ttl }, timeout: 15000, ...extra },
  );
  const { task } = created;
  assert.match(task.taskId, /^\S{16,}$/, JSON.stringify(created));
  assert.equal(task.status, 'working');
  assert.equal(task.ttl, ttl);
  assert.ok(!Number.isNaN(Date.parse(task.createdAt)) && !Number.isNaN(Date.parse(task.lastUpdatedAt)), JSON.stringify(task));
  return task;
}

// Polls tasks/get until the task is terminal; returns the last Task.
async function waitTerminal(conn, taskId, ms = 20000) {
  let task;
  await waitUntil(
    async () => {
      task = await conn.client.experimental.tasks.getTask(taskId, { timeout: 10000 });
      return TERMINAL.includes(task.status);
    },
    ms,
    `task ${taskId} to end`,
  );
  return task;
}

function logLines(srv) {
  return srv
    .logs()
    .split('\n')
    .map((l) => {
      try {
        return JSON.parse(l.replace(/^--- .*---$/, ''));
      } catch {
        return null;
      }
    })
    .filter(Boolean);
}

function relatedTaskId(message) {
  return message?._meta?.[RELATED_TASK]?.taskId;
}

// An SDK2 client (no task runtime: the 2025 wire by hand) on a server of its own, its transport
// tapped in place (tap.sent, tap.received); logs() is what the server logged so far (on stdio
// the process the client spawned). close() ends both and checks that a stdio server exited
// cleanly. SSE is the SDK's deprecated SSEClientTransport.
async function connectV2(transport) {
  const srv = await startServer(transport, { env: { MCP_EXEC_MAX_CONCURRENCY: 2 } });
  let inner;
  let stderr = '';
  if (transport === 'stdio') {
    inner = new StdioTransportV2({ command: BIN, args: ['serve'], env: srv.env, stderr: 'pipe' });
    inner.stderr.setEncoding('utf8');
    inner.stderr.on('data', (chunk) => (stderr += chunk));
  } else if (transport === 'http') {
    inner = new HttpTransportV2(srv.mcpUrl);
  } else {
    inner = new SseTransportV2(srv.sseUrl);
  }
  const tap = tapInPlace(inner);
  const client = new ClientV2({ name: 'mcp-exec-interop-v2-tasks', version: '1.0.0' }, { capabilities: {} });
  await client.connect(inner, { timeout: 15000 });
  return {
    client,
    tap,
    logs: () => (transport === 'stdio' ? stderr : srv.logs()),
    async close() {
      await closeV2Client(client, inner);
      await srv.stop();
    },
  };
}

// SDK2 by hand: tasks/get every pollInterval until the task has ended; the last Task and how
// many polls it took.
async function pollV2(client, task, deadlineMs) {
  const t0 = performance.now();
  const statuses = [];
  let t = task;
  while (!TERMINAL.includes(t.status)) {
    assert.ok(performance.now() - t0 < deadlineMs, `still ${t.status} after ${deadlineMs} ms`);
    await sleep(t.pollInterval ?? 1000);
    t = await client.request({ method: 'tasks/get', params: { taskId: task.taskId } }, specTypeSchemas.GetTaskResult);
    assert.equal(t.taskId, task.taskId);
    statuses.push(t.status);
  }
  return { task: t, statuses };
}

// Over raw Streamable HTTP: a task of a run that prints "tick 0" to "tick 2", 0.7 s apart, with
// the progress token `token`; its id.
async function startTickingTask(raw, token) {
  const create = await raw.post({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: {
      name: 'exec',
      arguments: { code: 'import time\nfor i in range(3):\n    print("tick", i, flush=True)\n    time.sleep(0.7)', timeout_s: 30 },
      task: { ttl: 60000 },
      _meta: { progressToken: token },
    },
  });
  const taskId = create.messages.find((m) => m.id === 1)?.result?.task?.taskId;
  assert.ok(taskId, `tools/call -> ${create.status} ${create.text.slice(0, 400)}`);
  return taskId;
}

describe('tasks', { concurrency: true }, () => {
  // ------------------------------------------------------------------------------------------
  // The headline: 90 s runs with the SDK's default 60 s request timeout, all at once.
  describe(`${LONG_S} s runs, the SDK's default 60 s request timeout`, { concurrency: true, timeout: 200000 }, () => {
    for (const transport of TRANSPORTS) {
      describe(`over ${transport}`, { concurrency: true }, () => {
        let srv;
        let validate;
        before(async () => {
          srv = await startServer(transport, { env: { MCP_EXEC_MAX_CONCURRENCY: 4 } });
        });
        after(async () => {
          await srv?.stop();
        });

        it(`as a task (SDK1 callToolStream, params.task): a ${LONG_S} s run completes`, async () => {
          const conn = await srv.connect({ name: 'tasks-long-task' });
          ({ validate } = await execTool(conn.client));
          const marker = `mcp-exec-interop-task-done-${randomUUID()}`;
          const progress = [];
          const t0 = performance.now();
          const seen = [];
          // No timeout option: every request of the stream gets the SDK's default 60 s.
          const stream = conn.client.experimental.tasks.callToolStream(
            {
              name: 'exec',
              arguments: { code: `import time\ntime.sleep(${LONG_S})\nprint(${JSON.stringify(marker)})`, timeout_s: LONG_S + 30 },
            },
            undefined,
            { task: { ttl: 600000 }, onprogress: (p) => progress.push(p) },
          );
          const tracked = (async function* () {
            for await (const m of stream) {
              seen.push({ type: m.type, at: performance.now() - t0, status: m.task?.status });
              yield m;
            }
          })();
          const result = await takeResult(tracked);
          const elapsedMs = performance.now() - t0;

          const sc = checkExecResult(result, validate);
          assert.equal(sc.exit_code, 0, sc.stderr);
          assert.equal(sc.stdout, `${marker}\n`);
          assert.equal(sc.timed_out, false);
          assert.ok(sc.duration_ms >= LONG_S * 1000, `duration_ms ${sc.duration_ms}`);
          assert.ok(elapsedMs > SDK_DEFAULT_TIMEOUT_MS + 25000, `the whole call took only ${elapsedMs.toFixed(0)} ms`);

          // The task answered at once, then was polled to completed; the result names its task.
          assert.equal(seen[0]?.type, 'taskCreated', JSON.stringify(seen.slice(0, 3)));
          assert.ok(seen[0].at < 10000, `CreateTaskResult after ${seen[0].at.toFixed(0)} ms`);
          const polls = seen.filter((s) => s.type === 'taskStatus');
          assert.ok(polls.length >= 30, `${polls.length} tasks/get polls in ${elapsedMs.toFixed(0)} ms`);
          assert.equal(polls.at(-1).status, 'completed');
          const call = conn.tap.sent.find((m) => m.method === 'tools/call' && m.params?.arguments?.code?.includes(marker));
          const taskId = conn.tap.responseTo(call.id)?.result?.task?.taskId;
          assert.ok(taskId, 'no CreateTaskResult on the wire');
          assert.equal(relatedTaskId(result), taskId, 'tasks/result _meta related-task');
          const get = conn.tap.sent.filter((m) => m.method === 'tasks/get' && m.params?.taskId === taskId);
          assert.equal(get.length, polls.length);
          assert.ok(conn.tap.sent.some((m) => m.method === 'tasks/result' && m.params?.taskId === taskId));

          // stdio and SSE carry the run's progress on the connection, with the tools/call's own
          // progressToken and the related-task _meta. (Streamable HTTP has no stream for them
          // while only tasks/get polls run: see the raw tasks/result case below.)
          if (transport !== 'http') {
            const token = call.params._meta?.progressToken;
            const notes = conn.tap.received.filter((m) => m.method === 'notifications/progress');
            assert.ok(notes.length >= 10, `${notes.length} progress notifications in ${LONG_S} s`);
            for (const n of notes) {
              assert.equal(n.params.progressToken, token, JSON.stringify(n));
              assert.equal(relatedTaskId(n.params), taskId, JSON.stringify(n));
            }
            assert.equal(progress.length, notes.length, 'the SDK did not hand every notification to onprogress');
          }
          assert.deepEqual(conn.errors.map(String), []);
        });

        it(`without a task: the call fails at 60 s (RequestTimeout -32001) and the run is killed`, async () => {
          const conn = await srv.connect({ name: 'tasks-long-plain' });
          const marker = `mcp-exec-interop-task-timeout-${randomUUID()}`;
          const t0 = performance.now();
          // No timeout option: the SDK's default 60 s.
          const pending = conn.client.callTool({
            name: 'exec',
            arguments: { code: markerProgram(marker, LONG_S), timeout_s: LONG_S + 30 },
          });
          pending.catch(() => {});
          await waitUntil(() => findByMarker(marker).length > 0, 15000, `the sandboxed process ${marker}`);
          const error = await rpcError(pending, 'tools/call without a task');
          const elapsedMs = performance.now() - t0;
          assert.ok(error instanceof McpError, String(error));
          assert.equal(error.code, ErrorCode.RequestTimeout);
          assert.match(error.message, /Request timed out/);
          assert.ok(
            elapsedMs >= SDK_DEFAULT_TIMEOUT_MS - 100 && elapsedMs < SDK_DEFAULT_TIMEOUT_MS + 10000,
            `the call failed after ${elapsedMs.toFixed(0)} ms`,
          );

          // The SDK tells the server, and the server kills every process of the run (the marked
          // one runs in a session of its own, as a daemon would).
          const req = conn.tap.sent.find((m) => m.method === 'tools/call' && m.params?.arguments?.code?.includes(marker));
          assert.ok(req, 'the tools/call was not sent');
          assert.ok(
            conn.tap.sent.some((m) => m.method === 'notifications/cancelled' && m.params?.requestId === req.id),
            'the SDK sent no notifications/cancelled',
          );
          await waitUntil(() => findByMarker(marker).length === 0, 5000, 'the processes of the timed-out run to die').catch(
            (e) => {
              throw new Error(`${e.message}: still alive ${findByMarker(marker)}${srv.logs()}`);
            },
          );
          // The server's own account: the run ended cancelled, after about 60 s.
          const line = await waitUntil(
            () => logLines(srv).find((l) => l.msg === 'exec' && l.request_id === String(req.id) && l.cancelled === true),
            5000,
            `the server's exec log line for request ${req.id} with cancelled true`,
          ).catch((e) => {
            throw new Error(`${e.message}${srv.logs()}`);
          });
          // (About 60 s: not the program's 90 s end, nor its 120 s timeout; the sandbox's start
          // is not counted, so a loaded machine makes it a little shorter.)
          assert.ok(line.duration_ms >= SDK_DEFAULT_TIMEOUT_MS - 15000 && line.duration_ms < SDK_DEFAULT_TIMEOUT_MS + 10000,
            JSON.stringify(line));
          await sleep(500);
          assert.equal(conn.tap.responseTo(req.id), undefined, 'the server answered the cancelled request');
        });
      });
    }

    // The same through SDK2 (2.x), which has no task runtime: the 2025 wire by hand, every
    // request with the SDK's default 60 s timeout (SSE through its deprecated SSEClientTransport).
    for (const transport of TRANSPORTS) {
      describe(`SDK2 by hand over ${transport}`, { concurrency: true }, () => {
        let v2;
        before(async () => {
          v2 = await connectV2(transport);
        });
        after(async () => {
          await v2?.close();
        });

        it(`a ${LONG_S} s run as a task completes`, async () => {
          const { client } = v2;
          const { validate } = await execTool(client);
          const marker = `mcp-exec-interop-v2-long-task-${randomUUID()}`;
          const { task } = await client.request(
            {
              method: 'tools/call',
              params: {
                name: 'exec',
                arguments: { code: `import time\ntime.sleep(${LONG_S})\nprint(${JSON.stringify(marker)})`, timeout_s: LONG_S + 60 },
                task: { ttl: 600000 },
              },
            },
            specTypeSchemas.CreateTaskResult,
          );
          const { task: ended, statuses } = await pollV2(client, task, (LONG_S + 30) * 1000);
          assert.equal(ended.status, 'completed', JSON.stringify(ended));
          assert.ok(statuses.length >= 30, `only ${statuses.length} polls`);
          const result = await client.request({ method: 'tasks/result', params: { taskId: task.taskId } }, specTypeSchemas.CallToolResult);
          const sc = checkExecResult(result, validate);
          assert.equal(sc.exit_code, 0, sc.stderr);
          assert.equal(sc.stdout, `${marker}\n`);
          assert.ok(sc.duration_ms >= LONG_S * 1000, `duration_ms ${sc.duration_ms}`);
        });

        it(`without a task: callTool fails at 60 s (SdkError REQUEST_TIMEOUT) and the run is killed`, async () => {
          const { client, tap } = v2;
          assert.equal(DEFAULT_TIMEOUT_V2, SDK_DEFAULT_TIMEOUT_MS);
          const marker = `mcp-exec-interop-v2-task-timeout-${randomUUID()}`;
          const t0 = performance.now();
          // No timeout option: the SDK's default 60 s.
          const pending = client.callTool({ name: 'exec', arguments: { code: markerProgram(marker, LONG_S), timeout_s: LONG_S + 30 } });
          pending.catch(() => {});
          await waitUntil(() => findByMarker(marker).length > 0, 15000, `the sandboxed process ${marker}`);
          const error = await pending.then(
            (value) => assert.fail(`callTool without a task answered: ${JSON.stringify(value).slice(0, 400)}`),
            (e) => e,
          );
          const elapsedMs = performance.now() - t0;
          assert.ok(error instanceof SdkErrorV2, String(error?.stack ?? error));
          assert.equal(error.code, SdkErrorCodeV2.RequestTimeout);
          assert.match(error.message, /Request timed out/);
          assert.equal(error.data?.timeout, SDK_DEFAULT_TIMEOUT_MS);
          assert.ok(
            elapsedMs >= SDK_DEFAULT_TIMEOUT_MS - 100 && elapsedMs < SDK_DEFAULT_TIMEOUT_MS + 10000,
            `the call failed after ${elapsedMs.toFixed(0)} ms`,
          );

          // In the 2025 era SDK2 tells the server with notifications/cancelled on every transport,
          // and the server kills every process of the run.
          const req = tap.sent.find((m) => m.method === 'tools/call' && m.params?.arguments?.code?.includes(marker));
          assert.ok(req, 'the tools/call was not sent');
          assert.ok(
            tap.sent.some((m) => m.method === 'notifications/cancelled' && m.params?.requestId === req.id),
            'SDK2 sent no notifications/cancelled',
          );
          await waitUntil(() => findByMarker(marker).length === 0, 5000, 'the processes of the timed-out run to die').catch(
            (e) => {
              throw new Error(`${e.message}: still alive ${findByMarker(marker)}${v2.logs()}`);
            },
          );
          const line = await waitUntil(
            () => logLines(v2).find((l) => l.msg === 'exec' && l.request_id === String(req.id) && l.cancelled === true),
            5000,
            `the server's exec log line for request ${req.id} with cancelled true`,
          ).catch((e) => {
            throw new Error(`${e.message}${v2.logs()}`);
          });
          assert.ok(line.duration_ms >= SDK_DEFAULT_TIMEOUT_MS - 15000 && line.duration_ms < SDK_DEFAULT_TIMEOUT_MS + 10000,
            JSON.stringify(line));
          await sleep(500);
          assert.equal(tap.responseTo(req.id), undefined, 'the server answered the cancelled request');
        });
      });
    }

    // The stateless era by hand (SDK2 2.4.0 does not take a task for an answer): no request waits
    // for the run; its end comes on a listen stream (over HTTP one event stream for the whole run).
    for (const transport of ['stdio', 'http']) {
      describe(`2026-07-28 by hand over ${transport}`, { concurrency: true }, () => {
        let srv;
        before(async () => {
          srv = await startServer(transport, { env: { MCP_EXEC_MAX_CONCURRENCY: 2 } });
        });
        after(async () => {
          await srv?.stop();
        });

      it(`a ${LONG_S} s run as a task (the server decides): its end, with the result, comes on a subscriptions/listen stream`, async () => {
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

      });
    }
  });

  // ------------------------------------------------------------------------------------------
  // Short cases, one after another, beside the long ones.
  describe('short cases', { concurrency: false, timeout: 150000 }, () => {
    // SDK2 has no task runtime: the 2025 wire by hand (client.request with specTypeSchemas).
    for (const transport of TRANSPORTS) {
      describe(`SDK2 by hand over ${transport}`, () => {
        let v2;
        let client;
        before(async () => {
          v2 = await connectV2(transport);
          ({ client } = v2);
        });
        after(async () => {
          await v2?.close();
        });

        it('a 2 s task: created, polled with tasks/get to completed, tasks/result is its result, tasks/list lists it', async () => {
          assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
          assert.deepEqual(client.getServerCapabilities()?.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
          const { tools } = await client.listTools();
          const exec = tools.find((t) => t.name === 'exec');
          assert.equal(exec?.execution?.taskSupport, 'optional');
          const { validate } = await execTool(client);

          const marker = `mcp-exec-interop-v2-task-${randomUUID()}`;
          const t0 = performance.now();
          const { task } = await client.request(
            {
              method: 'tools/call',
              params: {
                name: 'exec',
                arguments: { code: `import time\ntime.sleep(2)\nprint(${JSON.stringify(marker)})`, timeout_s: 30 },
                task: { ttl: 60000 },
              },
            },
            specTypeSchemas.CreateTaskResult,
          );
          assert.ok(performance.now() - t0 < 5000, `CreateTaskResult after ${(performance.now() - t0).toFixed(0)} ms`);
          assert.equal(task.status, 'working');
          assert.equal(task.ttl, 60000);
          assert.ok(Number.isInteger(task.pollInterval) && task.pollInterval > 0, `pollInterval ${task.pollInterval}`);

          const { task: t, statuses } = await pollV2(client, task, 20000);
          assert.equal(t.status, 'completed', JSON.stringify(t));
          assert.ok(statuses.length >= 2 && statuses[0] === 'working', `tasks/get said ${statuses}`);
          assert.ok(Date.parse(t.lastUpdatedAt) >= Date.parse(task.createdAt) + 1900, JSON.stringify(t));

          const result = await client.request(
            { method: 'tasks/result', params: { taskId: task.taskId } },
            specTypeSchemas.CallToolResult,
          );
          const sc = checkExecResult(result, validate);
          assert.equal(sc.exit_code, 0, sc.stderr);
          assert.equal(sc.stdout, `${marker}\n`);
          assert.equal(relatedTaskId(result), task.taskId);

          const { tasks } = await client.request({ method: 'tasks/list', params: {} }, specTypeSchemas.ListTasksResult);
          const listed = tasks.find((x) => x.taskId === task.taskId);
          assert.ok(listed, `tasks/list: ${JSON.stringify(tasks)}`);
          assert.equal(listed.status, 'completed');
          assert.equal(listed.ttl, 60000);

          // An id nobody made: -32602.
          const missing = await rpcError(
            client.request({ method: 'tasks/get', params: { taskId: `no-such-task-${randomUUID()}` } }, specTypeSchemas.GetTaskResult),
            'tasks/get of a made-up id',
          );
          assert.ok(missing instanceof ProtocolErrorV2, String(missing));
          assert.equal(missing.code, -32602);
          assert.match(missing.message, /Failed to retrieve task: Task not found/);
        });
      });
    }

    for (const transport of TRANSPORTS) {
      describe(`task edge cases over ${transport}`, () => {
        let srv;
        let a;
        let validate;
        before(async () => {
          srv = await startServer(transport, { env: { MCP_EXEC_MAX_CONCURRENCY: 4 } });
          a = await srv.connect({ name: 'tasks-owner' });
          ({ validate } = await execTool(a.client));
        });
        after(async () => {
          await srv?.stop();
        });

        it('tasks/cancel of a running task answers cancelled once its processes are dead; tasks/result is an isError result', async () => {
          const marker = `mcp-exec-interop-task-cancel-${randomUUID()}`;
          const task = await createTask(a, { code: markerProgram(marker, 60), timeout_s: 120 });
          await waitUntil(() => findByMarker(marker).length > 0, 10000, `the sandboxed process ${marker}`);
          assert.equal((await a.client.experimental.tasks.getTask(task.taskId)).status, 'working');

          const t0 = performance.now();
          const cancelled = await a.client.experimental.tasks.cancelTask(task.taskId);
          // The answer comes after the run stopped: nothing of it is left.
          assert.deepEqual(findByMarker(marker), [], 'processes of the run outlived the tasks/cancel answer');
          assert.ok(performance.now() - t0 < 5000, `tasks/cancel took ${(performance.now() - t0).toFixed(0)} ms`);
          assert.equal(cancelled.taskId, task.taskId);
          assert.equal(cancelled.status, 'cancelled');
          assert.equal((await a.client.experimental.tasks.getTask(task.taskId)).status, 'cancelled');

          const result = await a.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: 10000 });
          assert.equal(result.isError, true, JSON.stringify(result));
          assert.match(result.content?.[0]?.text ?? '', /cancel/i, JSON.stringify(result));
          assert.equal(relatedTaskId(result), task.taskId);

          const again = await rpcError(a.client.experimental.tasks.cancelTask(task.taskId), 'a second tasks/cancel');
          assert.equal(again.code, ErrorCode.InvalidParams);
          assert.match(again.message, /Cannot cancel task: already in terminal status 'cancelled'/);

          // The server is free for the next call.
          const next = await takeResult(
            a.client.experimental.tasks.callToolStream({ name: 'exec', arguments: { code: 'print("next")' } }, undefined, {
              task: { ttl: 60000 },
              timeout: 15000,
            }),
          );
          assert.equal(checkExecResult(next, validate).stdout, 'next\n');
        });

        it('a task past MCP_EXEC_MAX_TASKS_PER_CALLER is refused with a JSON-RPC error that SDK1 shows, naming the setting', async () => {
          const one = await startServer(transport, { env: { MCP_EXEC_MAX_TASKS_PER_CALLER: 1 } });
          try {
            const c = await one.connect({ name: 'tasks-limit' });
            const marker = `mcp-exec-interop-task-limit-${randomUUID()}`;
            const first = await createTask(c, { code: markerProgram(marker, 60), timeout_s: 120 });
            const refused = await rpcError(
              takeResult(
                c.client.experimental.tasks.callToolStream({ name: 'exec', arguments: { code: 'print(1)' } }, undefined, {
                  task: { ttl: 60000 },
                  timeout: 15000,
                }),
              ),
              'a second task of the same caller',
            );
            assert.match(refused.message, /MCP_EXEC_MAX_TASKS_PER_CALLER/, refused.message);
            assert.equal((await c.client.experimental.tasks.cancelTask(first.taskId)).status, 'cancelled');
            assert.deepEqual(findByMarker(marker), []);
          } finally {
            await one.stop();
          }
        });

        it('tasks/cancel of a completed task is -32602, and the task keeps its result', async () => {
          const task = await createTask(a, { code: 'print("done")' });
          assert.equal((await waitTerminal(a, task.taskId)).status, 'completed');
          const error = await rpcError(a.client.experimental.tasks.cancelTask(task.taskId), 'tasks/cancel of a completed task');
          assert.equal(error.code, ErrorCode.InvalidParams);
          assert.match(error.message, /Cannot cancel task: already in terminal status 'completed'/);
          assert.equal((await a.client.experimental.tasks.getTask(task.taskId)).status, 'completed');
          const result = await a.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: 10000 });
          assert.equal(checkExecResult(result, validate).stdout, 'done\n');
        });

        it('a task in an exec session ends cancelled when the session is closed, its processes dead', async () => {
          const opened = await a.client.callTool({ name: 'exec', arguments: { code: 'x = 1', session: 'new' } });
          const handle = opened.structuredContent?.session;
          assert.ok(handle, JSON.stringify(opened));
          const marker = `mcp-exec-interop-task-session-${randomUUID()}`;
          const task = await createTask(a, { code: markerProgram(marker, 60), session: handle, timeout_s: 120 });
          await waitUntil(() => findByMarker(marker).length > 0, 10000, `the sandboxed process ${marker}`);
          const closed = await a.client.callTool({ name: 'session_close', arguments: { session: handle } });
          assert.equal(closed.structuredContent?.closed, true, JSON.stringify(closed));
          const ended = await waitTerminal(a, task.taskId, 10000);
          assert.equal(ended.status, 'cancelled', JSON.stringify(ended));
          assert.match(ended.statusMessage ?? '', /session was closed/, JSON.stringify(ended));
          await waitUntil(() => findByMarker(marker).length === 0, 5000, `the processes of ${marker} to die`);
        });

        it('tasks/cancel of a call in an exec session interrupts the call, as a plain cancel does; the session and what it started live on until it closes', async () => {
          const opened = await a.client.callTool({ name: 'exec', arguments: { code: 'x = 1', session: 'new' } });
          const handle = opened.structuredContent?.session;
          assert.ok(handle, JSON.stringify(opened));
          const marker = `mcp-exec-interop-task-session-cancel-${randomUUID()}`;
          const task = await createTask(a, { code: markerProgram(marker, 60), session: handle, timeout_s: 120 });
          await waitUntil(() => findByMarker(marker).length > 0, 10000, `the sandboxed process ${marker}`);
          const cancelled = await a.client.experimental.tasks.cancelTask(task.taskId);
          assert.equal(cancelled.status, 'cancelled', JSON.stringify(cancelled));
          const result = await a.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: 10000 });
          assert.equal(result.isError, true, JSON.stringify(result));
          // The call has returned (a session runs one call at a time); its state and the process
          // its code started in the background are still there.
          const t0 = performance.now();
          const next = await a.client.callTool({ name: 'exec', arguments: { code: 'print(x)', session: handle } }, undefined, { timeout: 10000 });
          assert.equal(checkExecResult(next, validate).stdout, '1\n');
          assert.ok(performance.now() - t0 < 5000, 'the next call waited for the cancelled one');
          assert.ok(findByMarker(marker).length > 0, 'the process the session started died with the call');
          await a.client.callTool({ name: 'session_close', arguments: { session: handle } });
          await waitUntil(() => findByMarker(marker).length === 0, 5000, `the processes of ${marker} to die with the session`);
        });

        it('a malformed params.task (ttl a string, negative; task not an object) is -32602 and makes no task', async () => {
          const kept = (await a.client.experimental.tasks.listTasks()).tasks.length;
          const args = { code: 'print("must not run")' };
          for (const task of [{ ttl: 'soon' }, { ttl: -1 }, { ttl: -60000 }]) {
            const error = await rpcError(
              a.client.request({ method: 'tools/call', params: { name: 'exec', arguments: args } }, CreateTaskResultSchema, {
                task,
                timeout: 10000,
              }),
              `params.task ${JSON.stringify(task)}`,
            );
            assert.equal(error.code, ErrorCode.InvalidParams, `${JSON.stringify(task)}: ${error.message}`);
            assert.match(error.message, /ttl/, JSON.stringify(task));
          }
          const notObject = await rpcError(
            a.client.request(
              { method: 'tools/call', params: { name: 'exec', arguments: args, task: 'yes' } },
              CreateTaskResultSchema,
              { timeout: 10000 },
            ),
            'params.task "yes"',
          );
          assert.equal(notObject.code, ErrorCode.InvalidParams, notObject.message);
          assert.equal((await a.client.experimental.tasks.listTasks()).tasks.length, kept, 'a refused call made a task');
          assert.ok(!logLines(srv).some((l) => l.msg === 'exec' && /must not run/.test(JSON.stringify(l))));
        });

        it('an unknown taskId is -32602 "Failed to retrieve task: Task not found" for tasks/get, tasks/result and tasks/cancel', async () => {
          const id = `no-such-task-${randomUUID()}`;
          const tasks = a.client.experimental.tasks;
          for (const [what, call] of [
            ['tasks/get', () => tasks.getTask(id)],
            ['tasks/result', () => tasks.getTaskResult(id, CallToolResultSchema, { timeout: 10000 })],
            ['tasks/cancel', () => tasks.cancelTask(id)],
          ]) {
            const error = await rpcError(call(), what);
            assert.equal(error.code, ErrorCode.InvalidParams, `${what}: ${error.message}`);
            assert.match(error.message, NOT_FOUND, what);
          }
        });

        if (transport !== 'stdio') {
          it("another session's taskId is not found, exactly as an unknown one, and its cancel does nothing", async () => {
            const b = await srv.connect({ name: 'tasks-other-session' });
            const marker = `mcp-exec-interop-task-foreign-${randomUUID()}`;
            const task = await createTask(a, { code: markerProgram(marker, 30), timeout_s: 60 });
            await waitUntil(() => findByMarker(marker).length > 0, 10000, `the sandboxed process ${marker}`);
            if (transport === 'http') {
              assert.ok(a.transport.sessionId && b.transport.sessionId && a.transport.sessionId !== b.transport.sessionId);
            }
            const made = `${task.taskId.slice(0, 4)}${randomUUID().replace(/-/g, '')}`.slice(0, task.taskId.length);
            const theirs = b.client.experimental.tasks;
            for (const [what, call] of [
              ['tasks/get', (id) => theirs.getTask(id)],
              ['tasks/result', (id) => theirs.getTaskResult(id, CallToolResultSchema, { timeout: 10000 })],
              ['tasks/cancel', (id) => theirs.cancelTask(id)],
            ]) {
              const foreign = await rpcError(call(task.taskId), `${what} of another session's task`);
              const unknown = await rpcError(call(made), `${what} of a made-up id`);
              assert.equal(foreign.code, ErrorCode.InvalidParams, `${what}: ${foreign.message}`);
              assert.match(foreign.message, NOT_FOUND, what);
              assert.deepEqual({ code: foreign.code, message: foreign.message, data: foreign.data },
                { code: unknown.code, message: unknown.message, data: unknown.data }, what);
            }
            assert.ok(!(await theirs.listTasks()).tasks.some((t) => t.taskId === task.taskId), "tasks/list shows another session's task");
            // The owner's task runs on, untouched.
            assert.ok(findByMarker(marker).length > 0, "another session's tasks/cancel stopped the run");
            assert.equal((await a.client.experimental.tasks.getTask(task.taskId)).status, 'working');
            assert.ok((await a.client.experimental.tasks.listTasks()).tasks.some((t) => t.taskId === task.taskId));
            assert.equal((await a.client.experimental.tasks.cancelTask(task.taskId)).status, 'cancelled');
            assert.deepEqual(findByMarker(marker), []);
          });
        }

        if (transport === 'http') {
          it("a tasks/result opened while the task runs carries its progress, with the tools/call's progressToken", async () => {
            const raw = new RawHttp(srv.mcpUrl);
            const init = await raw.initialize();
            assert.equal(init.status, 200);
            try {
              const token = `tok-${randomUUID()}`;
              const taskId = await startTickingTask(raw, token);
              const t0 = performance.now();
              const reply = await raw.post({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } }, {}, 30000);
              assert.ok(performance.now() - t0 > 1000, 'tasks/result did not wait for the run');
              const res = reply.messages.find((m) => m.id === 2);
              assert.ok(res?.result, `tasks/result -> ${reply.status} ${reply.text.slice(0, 400)}`);
              assert.equal(relatedTaskId(res.result), taskId);
              assert.equal(res.result.structuredContent?.stdout, 'tick 0\ntick 1\ntick 2\n');
              const notes = reply.messages.filter((m) => m.method === 'notifications/progress');
              assert.ok(notes.length >= 2, `progress on the tasks/result stream: ${JSON.stringify(reply.messages).slice(0, 600)}`);
              for (const n of notes) {
                assert.equal(n.params.progressToken, token, JSON.stringify(n));
                assert.equal(relatedTaskId(n.params), taskId, JSON.stringify(n));
              }
              assert.ok(notes.some((n) => /tick 1/.test(n.params.message ?? '')), JSON.stringify(notes));
              // Progress values only grow.
              const values = notes.map((n) => n.params.progress);
              assert.deepEqual(values, [...values].sort((x, y) => x - y));
            } finally {
              await raw.delete().catch(() => {});
            }
          });

          it("with no tasks/result, a task's progress and its end come on the session's GET stream; a new GET replaces the old; DELETE ends it", async () => {
            const raw = new RawHttp(srv.mcpUrl);
            assert.equal((await raw.initialize()).status, 200);
            const get = () =>
              fetch(srv.mcpUrl, { headers: raw.baseHeaders({ 'Content-Type': null, Accept: 'text/event-stream' }), signal: AbortSignal.timeout(60000) });
            const old = await get();
            assert.equal(old.status, 200);
            assert.match(old.headers.get('content-type') ?? '', /^text\/event-stream/);
            // A reconnecting client (its old stream dropped unnoticed) gets the stream; the old one ends.
            const stream = await get();
            assert.equal(stream.status, 200, 'a second GET of the session');
            await old.arrayBuffer();
            const received = [];
            const reading = (async () => {
              for await (const ev of sseEvents(stream.body)) if (ev.event === 'message' && ev.data) received.push(JSON.parse(ev.data));
            })();
            const token = `tok-${randomUUID()}`;
            const taskId = await startTickingTask(raw, token);
            await waitUntil(() => received.some((m) => m.method === 'notifications/tasks/status'), 30000, 'the task status on the GET stream');
            const status = received.find((m) => m.method === 'notifications/tasks/status');
            assert.equal(status.params.taskId, taskId);
            assert.equal(status.params.status, 'completed');
            const notes = received.filter((m) => m.method === 'notifications/progress');
            assert.ok(notes.some((n) => /tick 1/.test(n.params.message ?? '')), JSON.stringify(received).slice(0, 600));
            for (const n of notes) {
              assert.equal(n.params.progressToken, token);
              assert.equal(relatedTaskId(n.params), taskId);
            }
            assert.ok(!received.some((m) => 'id' in m), 'a request or a response on the standalone stream');
            assert.equal(await raw.delete(), 200);
            await reading; // the session's end ends its stream
          });
        }

        it('a caller that goes away takes its running tasks with it: their processes die', async () => {
          const c = await srv.connect({ name: 'tasks-leaver' });
          const marker = `mcp-exec-interop-task-leaver-${randomUUID()}`;
          await createTask(c, { code: markerProgram(marker, 60), timeout_s: 120 });
          await waitUntil(() => findByMarker(marker).length > 0, 10000, `the sandboxed process ${marker}`);
          if (transport === 'http') {
            await c.transport.terminateSession(); // DELETE /mcp with its Mcp-Session-Id
          } else {
            await c.client.close(); // stdio: EOF on the server's stdin; SSE: the stream closes
          }
          await waitUntil(() => findByMarker(marker).length === 0, 5000, "the departed caller's task processes to die").catch(
            (e) => {
              throw new Error(`${e.message}: still alive ${findByMarker(marker)}${srv.logs()}`);
            },
          );
        });
      });
    }

    // The stateless era by hand: tasks/cancel, as in 2025-11-25, answers once the run has stopped.
    for (const transport of ['stdio', 'http']) {
      describe(`2026-07-28 by hand over ${transport}`, () => {
        let srv;
        before(async () => {
          srv = await startServer(transport, { env: { MCP_EXEC_MAX_CONCURRENCY: 2 } });
        });
        after(async () => {
          await srv?.stop();
        });

        it('tasks/cancel of a running task answers once every process of its run is dead; tasks/get then says cancelled', async () => {
          const w = await wire(transport, srv);
          // A failure must not leave the stdio server running: the file would never end.
          try {
            const marker = `mcp-exec-interop-stateless-cancel-${randomUUID()}`;
            const created = await w.call(
              request(1, 'tools/call', { name: 'exec', arguments: { code: markerProgram(marker, 60), timeout_s: 120 } }),
            );
            assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
            const { taskId } = created.result;
            await waitUntil(() => findByMarker(marker).length > 0, 10000, `the sandboxed process ${marker}`);
            const running = await w.call(request(2, 'tasks/get', { taskId }));
            assert.equal(running.result?.status, 'working', JSON.stringify(running));

            const t0 = performance.now();
            const cancelled = await w.call(request(3, 'tasks/cancel', { taskId }));
            // The answer comes after the run stopped: nothing of it is left.
            assert.deepEqual(findByMarker(marker), [], 'processes of the run outlived the tasks/cancel answer');
            assert.ok(performance.now() - t0 < 5000, `tasks/cancel took ${(performance.now() - t0).toFixed(0)} ms`);
            assert.equal(cancelled.result?.resultType, 'complete', JSON.stringify(cancelled));

            const got = await w.call(request(4, 'tasks/get', { taskId }));
            assert.equal(got.result?.resultType, 'complete', JSON.stringify(got));
            assert.equal(got.result.taskId, taskId);
            assert.equal(got.result.status, 'cancelled', JSON.stringify(got));
          } catch (e) {
            await w.end().catch(() => {});
            throw e;
          }
          await w.end();
        });
      });
    }

    // MCP_EXEC_MAX_TASKS counts the server's tasks, whoever made them: on Streamable HTTP a
    // 2025-11-25 session and the stateless credential are two callers, each below its own limit.
    describe('the server-wide task limit over http', () => {
      it('a server that keeps MCP_EXEC_MAX_TASKS tasks refuses the next, naming the setting: a JSON-RPC error in 2025-11-25, a tool error in 2026-07-28', async () => {
        const full = await startServer('http', {
          env: { MCP_EXEC_MAX_TASKS: 2, MCP_EXEC_MAX_TASKS_PER_CALLER: 4, MCP_EXEC_MAX_CONCURRENCY: 2 },
        });
        try {
          const c = await full.connect({ name: 'tasks-server-full' });
          const w = await wire('http', full);
          const markers = [1, 2].map((n) => `mcp-exec-interop-task-full-${n}-${randomUUID()}`);
          const first = await createTask(c, { code: markerProgram(markers[0], 60), timeout_s: 120 });
          const second = await w.call(
            request(1, 'tools/call', { name: 'exec', arguments: { code: markerProgram(markers[1], 60), timeout_s: 120 } }),
          );
          assert.equal(second.result?.resultType, 'task', JSON.stringify(second));
          for (const m of markers) await waitUntil(() => findByMarker(m).length > 0, 10000, `the sandboxed process ${m}`);

          // The refusal names the total, not the per-caller limit neither caller has reached.
          const setting = /\(MCP_EXEC_MAX_TASKS\)/;
          const refused = await rpcError(
            c.client.request({ method: 'tools/call', params: { name: 'exec', arguments: { code: 'print("must not run")' } } }, CreateTaskResultSchema, {
              task: { ttl: 60000 },
              timeout: 15000,
            }),
            'a third task in a server that keeps two',
          );
          assert.equal(refused.code, ErrorCode.InternalError, refused.message);
          assert.match(refused.message, setting, refused.message);
          const toolError = await w.call(request(2, 'tools/call', { name: 'exec', arguments: { code: 'print("must not run")' } }));
          assert.equal(toolError.result?.resultType, 'complete', JSON.stringify(toolError));
          assert.equal(toolError.result.isError, true, JSON.stringify(toolError));
          assert.match(toolError.result.content?.[0]?.text ?? '', setting, JSON.stringify(toolError));
          assert.ok(!logLines(full).some((l) => l.msg === 'exec' && /must not run/.test(JSON.stringify(l))), 'a refused call ran');

          // Cancelled, the two end and make room: the next task is taken.
          assert.equal((await c.client.experimental.tasks.cancelTask(first.taskId)).status, 'cancelled');
          const cancelled = await w.call(request(3, 'tasks/cancel', { taskId: second.result.taskId }));
          assert.equal(cancelled.result?.resultType, 'complete', JSON.stringify(cancelled));
          for (const m of markers) assert.deepEqual(findByMarker(m), [], `processes of ${m} outlived the tasks/cancel answer`);
          const next = await w.call(request(4, 'tools/call', { name: 'exec', arguments: { code: 'print("room")' } }));
          assert.equal(next.result?.resultType, 'task', JSON.stringify(next));
        } finally {
          await full.stop();
        }
      });
    });
  });
});
