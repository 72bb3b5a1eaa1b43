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
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';

import { callExec, checkExecResult, execTool, expectToolError } from '../lib/exec.mjs';
import { sleep, startServer } from '../lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const MAKE_WHEELS = path.resolve(here, '../../packages/make_wheels.py');
const INDEX_SERVER = path.resolve(here, '../../packages/index_server.py');
const PREFIX = '/usr/lib/mcp-exec/packages/';
const RUN = { timeout_s: 60 };
const CALL = { timeout: 180000 };
const CHAIN = [['mcpx-a', '1.0'], ['mcpx-b', '1.0'], ['mcpx-c', '1.0']];
const IMPORT_CHAIN = `import json, mcpx_a, mcpx_b, mcpx_c
print(json.dumps({m.__name__: [m.VALUE, m.__file__] for m in (mcpx_a, mcpx_b, mcpx_c)}))`;
const LYING = 'mcpx_fresh_0-1.0-py3-none-any.whl';

const normalize = (name) => name.replace(/[-_.]+/g, '-').toLowerCase();

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
  work = mkdtempSync('/tmp/mcpx-ii-');
  chmodSync(work, 0o755);
  execFileSync('/usr/bin/python3', [MAKE_WHEELS, work, '--good-only'], { encoding: 'utf8' });
  wheelhouse = path.join(work, 'good');
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
  if (!work) return;
  try {
    execFileSync('chmod', ['-R', 'u+w', work]);
  } catch {
    // Removal below reports nothing either: a leftover temporary directory fails no case.
  }
  rmSync(work, { recursive: true, force: true });
});

function wheelSha256(name, version) {
  const file = readdirSync(wheelhouse).find((f) => {
    const [dist, ver] = f.split('-');
    return f.endsWith('.whl') && normalize(dist) === normalize(name) && ver === version;
  });
  assert.ok(file, `no wheel of ${name} ${version} in ${wheelhouse}`);
  return createHash('sha256').update(readFileSync(path.join(wheelhouse, file))).digest('hex');
}

function layers(cache) {
  const dir = path.join(cache, 'layers');
  return existsSync(dir) ? readdirSync(dir).filter((n) => !n.startsWith('.')).sort() : [];
}

// As packages.test.mjs: `packages` is exactly `expected`, sorted, each with its file's digest;
// the rest is the contract every result keeps.
function checkPackagesResult(result, validate, expected, environment = 'default') {
  assert.notEqual(result.isError, true, `unexpected isError result: ${JSON.stringify(result.content)}`);
  const sc = result.structuredContent;
  assert.ok(sc && typeof sc === 'object', `no structuredContent in ${JSON.stringify(result).slice(0, 500)}`);
  assert.ok(validate(sc), `structuredContent does not match outputSchema: ${JSON.stringify(validate.errors)}`);
  const text = JSON.parse(result.content[0].text);
  assert.deepEqual(text, sc, 'the text content item is not the same JSON as structuredContent');
  const { packages, ...rest } = sc;
  if (expected === null) {
    assert.ok(packages === undefined || (Array.isArray(packages) && packages.length === 0),
      `packages in a call that asked for none: ${JSON.stringify(packages)}`);
    expected = [];
  }
  const list = packages ?? [];
  assert.ok(Array.isArray(list), `packages: ${JSON.stringify(packages)}`);
  for (const p of list) assert.deepEqual(Object.keys(p).sort(), ['name', 'sha256', 'version'], JSON.stringify(p));
  const names = list.map((p) => p.name);
  assert.deepEqual(names, [...names].sort(), 'packages are not sorted by name');
  assert.deepEqual(list.map((p) => [normalize(p.name), p.version]), expected, JSON.stringify(list));
  for (const p of list) assert.equal(p.sha256, wheelSha256(p.name, p.version), `${p.name}'s sha256`);
  const stripped = {
    ...result,
    structuredContent: rest,
    content: [{ type: 'text', text: JSON.stringify(rest) }, ...result.content.slice(1)],
  };
  checkExecResult(stripped, null, environment);
  return sc;
}

function checkChainImported(sc) {
  assert.equal(sc.exit_code, 0, `exit ${sc.exit_code}\nstdout: ${sc.stdout}\nstderr: ${sc.stderr}`);
  const mods = JSON.parse(sc.stdout.trim().split('\n').at(-1));
  for (const m of ['mcpx_a', 'mcpx_b', 'mcpx_c']) {
    assert.equal(mods[m]?.[0], `${m} 1.0`, JSON.stringify(mods));
    assert.ok(mods[m][1].startsWith(PREFIX), `${m}.__file__ ${mods[m][1]}`);
  }
}

