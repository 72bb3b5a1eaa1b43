// Output while it runs (issue 9, point 4), the same cases on every transport: a running
// program's stdout and stderr reach the client before the result, in notifications/progress
// (with a progressToken: U3) and, once the client has set a level, in notifications/message
// (logging). Rate-limited (at most one progress notification per 100 ms), bounded (4 KiB),
// valid UTF-8; the result is unchanged.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { EmptyResultSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { callExec, execTool, utf8Bytes } from '../lib/exec.mjs';
import { TRANSPORTS, startServer } from '../lib/server.mjs';

// A line every 200 ms for 2 s, one line on stderr halfway.
const TICKER = `import sys, time
for i in range(10):
    print(f"line {i}", flush=True)
    if i == 5:
        print("halfway", file=sys.stderr, flush=True)
    time.sleep(0.2)`;
// Prints `word` and runs on for longer than a notification takes to be due.
const LINGER = (word) => `import time\nprint(${JSON.stringify(word)}, flush=True)\ntime.sleep(0.5)`;
const TICKER_STDOUT = Array.from({ length: 10 }, (_, i) => `line ${i}\n`).join('');

// The text of one stream in a progress message ("[stdout] ..." runs, maybe after a
// "[N bytes skipped]" line). A label always starts a line; the line break before it belongs to
// the previous run when that run's text ended a line, which holds for the programs here.
function streamText(message, stream) {
  let out = '';
  for (const run of message.split(/(?<=\n)(?=\[std(?:out|err)\] )/)) {
    if (run.startsWith(`[${stream}] `)) out += run.slice(stream.length + 3);
  }
  return out;
}

