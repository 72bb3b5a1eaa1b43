// What the packages-on-demand tests (test/packages.test.mjs: a local wheelhouse,
// test/packages-index.test.mjs: an HTTPS index) share: the chain mcpx-a -> mcpx-b -> mcpx-c and
// the program that imports it, a temporary directory holding the good wheels of
// tests/packages/make_wheels.py, a describe block's server with a cache of its own, a cache's
// layers, and the checks of a result that installed packages (on top of lib/exec.mjs's
// checkExecResult, which takes `packages` as an optional field), of its progress notifications,
// of a run without packages and of a session that refuses `packages`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { callExec, checkExecResult, execTool, expectToolError } from './exec.mjs';
import { startServer } from './server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const MAKE_WHEELS = path.resolve(here, '../../packages/make_wheels.py');

// Where an installed package's files are, in the sandbox.
const PREFIX = '/usr/lib/mcp-exec/packages/';
// The exec arguments of a run (its own timeout) and the SDK options of a call: a first install
// resolves and unpacks in a sandbox of its own, seconds, more on a loaded host.
export const RUN = { timeout_s: 60 };
export const CALL = { timeout: 180000 };
// mcpx-a's install: [normalised name, version] pairs, sorted by name.
export const CHAIN = [['mcpx-a', '1.0'], ['mcpx-b', '1.0'], ['mcpx-c', '1.0']];
// Prints one JSON line: each module of the chain's VALUE and file (checkChainImported).
export const IMPORT_CHAIN = `import json, mcpx_a, mcpx_b, mcpx_c
print(json.dumps({m.__name__: [m.VALUE, m.__file__] for m in (mcpx_a, mcpx_b, mcpx_c)}))`;

// A project name as PEP 503 normalises it.
const normalize = (name) => name.replace(/[-_.]+/g, '-').toLowerCase();

// A new temporary directory `prefix`XXXXXX holding make_wheels.py's good wheels in good/:
// returns { work, wheelhouse }. mkdtemp makes 0700 directories; this one gets the usual 0755
// (the packages suite, tests/packages/check, covers a private cache).
export function makeWork(prefix) {
  const work = mkdtempSync(prefix);
  chmodSync(work, 0o755);
  execFileSync('/usr/bin/python3', [MAKE_WHEELS, work, '--good-only'], { encoding: 'utf8' });
  return { work, wheelhouse: path.join(work, 'good') };
}

// A new cache directory `prefix`XXXXXX below `dir`, 0755 as makeWork's.
function makeCache(dir, prefix) {
  const cache = mkdtempSync(path.join(dir, prefix));
  chmodSync(cache, 0o755);
  return cache;
}

// Starts the server of a describe block on `transport`, with a new cache below `work` (makeCache's
// `cachePrefix`) as MCP_EXEC_PACKAGE_CACHE and `env` in its environment, connects the SDK client
// and lists exec. Fills `ctx` step by step ({ cache, srv, conn, tool, validate }), so that the
// block's after() stops ctx.srv even when a later step failed.
export async function startPackagesServer(ctx, transport, work, cachePrefix, env) {
  ctx.cache = makeCache(work, cachePrefix);
  ctx.srv = await startServer(transport, { env: { ...env, MCP_EXEC_PACKAGE_CACHE: ctx.cache } });
  ctx.conn = await ctx.srv.connect();
  ({ tool: ctx.tool, validate: ctx.validate } = await execTool(ctx.conn.client));
}

// Removes makeWork's directory (nothing when `work` is unset).
export function removeWork(work) {
  if (!work) return;
  // The layers are read-only: give the owner back the write bit before removing them.
  try {
    execFileSync('chmod', ['-R', 'u+w', work]);
  } catch {
    // Removal below reports nothing either: a leftover temporary directory fails no case.
  }
  rmSync(work, { recursive: true, force: true });
}

// The sha256 of the wheel of `name` `version` in `wheelhouse`.
export function wheelSha256(wheelhouse, name, version) {
  const file = readdirSync(wheelhouse).find((f) => {
    const [dist, ver] = f.split('-');
    return f.endsWith('.whl') && normalize(dist) === normalize(name) && ver === version;
  });
  assert.ok(file, `no wheel of ${name} ${version} in ${wheelhouse}`);
  return createHash('sha256').update(readFileSync(path.join(wheelhouse, file))).digest('hex');
}