for (const transport of ['stdio', 'http']) {
  describe(`packages from an index over ${transport}`, { timeout: 300000 }, () => {
    let srv;
    let conn;
    let tool;
    let validate;
    let cache;
    let first;

    before(async () => {
      cache = mkdtempSync(path.join(work, `c-${transport}-`));
      chmodSync(cache, 0o755);
      srv = await startServer(transport, {
        env: {
          MCP_EXEC_PACKAGE_INDEX: index.url,
          MCP_EXEC_PACKAGE_INDEX_CA: path.join(certs, 'ca.pem'),
          MCP_EXEC_PACKAGE_CACHE: cache,
          HTTPS_PROXY: undefined,
          https_proxy: undefined,
        },
      });
      conn = await srv.connect();
      ({ tool, validate } = await execTool(conn.client));
    });
    after(async () => {
      await srv?.stop();
    });

    it('tools/list: exec takes packages, an array of strings', () => {
      const packages = tool.inputSchema.properties?.packages;
      assert.ok(packages, `no packages argument: ${JSON.stringify(tool.inputSchema)}`);
      assert.equal(packages.type, 'array');
      assert.equal(packages.items?.type, 'string');
    });

    it('mcpx-a: the first install sends progress, then the chain from the index in one new layer', async () => {
      const seen = indexRequests().length;
      const notes = [];
      const { result } = await callExec(conn, validate, { code: IMPORT_CHAIN, packages: ['mcpx-a'], ...RUN }, {
        ...CALL,
        expectError: true,
        onprogress: (p) => notes.push(p),
      });
      first = checkPackagesResult(result, validate, CHAIN);
      checkChainImported(first);
      assert.equal(layers(cache).length, 1, `layers: ${layers(cache)}${srv.logs()}`);
      assert.ok(notes.length >= 1, 'no progress notification during the install');
      for (let i = 1; i < notes.length; i++) {
        assert.ok(notes[i].progress > notes[i - 1].progress, `progress not increasing: ${JSON.stringify(notes)}`);
      }
      const req = conn.tap.sent.filter((m) => m.method === 'tools/call').at(-1);
      const token = req.params._meta.progressToken;
      const resultAt = conn.tap.received.findIndex((m) => m.id === req.id && 'result' in m);
      const lastProgressAt = conn.tap.received.findLastIndex(
        (m) => m.method === 'notifications/progress' && m.params?.progressToken === token,
      );
      assert.ok(lastProgressAt >= 0 && lastProgressAt < resultAt, 'a progress notification after the result');
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
      const before = layers(cache);
      const seen = indexRequests().length;
      const { result } = await callExec(conn, validate, { code: IMPORT_CHAIN, packages: ['mcpx-a'], ...RUN }, {
        ...CALL,
        expectError: true,
      });
      const sc = checkPackagesResult(result, validate, CHAIN);
      checkChainImported(sc);
      assert.deepEqual(sc.packages, first.packages);
      assert.deepEqual(layers(cache), before);
      assert.deepEqual(indexRequests().slice(seen).map((r) => r.path), [], 'requests to the index');
    });

    it('a run without packages does not see the layer', async () => {
      const { result } = await callExec(conn, validate, { code: 'import mcpx_a', ...RUN }, { ...CALL, expectError: true });
      const sc = checkPackagesResult(result, validate, null);
      assert.equal(sc.exit_code, 1);
      assert.match(sc.stderr, /ModuleNotFoundError: No module named 'mcpx_a'/);
    });

    it('a page whose sha256 is not the file\'s: a tool error naming sha256 and the file, no new layer', async () => {
      const before = layers(cache);
      const { result } = await callExec(conn, validate,
        { code: 'print(1)', packages: ['mcpx-fresh-0'], ...RUN }, { ...CALL, expectError: true });
      assert.equal(result.isError, true, `not a tool error: ${JSON.stringify(result).slice(0, 500)}`);
      const text = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
      assert.match(text, /sha256/i);
      assert.ok(text.includes(LYING), `the text does not name ${LYING}: ${text}`);
      assert.deepEqual(layers(cache), before);
    });

    describe('a session opened with packages', () => {
      let session;

      it('session "new" with packages: mcpx-hello==2.0 installs from the index and imports', async () => {
        const { result } = await callExec(conn, validate,
          { code: 'import mcpx_hello\nprint(mcpx_hello.VALUE, mcpx_hello.__file__)', packages: ['mcpx-hello==2.0'], session: 'new', ...RUN },
          { ...CALL, expectError: true });
        const sc = checkPackagesResult(result, validate, [['mcpx-hello', '2.0']]);
        assert.equal(sc.exit_code, 0, sc.stderr);
        assert.match(sc.stdout, /^hello 2\.0 \/usr\/lib\/mcp-exec\/packages\//);
        assert.match(sc.session ?? '', /^s[0-9a-f]{8}_[0-9a-f]{32}$/);
        session = sc.session;
      });

      it('a later call with the handle sees the packages', async () => {
        assert.ok(session, 'no session was opened');
        const { result } = await callExec(conn, validate,
          { code: '(mcpx_hello.VALUE, mcpx_hello.__file__)', session, ...RUN }, { ...CALL, expectError: true });
        const sc = checkPackagesResult(result, validate, 'packages' in (result.structuredContent ?? {}) &&
          result.structuredContent.packages.length ? [['mcpx-hello', '2.0']] : null);
        assert.equal(sc.session, session);
        assert.match(sc.result ?? '', /^\('hello 2\.0', '\/usr\/lib\/mcp-exec\/packages\//, JSON.stringify(sc));
      });

      it('packages on a call to the open session is a tool error about the session', async () => {
        assert.ok(session, 'no session was opened');
        const text = await expectToolError(conn, { code: '1', session, packages: ['mcpx-a'] });
        assert.match(text, /session/i);
        const closed = await conn.client.callTool({ name: 'session_close', arguments: { session } });
        assert.equal(closed.structuredContent.closed, true);
      });
    });
  });
}
