// The stateless era's (2026-07-28) subscriptions/listen, and the tasks extension's
// notifications/tasks on it, on stdio and Streamable HTTP.
//
// SDK2 (@modelcontextprotocol/client 2.4.0) opens and closes subscriptions (client.listen), but
// does not take a task for an answer ("Unsupported result type 'task' for tools/call") and its
// listen filter has no taskIds: the task cases speak the wire by hand (lib/stateless.mjs). A 90 s
// run as a task, its end told on a listen stream, is among tasks.test.mjs's long runs.
//  - SDK2's listen() is acknowledged (a filter this server has nothing for: an empty one), and
//    its close() reaches the server on each transport: 70 in a row, past the 64 one client may
//    keep open, each open at once;
//  - over HTTP, a server that stops ends an open SDK2 subscription with its response, which the
//    SDK reports as 'graceful';
//  - over HTTP, a listen that accepts JSON only is refused (-32600, naming text/event-stream),
//    and taskIds without the extension declared is -32021.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { BIN, closeV2Client, startServer } from '../lib/server.mjs';
import { MODERN, TASKS, postHttp, request, wire } from '../lib/stateless.mjs';

describe('subscriptions/listen (2026-07-28)', { concurrency: true, timeout: 120000 }, () => {
  for (const transport of ['stdio', 'http']) {
    describe(`over ${transport}`, { concurrency: true }, () => {
      let srv;
      before(async () => {
        srv = await startServer(transport, { env: { MCP_EXEC_MAX_CONCURRENCY: 4 } });
      });
      after(async () => {
        await srv?.stop();
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
