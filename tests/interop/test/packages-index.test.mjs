// Packages on demand from a PEP 503 index over HTTPS, with the SDK client: the test starts
// tests/packages/index_server.py on 127.0.0.1 (a test CA made by its make-certs, the good
// wheels of tests/packages/make_wheels.py; mcpx-b's page has absolute links, the others
// relative ones; mcpx-fresh-0's page lies about its sha256), and a server told
// MCP_EXEC_PACKAGE_INDEX (that index), MCP_EXEC_PACKAGE_INDEX_CA (the test CA) and a fresh
// MCP_EXEC_PACKAGE_CACHE runs `exec` with `packages: ["mcpx-a"]` over stdio and over Streamable
// HTTP: the chain mcpx-a -> mcpx-b -> mcpx-c comes from the index (its pages and files asked
// for, by mcp-exec, not by the sandbox) into one read-only layer at /usr/lib/mcp-exec/packages,
// the result's `packages` lists the three sorted by name with their files' sha256, progress
// notifications arrive during the first install (before the result), and the second call comes
// from the cache (the same list, no new layer, no request to the index). A session opened with
// `session: "new"` and `packages` sees them in its later calls, and a call that passes
// `packages` to the open session is a tool error that says why. A page whose sha256 is wrong is
// a tool error naming sha256 and the file, and leaves no layer.
//
// HTTPS_PROXY and https_proxy are removed from the servers' environment (the index is on
// loopback); tests/packages/check_index covers the proxies, credentials and the hostile index.
// lib/packages.mjs holds what this test shares with packages.test.mjs.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';

import { callExec } from '../lib/exec.mjs';
import {
  CALL, RUN, checkPackagesArgument, checkPackagesResult, checkProgress, checkRunWithoutPackages,
  checkSessionRefusesPackages, installChain, layers, makeWork, removeWork, sessionExpected,
  startPackagesServer,
} from '../lib/packages.mjs';
import { sleep } from '../lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const INDEX_SERVER = path.resolve(here, '../../packages/index_server.py');
const LYING = 'mcpx_fresh_0-1.0-py3-none-any.whl';

let work;
let wheelhouse;
let certs;
let index; // { proc, url, log }

// Waits for index_server.py to write its port.
async function waitPort(file, proc) {
  for (let i = 0; i < 400; i++) {
    if (existsSync(file)) {
      const text = readFileSync(file, 'utf8').trim();
      if (text) return Number(text);
    }
    if (proc.exitCode !== null) throw new Error(`index_server.py exited ${proc.exitCode}`);
    await sleep(50);
  }
  throw new Error('index_server.py did not write its port');
}

