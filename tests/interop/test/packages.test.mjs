// Packages on demand (a local wheelhouse) with the SDK client: a server told MCP_EXEC_WHEELHOUSE
// (the good wheels of tests/packages/make_wheels.py, built here into a temporary directory) and
// a fresh MCP_EXEC_PACKAGE_CACHE runs `exec` with `packages: ["mcpx-a"]` over stdio and over
// Streamable HTTP: the chain mcpx-a -> mcpx-b -> mcpx-c is installed into one read-only layer
// at /usr/lib/mcp-exec/packages, the result's `packages` lists the three sorted by name with
// their wheels' sha256, progress notifications arrive during the first install (before the
// result), and the second call comes from the cache (the same list, no new layer). A session
// opened with `session: "new"` and `packages` sees them in its later calls, and a call that
// passes `packages` to the open session is a tool error that says why.
//
// lib/exec.mjs's checkExecResult takes `packages` as an optional field; the checks here assert
// what it holds and then hand the rest of the result to it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';

import { callExec, checkExecResult, execTool, expectToolError } from '../lib/exec.mjs';
import { startServer } from '../lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const MAKE_WHEELS = path.resolve(here, '../../packages/make_wheels.py');
const PREFIX = '/usr/lib/mcp-exec/packages/';
const RUN = { timeout_s: 60 };
// A first install resolves and unpacks in a sandbox of its own: seconds, more on a loaded host.
const CALL = { timeout: 180000 };
const CHAIN = [['mcpx-a', '1.0'], ['mcpx-b', '1.0'], ['mcpx-c', '1.0']];
const IMPORT_CHAIN = `import json, mcpx_a, mcpx_b, mcpx_c
print(json.dumps({m.__name__: [m.VALUE, m.__file__] for m in (mcpx_a, mcpx_b, mcpx_c)}))`;

const normalize = (name) => name.replace(/[-_.]+/g, '-').toLowerCase();

let work;
let wheelhouse;
before(() => {
  // mkdtemp makes 0700 directories; the wheelhouse and the caches get the usual 0755 (the
  // packages suite, tests/packages/check, covers a private cache).
  work = mkdtempSync(path.join(os.tmpdir(), 'mcp-exec-interop-packages-'));
  chmodSync(work, 0o755);
  execFileSync('/usr/bin/python3', [MAKE_WHEELS, work, '--good-only'], { encoding: 'utf8' });
  wheelhouse = path.join(work, 'good');
});
after(() => {
  if (!work) return;
  // The layers are read-only: give the owner back the write bit before removing them.
  try {
    execFileSync('chmod', ['-R', 'u+w', work]);
  } catch {
    // Removal below reports nothing either: a leftover temporary directory fails no case.
  }
  rmSync(work, { recursive: true, force: true });
});

// The sha256 of the wheel of `name` `version` in the wheelhouse.
function wheelSha256(name, version) {
  const file = readdirSync(wheelhouse).find((f) => {
    const [dist, ver] = f.split('-');
    return f.endsWith('.whl') && normalize(dist) === normalize(name) && ver === version;
  });
  assert.ok(file, `no wheel of ${name} ${version} in ${wheelhouse}`);
  return createHash('sha256').update(readFileSync(path.join(wheelhouse, file))).digest('hex');
}

// The layers in a cache (lock files and other hidden entries aside).
function layers(cache) {
  const dir = path.join(cache, 'layers');
  return existsSync(dir) ? readdirSync(dir).filter((n) => !n.startsWith('.')).sort() : [];
}

// A successful exec result that installed packages: `packages` is exactly `expected`
// ([name, version] pairs), sorted by name, each {name, version, sha256} with its wheel's digest;
// the structuredContent matches the tool's outputSchema and the text item holds the same JSON;
// the rest is the contract every result keeps (lib/exec.mjs). `expected` null: a call that
// installed nothing, whose result has no `packages` or an empty one. Returns the
// structuredContent.
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
  assert.ok(Array.isArray(packages ?? []), `packages: ${JSON.stringify(packages)}`);
  const list = packages ?? [];
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