for (const transport of TRANSPORTS) {
  describe(`live output over ${transport}`, { timeout: 120000 }, () => {
    let srv;

    before(async () => {
      srv = await startServer(transport);
    });
    after(async () => {
      await srv?.stop();
    });

    it('progress: a line every 200 ms for 2 s arrives in progress messages before the result', async () => {
      const conn = await srv.connect({ name: 'live-progress' });
      const { validate } = await execTool(conn.client);
      const notes = [];
      const t0 = performance.now();
      const { sc, elapsedMs } = await callExec(conn, validate, { code: TICKER }, {
        onprogress: (p) => notes.push({ ...p, at: performance.now() - t0 }),
      });
      assert.equal(sc.stdout, TICKER_STDOUT, 'the result is unchanged');
      assert.equal(sc.stderr, 'halfway\n');

      const messages = notes.map((n) => n.message ?? '');
      const streamed = messages.map((m) => streamText(m, 'stdout')).join('');
      assert.ok(TICKER_STDOUT.startsWith(streamed), `streamed stdout is not the program's: ${JSON.stringify(messages)}`);
      const lines = streamed.split('\n').filter(Boolean);
      assert.ok(lines.length >= 8, `only ${lines.length} lines streamed: ${JSON.stringify(messages)}`);
      assert.equal(messages.map((m) => streamText(m, 'stderr')).join(''), 'halfway\n');
      // Streamed, not collected at the end: "line 0" came well over a second before the result.
      const first = notes.find((n) => (n.message ?? '').includes('line 0'));
      assert.ok(first, 'no progress message carried line 0');
      assert.ok(elapsedMs - first.at > 1200, `line 0 at ${first.at.toFixed(0)} ms, result at ${elapsedMs.toFixed(0)} ms`);
      for (let i = 0; i < notes.length; i++) {
        if (i > 0) assert.ok(notes[i].progress > notes[i - 1].progress, `progress not increasing: ${JSON.stringify(notes)}`);
        assert.ok(utf8Bytes(messages[i]) <= 4096, `a message of ${utf8Bytes(messages[i])} bytes`);
      }
      // At most about 10 a second (the transport may bunch them, so count, not gaps).
      assert.ok(notes.length <= Math.ceil(elapsedMs / 100) + 2, `${notes.length} notifications in ${elapsedMs.toFixed(0)} ms`);

      // On the wire: every progress notification of the call before its result.
      const req = conn.tap.sent.filter((m) => m.method === 'tools/call').at(-1);
      const token = req.params._meta.progressToken;
      const resultAt = conn.tap.received.findIndex((m) => m.id === req.id && 'result' in m);
      const lastProgressAt = conn.tap.received.findLastIndex(
        (m) => m.method === 'notifications/progress' && m.params?.progressToken === token,
      );
      assert.ok(resultAt > lastProgressAt && lastProgressAt >= 0);
    });

    it('progress: a character split between two writes is never split between two messages', async () => {
      const conn = await srv.connect({ name: 'live-utf8' });
      const { validate } = await execTool(conn.client);
      const notes = [];
      const code = `import os, time
os.write(1, b"price: \\xe2\\x82")
time.sleep(0.5)
os.write(1, b"\\xac\\n")
time.sleep(0.5)`;
      const { sc } = await callExec(conn, validate, { code }, { onprogress: (p) => notes.push(p) });
      assert.equal(sc.stdout, 'price: \u20ac\n');
      const messages = notes.map((n) => n.message ?? '');
      assert.ok(!messages.some((m) => m.includes('\ufffd')), `a replacement character: ${JSON.stringify(messages)}`);
      assert.equal(messages.map((m) => streamText(m, 'stdout')).join(''), 'price: \u20ac\n', JSON.stringify(messages));
    });

    it('progress: a flood is bounded to 4 KiB per message with a skip marker, the result keeps all', async () => {
      const conn = await srv.connect({ name: 'live-flood' });
      const { validate } = await execTool(conn.client);
      const notes = [];
      const code = `import sys, time
sys.stdout.write("x" * 200000 + "END\\n")
sys.stdout.flush()
time.sleep(0.6)`;
      const { sc } = await callExec(conn, validate, { code }, { onprogress: (p) => notes.push(p) });
      assert.equal(sc.stdout.length, 200004);
      const withOutput = notes.map((n) => n.message ?? '').filter((m) => m.includes('[stdout] '));
      assert.ok(withOutput.length >= 1, JSON.stringify(notes).slice(0, 500));
      for (const m of withOutput) assert.ok(utf8Bytes(m) <= 4096, `a message of ${utf8Bytes(m)} bytes`);
      assert.ok(withOutput.some((m) => /^\[\d+ bytes skipped\]\n/.test(m)), 'no skip marker');
      assert.ok(withOutput.at(-1).endsWith('xEND\n'), 'the newest output is kept');
    });

    it('logging: declared; nothing before setLevel; after setLevel info, stdout and stderr as notifications/message', async () => {
      const conn = await srv.connect({ name: 'live-logging' });
      const { validate } = await execTool(conn.client);
      assert.deepEqual(conn.client.getServerCapabilities().logging, {});
      const logs = [];
      conn.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
      const isLog = (m) => m.method === 'notifications/message';

      // Never asked: none, even with output that lasts long enough to be sent.
      const { sc: quiet } = await callExec(conn, validate, { code: LINGER('unasked') });
      assert.equal(quiet.stdout, 'unasked\n');
      assert.deepEqual(conn.tap.received.filter(isLog), []);

      // An invalid level is -32602 and changes nothing.
      await assert.rejects(
        conn.client.request({ method: 'logging/setLevel', params: { level: 'verbose' } }, EmptyResultSchema),
        (e) => e.code === -32602,
      );

      await conn.client.setLoggingLevel('info');
      const before = conn.tap.received.length;
      const { sc } = await callExec(conn, validate, { code: TICKER });
      assert.equal(sc.stdout, TICKER_STDOUT, 'the result is unchanged');
      for (const p of logs) {
        assert.equal(p.level, 'info');
        assert.ok(p.logger === 'stdout' || p.logger === 'stderr', JSON.stringify(p));
        assert.equal(typeof p.data, 'string');
        assert.ok(utf8Bytes(p.data) <= 4096);
      }
      const out = logs.filter((p) => p.logger === 'stdout').map((p) => p.data).join('');
      assert.ok(TICKER_STDOUT.startsWith(out), `logged stdout is not the program's: ${JSON.stringify(logs)}`);
      assert.ok(out.split('\n').filter(Boolean).length >= 8, `only ${JSON.stringify(out)} logged`);
      assert.equal(logs.filter((p) => p.logger === 'stderr').map((p) => p.data).join(''), 'halfway\n');
      // All of them before the result, on the wire.
      const req = conn.tap.sent.filter((m) => m.method === 'tools/call').at(-1);
      const received = conn.tap.received.slice(before);
      const resultAt = received.findIndex((m) => m.id === req.id && 'result' in m);
      assert.ok(resultAt > received.findLastIndex(isLog));

      // Above info: output is not sent.
      await conn.client.setLoggingLevel('warning');
      const count = logs.length;
      const { sc: again } = await callExec(conn, validate, { code: LINGER('filtered') });
      assert.equal(again.stdout, 'filtered\n');
      assert.equal(logs.length, count, JSON.stringify(logs.slice(count)));
    });
  });
}
