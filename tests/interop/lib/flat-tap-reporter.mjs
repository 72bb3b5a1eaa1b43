// A node:test reporter printing flat TAP 13: one `ok`/`not ok` line per test case, named
// "<suite> > <case>", so that meson (protocol : 'tap'), which reads only top-level lines, counts
// every case. node's own tap reporter nests cases under their suites (indented), which meson
// would see as one result per suite.
//
// Also reported as their own lines: a suite whose before/after hook failed (e.g. the server did
// not start, or did not exit at the end), and a test file that failed outside any case.
//
//   node --test --test-reporter=./lib/flat-tap-reporter.mjs ...

function clean(name) {
  return String(name).replace(/#/g, '\uff03').replace(/[\r\n]+/g, ' ').trim();
}

function yamlBlock(fields) {
  const out = ['  ---'];
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || v === null || v === '') continue;
    const s = String(v);
    if (s.includes('\n')) {
      out.push(`  ${k}: |-`);
      // A line of just "..." would end the block for a TAP parser.
      for (const line of s.split('\n')) out.push(`    ${line.replace(/^(\s*)\.\.\.(\s*)$/, '$1. . .$2')}`);
    } else {
      out.push(`  ${k}: ${JSON.stringify(s)}`);
    }
  }
  out.push('  ...');
  return out.join('\n') + '\n';
}

function describeError(error) {
  if (!error) return undefined;
  const inner = error.cause && error.failureType === 'testCodeFailure' ? error.cause : error.cause ?? error;
  let text = inner?.stack && !String(inner.stack).startsWith('Error: test') ? String(inner.stack) : String(inner?.message ?? inner);
  if (inner?.message && !text.includes(inner.message)) text = `${inner.message}\n${text}`;
  const lines = text.split('\n').filter((l) => !/^\s+at .*node:internal/.test(l));
  return lines.slice(0, 60).join('\n');
}

export default async function* flatTap(source) {
  yield 'TAP version 13\n';
  const stack = [];
  let n = 0;
  for await (const event of source) {
    const { type, data } = event;
    if (type === 'test:start') {
      stack.length = data.nesting;
      stack[data.nesting] = clean(data.name);
      continue;
    }
    if (type === 'test:pass' || type === 'test:fail') {
      const isSuite = data.details?.type === 'suite';
      const error = data.details?.error;
      if (isSuite) {
        // A suite failing on its own account: a hook (server start / stop), or its file.
        if (type === 'test:pass') continue;
        if (error?.failureType !== 'hookFailed' && error?.failureType !== 'testCodeFailure') continue;
      }
      const path = [...stack.slice(0, data.nesting), clean(data.name)];
      let name = path.join(' > ');
      if (isSuite) name += ' (before/after hook)';
      n += 1;
      let directive = '';
      if (data.skip !== undefined && data.skip !== false) {
        directive = ` # SKIP${typeof data.skip === 'string' ? ` ${clean(data.skip)}` : ''}`;
      } else if (data.todo !== undefined && data.todo !== false) {
        directive = ` # TODO${typeof data.todo === 'string' ? ` ${clean(data.todo)}` : ''}`;
      }
      yield `${type === 'test:pass' ? 'ok' : 'not ok'} ${n} - ${name}${directive}\n`;
      const fields = { duration_ms: data.details?.duration_ms?.toFixed?.(0) };
      if (type === 'test:fail') {
        fields.failureType = error?.failureType;
        fields.location = data.file ? `${data.file}:${data.line ?? '?'}:${data.column ?? '?'}` : undefined;
        fields.error = describeError(error);
      }
      yield yamlBlock(fields);
      continue;
    }
    if (type === 'test:diagnostic') {
      yield `# ${String(data.message).replace(/\n/g, '\n# ')}\n`;
      continue;
    }
    if (type === 'test:stdout' || type === 'test:stderr') {
      const msg = String(data.message ?? '').replace(/\n$/, '');
      if (msg) yield `# ${msg.replace(/\n/g, '\n# ')}\n`;
      continue;
    }
  }
  yield `1..${n}\n`;
}
