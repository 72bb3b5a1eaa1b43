// Calling the `exec` tool through the SDK client, with the checks every call gets:
//  - a non-error result has structuredContent that validates against the tool's outputSchema
//    (Ajv, the schema's own dialect; 2020-12 when it names none: checklist T3),
//  - it carries exactly the contract's fields with the right types,
//  - and the same JSON as a text content item (checklist T4 / the contract).
import assert from 'node:assert/strict';

import Ajv2020 from 'ajv/dist/2020.js';
import AjvDraft07 from 'ajv';
import addFormats from 'ajv-formats';

export const RESULT_FIELDS = ['stdout', 'stderr', 'exit_code', 'duration_ms', 'truncated', 'timed_out',
  'oom_killed', 'memory_peak_bytes', 'cpu_time_ms', 'limits_backend', 'files', 'environment'];
// Fields present only when they apply (the last four: a call in a session).
const OPTIONAL_FIELDS = ['signal', 'files_not_listed', 'files_walk_incomplete', 'session',
  'expires_at', 'result', 'session_ended', 'packages'];
// Fields that vary from run to run of the same program.
export const MEASURED_FIELDS = ['duration_ms', 'memory_peak_bytes', 'cpu_time_ms'];

function makeAjv(schema) {
  const dialect = typeof schema.$schema === 'string' ? schema.$schema : '';
  const ajv = /draft-0[4-7]/.test(dialect)
    ? new AjvDraft07({ strict: false, allErrors: true })
    : new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  return ajv;
}

// Lists the tools, checks `exec` is there with usable schemas, and returns {tool, validate}.
export async function execTool(client) {
  const { tools } = await client.listTools(undefined, { timeout: 10000 });
  const tool = tools.find((t) => t.name === 'exec');
  assert.ok(tool, `no tool named exec in ${JSON.stringify(tools.map((t) => t.name))}`);
  assert.ok(tool.outputSchema, 'exec has no outputSchema');
  const validate = makeAjv(tool.outputSchema).compile(tool.outputSchema);
  return { tool, tools, validate };
}

// Asserts the shape of a successful (isError false) exec result and returns its structuredContent.
// `environment` is the one the call must have run in (docs/environments.md).
export function checkExecResult(result, validate, environment = 'default') {
  assert.notEqual(result.isError, true, `unexpected isError result: ${JSON.stringify(result.content)}`);
  const sc = result.structuredContent;
  assert.ok(sc && typeof sc === 'object', `no structuredContent in ${JSON.stringify(result).slice(0, 500)}`);
  if (validate) {
    const ok = validate(sc);
    assert.ok(ok, `structuredContent does not match outputSchema: ${JSON.stringify(validate.errors)}`);
  }
  const keys = Object.keys(sc).sort();
  const expected = [...RESULT_FIELDS, ...OPTIONAL_FIELDS.filter((f) => f in sc)].sort();
  assert.deepEqual(keys, expected, 'structuredContent fields');
  assert.equal(typeof sc.stdout, 'string');
  assert.equal(typeof sc.stderr, 'string');
  assert.ok(Number.isInteger(sc.exit_code), `exit_code ${sc.exit_code}`);
  assert.ok(Number.isInteger(sc.duration_ms) && sc.duration_ms >= 0, `duration_ms ${sc.duration_ms}`);
  assert.equal(typeof sc.truncated, 'boolean');
  assert.equal(typeof sc.timed_out, 'boolean');
  if ('signal' in sc) assert.equal(typeof sc.signal, 'string');
  assert.equal(sc.environment, environment, 'the environment the call ran in');
  assert.equal(typeof sc.oom_killed, 'boolean');
  for (const f of ['memory_peak_bytes', 'cpu_time_ms']) {
    assert.ok(sc[f] === null || (Number.isInteger(sc[f]) && sc[f] >= 0), `${f} ${sc[f]}`);
  }
  assert.ok(['cgroup2', 'cgroup1', 'rlimit'].includes(sc.limits_backend), `limits_backend ${sc.limits_backend}`);
  assert.ok(Array.isArray(sc.files), 'files is not an array');
  for (const f of sc.files) {
    assert.deepEqual(Object.keys(f).sort(), ['mime_type', 'path', 'reason', 'returned', 'size']);
    assert.equal(typeof f.returned, 'boolean');
    assert.equal(f.reason === null, f.returned, `reason ${f.reason} with returned ${f.returned}`);
  }
  // One content item after the text per returned file, in the listing's order.
  const extra = (result.content ?? []).slice(1);
  assert.equal(extra.length, sc.files.filter((f) => f.returned).length, 'content items for returned files');
  const texts = (result.content ?? []).filter((c) => c.type === 'text');
  assert.ok(texts.length >= 1, 'no text content item');
  const parsed = texts
    .map((c) => {
      try {
        return JSON.parse(c.text);
      } catch {
        return undefined;
      }
    })
    .filter((v) => v !== undefined);
  assert.ok(parsed.length >= 1, `no text item holds JSON: ${texts[0].text.slice(0, 200)}`);
  assert.deepEqual(parsed[0], sc, 'the text content item is not the same JSON as structuredContent');
  return sc;
}

// Calls exec and checks the result (see above) unless expectError; returns
// {result, sc, elapsedMs}. opts: timeout (ms, the SDK request timeout), signal, onprogress,
// expectError (return the raw result without the success checks), environment (the one the
// result must name; default: the call's `environment` argument, else `default`, the servers'
// default; a call in a session that names none runs in the session's).
export async function callExec(conn, validate, args, opts = {}) {
  const t0 = performance.now();
  const result = await conn.client.callTool(
    { name: 'exec', arguments: args },
    undefined,
    { timeout: opts.timeout ?? 30000, signal: opts.signal, onprogress: opts.onprogress },
  );
  const elapsedMs = performance.now() - t0;
  if (opts.expectError) return { result, elapsedMs };
  const sc = checkExecResult(result, validate, opts.environment ?? args.environment ?? 'default');
  return { result, sc, elapsedMs };
}

// The tool-error outcome of a call that must be refused: either a result with isError true and a
// message, or (where the checklist tolerates it) a JSON-RPC error. Returns a description.
export async function expectToolError(conn, args, { allowProtocolError = false } = {}) {
  let result;
  try {
    result = await conn.client.callTool({ name: 'exec', arguments: args }, undefined, { timeout: 15000 });
  } catch (e) {
    if (allowProtocolError && typeof e.code === 'number') return `JSON-RPC error ${e.code}: ${e.message}`;
    throw e;
  }
  assert.equal(result.isError, true, `expected isError true, got ${JSON.stringify(result).slice(0, 500)}`);
  const text = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  assert.ok(text.trim().length > 0, 'isError result without a message');
  return text;
}

export function utf8Bytes(s) {
  return Buffer.byteLength(s, 'utf8');
}