// The index's request log: one object a request.
function indexRequests() {
  if (!existsSync(index.log)) return [];
  return readFileSync(index.log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

before(async () => {
  // A short path: the server puts a socket under the cache, and a socket's path is short.
  ({ work, wheelhouse } = makeWork('/tmp/mcpx-ii-'));
  certs = path.join(work, 'certs');
  execFileSync('/usr/bin/python3', [INDEX_SERVER, 'make-certs', certs], { encoding: 'utf8' });
  chmodSync(certs, 0o755);
  const portFile = path.join(work, 'index.port');
  const log = path.join(work, 'index.jsonl');
  const proc = spawn('/usr/bin/python3', [INDEX_SERVER, 'serve', '--root', wheelhouse,
    '--port-file', portFile, '--cert', path.join(certs, 'server.pem'),
    '--key', path.join(certs, 'server.key'), '--log', log,
    '--project', 'mcpx-b=absolute', '--project', 'mcpx-fresh-0=lying-hash'], { stdio: 'ignore' });
  const port = await waitPort(portFile, proc);
  index = { proc, url: `https://127.0.0.1:${port}/simple/`, log };
});
after(() => {
  index?.proc.kill('SIGTERM');
  removeWork(work);
});

for (const transport of ['stdio', 'http']) {
  describe(`packages from an index over ${transport}`, { timeout: 300000 }, () => {
    const ctx = {};
    let first;

    before(() => startPackagesServer(ctx, transport, work, `c-${transport}-`, {
      MCP_EXEC_PACKAGE_INDEX: index.url,
      MCP_EXEC_PACKAGE_INDEX_CA: path.join(certs, 'ca.pem'),
      HTTPS_PROXY: undefined,
      https_proxy: undefined,
    }));
    after(async () => {
      await ctx.srv?.stop();
    });

    it('tools/list: exec takes packages, an array of strings', () => {
      checkPackagesArgument(ctx.tool);
    });

    it('mcpx-a: the first install sends progress, then the chain from the index in one new layer', async () => {
      const seen = indexRequests().length;
      const notes = [];
      first = await installChain(ctx.conn, ctx.validate, wheelhouse, notes);
      assert.equal(layers(ctx.cache).length, 1, `layers: ${layers(ctx.cache)}${ctx.srv.logs()}`);
      checkProgress(ctx.conn, notes);
      // The index was asked for the three pages and the three files.
      const paths = indexRequests().slice(seen).map((r) => r.path);
      for (const p of ['/simple/mcpx-a/', '/simple/mcpx-b/', '/simple/mcpx-c/',
        '/files/mcpx_a-1.0-py3-none-any.whl', '/files/mcpx_b-1.0-py3-none-any.whl',
        '/files/mcpx_c-1.0-py3-none-any.whl']) {
        assert.ok(paths.includes(p), `the index was not asked for ${p}: ${JSON.stringify(paths)}`);
      }
    });

    it('mcpx-a again: the same list, from the cache (no new layer, no request to the index)', async () => {
      assert.ok(first, 'the first call failed');
      const before = layers(ctx.cache);
      const seen = indexRequests().length;
      const sc = await installChain(ctx.conn, ctx.validate, wheelhouse);
      assert.deepEqual(sc.packages, first.packages);
      assert.deepEqual(layers(ctx.cache), before);
      assert.deepEqual(indexRequests().slice(seen).map((r) => r.path), [], 'requests to the index');
    });

    it('a run without packages does not see the layer', async () => {
      await checkRunWithoutPackages(ctx.conn, ctx.validate, wheelhouse);
    });

    it('a page whose sha256 is not the file\'s: a tool error naming sha256 and the file, no new layer', async () => {
      const before = layers(ctx.cache);
      const { result } = await callExec(ctx.conn, ctx.validate,
        { code: 'print(1)', packages: ['mcpx-fresh-0'], ...RUN }, { ...CALL, expectError: true });
      assert.equal(result.isError, true, `not a tool error: ${JSON.stringify(result).slice(0, 500)}`);
      const text = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
      assert.match(text, /sha256/i);
      assert.ok(text.includes(LYING), `the text does not name ${LYING}: ${text}`);
      assert.deepEqual(layers(ctx.cache), before);
    });

    describe('a session opened with packages', () => {
      let session;

      it('session "new" with packages: mcpx-hello==2.0 installs from the index and imports', async () => {
        const { result } = await callExec(ctx.conn, ctx.validate,
          { code: 'import mcpx_hello\nprint(mcpx_hello.VALUE, mcpx_hello.__file__)', packages: ['mcpx-hello==2.0'], session: 'new', ...RUN },
          { ...CALL, expectError: true });
        const sc = checkPackagesResult(wheelhouse, result, ctx.validate, [['mcpx-hello', '2.0']]);
        assert.equal(sc.exit_code, 0, sc.stderr);
        assert.match(sc.stdout, /^hello 2\.0 \/usr\/lib\/mcp-exec\/packages\//);
        assert.match(sc.session ?? '', /^s[0-9a-f]{8}_[0-9a-f]{32}$/);
        session = sc.session;
      });

      it('a later call with the handle sees the packages', async () => {
        assert.ok(session, 'no session was opened');
        const { result } = await callExec(ctx.conn, ctx.validate,
          { code: '(mcpx_hello.VALUE, mcpx_hello.__file__)', session, ...RUN }, { ...CALL, expectError: true });
        const sc = checkPackagesResult(wheelhouse, result, ctx.validate,
          sessionExpected(result, [['mcpx-hello', '2.0']]));
        assert.equal(sc.session, session);
        assert.match(sc.result ?? '', /^\('hello 2\.0', '\/usr\/lib\/mcp-exec\/packages\//, JSON.stringify(sc));
      });

      it('packages on a call to the open session is a tool error about the session', async () => {
        await checkSessionRefusesPackages(ctx.conn, session);
      });
    });
  });
}