// The program's JSON line: each module's VALUE and file, from the layer.
function checkChainImported(sc) {
  assert.equal(sc.exit_code, 0, `exit ${sc.exit_code}\nstdout: ${sc.stdout}\nstderr: ${sc.stderr}`);
  const mods = JSON.parse(sc.stdout.trim().split('\n').at(-1));
  for (const m of ['mcpx_a', 'mcpx_b', 'mcpx_c']) {
    assert.equal(mods[m]?.[0], `${m} 1.0`, JSON.stringify(mods));
    assert.ok(mods[m][1].startsWith(PREFIX), `${m}.__file__ ${mods[m][1]}`);
  }
}

for (const transport of ['stdio', 'http']) {
  describe(`packages over ${transport}`, { timeout: 300000 }, () => {
    let srv;
    let conn;
    let tool;
    let validate;
    let cache;
    let first;

    before(async () => {
      cache = mkdtempSync(path.join(work, `cache-${transport}-`));
      chmodSync(cache, 0o755);
      srv = await startServer(transport, {
        env: { MCP_EXEC_WHEELHOUSE: wheelhouse, MCP_EXEC_PACKAGE_CACHE: cache },
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
      assert.ok(!(tool.inputSchema.required ?? []).includes('packages'), 'packages is optional');
    });

    it('mcpx-a: the first install sends progress, then the chain from one new layer', async () => {
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
      // On the wire: every progress notification of the call came before its result.
      const req = conn.tap.sent.filter((m) => m.method === 'tools/call').at(-1);
      const token = req.params._meta.progressToken;
      const resultAt = conn.tap.received.findIndex((m) => m.id === req.id && 'result' in m);
      const lastProgressAt = conn.tap.received.findLastIndex(
        (m) => m.method === 'notifications/progress' && m.params?.progressToken === token,
      );
      assert.ok(lastProgressAt >= 0 && lastProgressAt < resultAt, 'a progress notification after the result');
    });

    it('mcpx-a again: the same list, from the cache (no new layer)', async () => {
      assert.ok(first, 'the first call failed');
      const before = layers(cache);
      const { result } = await callExec(conn, validate, { code: IMPORT_CHAIN, packages: ['mcpx-a'], ...RUN }, {
        ...CALL,
        expectError: true,
      });
      const sc = checkPackagesResult(result, validate, CHAIN);
      checkChainImported(sc);
      assert.deepEqual(sc.packages, first.packages);
      assert.deepEqual(layers(cache), before);
    });

    it('a run without packages does not see the layer', async () => {
      const { result } = await callExec(conn, validate, { code: 'import mcpx_a', ...RUN }, { ...CALL, expectError: true });
      const sc = checkPackagesResult(result, validate, null);
      assert.equal(sc.exit_code, 1);
      assert.match(sc.stderr, /ModuleNotFoundError: No module named 'mcpx_a'/);
    });

    describe('a session opened with packages', () => {
      let session;

      it('session "new" with packages: mcpx-a installs and imports', async () => {
        const { result } = await callExec(conn, validate,
          { code: IMPORT_CHAIN, packages: ['mcpx-a'], session: 'new', ...RUN }, { ...CALL, expectError: true });
        const sc = checkPackagesResult(result, validate, CHAIN);
        checkChainImported(sc);
        assert.match(sc.session ?? '', /^s[0-9a-f]{8}_[0-9a-f]{32}$/);
        session = sc.session;
      });

      it('a later call with the handle sees the packages', async () => {
        assert.ok(session, 'no session was opened');
        const { result } = await callExec(conn, validate,
          { code: 'import mcpx_c\n(mcpx_c.VALUE, mcpx_c.__file__)', session, ...RUN }, { ...CALL, expectError: true });
        // The call asks for nothing; a result that lists the session's packages lists the chain.
        const sc = checkPackagesResult(result, validate, 'packages' in (result.structuredContent ?? {}) &&
          result.structuredContent.packages.length ? CHAIN : null);
        assert.equal(sc.session, session);
        assert.match(sc.result ?? '', /^\('mcpx_c 1\.0', '\/usr\/lib\/mcp-exec\/packages\//, JSON.stringify(sc));
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