// The layers in a cache (lock files and other hidden entries aside).
export function layers(cache) {
  const dir = path.join(cache, 'layers');
  return existsSync(dir) ? readdirSync(dir).filter((n) => !n.startsWith('.')).sort() : [];
}

// A successful exec result that installed packages: `packages` is exactly `expected`
// ([name, version] pairs), sorted by name, each {name, version, sha256} with the digest of its
// wheel in `wheelhouse`; the structuredContent matches the tool's outputSchema and the text item
// holds the same JSON; the rest is the contract every result keeps (lib/exec.mjs). `expected`
// null: a call that installed nothing, whose result has no `packages` or an empty one. Returns
// the structuredContent.
export function checkPackagesResult(wheelhouse, result, validate, expected, environment = 'default') {
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
  for (const p of list) assert.equal(p.sha256, wheelSha256(wheelhouse, p.name, p.version), `${p.name}'s sha256`);
  const stripped = {
    ...result,
    structuredContent: rest,
    content: [{ type: 'text', text: JSON.stringify(rest) }, ...result.content.slice(1)],
  };
  checkExecResult(stripped, null, environment);
  return sc;
}

// What checkPackagesResult expects of a call to a session opened with packages that asks for
// none itself: a result that lists the session's packages lists `expected`, else nothing.
export function sessionExpected(result, expected) {
  return 'packages' in (result.structuredContent ?? {}) && result.structuredContent.packages.length
    ? expected : null;
}

// IMPORT_CHAIN's JSON line: each module's VALUE and file, from the layer.
export function checkChainImported(sc) {
  assert.equal(sc.exit_code, 0, `exit ${sc.exit_code}\nstdout: ${sc.stdout}\nstderr: ${sc.stderr}`);
  const mods = JSON.parse(sc.stdout.trim().split('\n').at(-1));
  for (const m of ['mcpx_a', 'mcpx_b', 'mcpx_c']) {
    assert.equal(mods[m]?.[0], `${m} 1.0`, JSON.stringify(mods));
    assert.ok(mods[m][1].startsWith(PREFIX), `${m}.__file__ ${mods[m][1]}`);
  }
}

// tools/list: exec takes `packages`, an array of strings.
export function checkPackagesArgument(tool) {
  const packages = tool.inputSchema.properties?.packages;
  assert.ok(packages, `no packages argument: ${JSON.stringify(tool.inputSchema)}`);
  assert.equal(packages.type, 'array');
  assert.equal(packages.items?.type, 'string');
}

// The progress notifications of the last tools/call on `conn` (`notes`, as its onprogress got
// them): at least one, increasing, and on the wire every one before the call's result.
export function checkProgress(conn, notes) {
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
}

// Runs IMPORT_CHAIN with packages ["mcpx-a"]: the result lists CHAIN (checkPackagesResult) and
// the program imported the chain from the layer. `notes`, when given, collects the call's
// progress notifications. Returns the structuredContent.
export async function installChain(conn, validate, wheelhouse, notes) {
  const { result } = await callExec(conn, validate, { code: IMPORT_CHAIN, packages: ['mcpx-a'], ...RUN }, {
    ...CALL,
    expectError: true,
    ...(notes ? { onprogress: (p) => notes.push(p) } : {}),
  });
  const sc = checkPackagesResult(wheelhouse, result, validate, CHAIN);
  checkChainImported(sc);
  return sc;
}

// A run that asks for no packages: mcpx_a is not importable (no layer of the cache is seen).
export async function checkRunWithoutPackages(conn, validate, wheelhouse) {
  const { result } = await callExec(conn, validate, { code: 'import mcpx_a', ...RUN }, { ...CALL, expectError: true });
  const sc = checkPackagesResult(wheelhouse, result, validate, null);
  assert.equal(sc.exit_code, 1);
  assert.match(sc.stderr, /ModuleNotFoundError: No module named 'mcpx_a'/);
}

// `packages` on a call to the open `session` is a tool error about the session; then closes it.
export async function checkSessionRefusesPackages(conn, session) {
  assert.ok(session, 'no session was opened');
  const text = await expectToolError(conn, { code: '1', session, packages: ['mcpx-a'] });
  assert.match(text, /session/i);
  const closed = await conn.client.callTool({ name: 'session_close', arguments: { session } });
  assert.equal(closed.structuredContent.closed, true);
}
