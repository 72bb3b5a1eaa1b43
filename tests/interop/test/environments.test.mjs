// Environments (docs/environments.md) with the SDK client: a server offering `default` and `data`
// (the image tools/setup builds at build/environments/data, beside build/rootfs) lists both in
// exec's schema and description, and runs every smoke program of tests/environments/smoke.py in
// `data` over stdio, over Streamable HTTP and in a session opened in `data`, each ending with
// "ok NAME", seaborn's savefig and plt.show() coming back as PNG images. An unknown environment
// is a tool error naming the offered ones, a data session refuses `default`, and the same
// scikit-learn program fails in `default`: the environment really switches.
//
// The servers are told MCP_EXEC_ENVIRONMENTS=default,data, so a missing or broken data image
// leaves `data` out of the offer and every case here fails (never skips). Meson runs this file
// once, as `interop-environments` on the zygote engine (tests/meson.build, README.md).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';

import { callExec, execTool, expectToolError } from '../lib/exec.mjs';
import { startServer } from '../lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const SMOKE = path.resolve(here, '../../environments/smoke.py');
const python = (...args) => execFileSync('/usr/bin/python3', [SMOKE, ...args], { encoding: 'utf8' });

// `smoke.py` prints the names, `smoke.py NAME` a program's source.
const NAMES = python().split('\n').filter(Boolean);
const SOURCE = Object.fromEntries(NAMES.map((name) => [name, python(name)]));

const ENV = { MCP_EXEC_ENVIRONMENTS: 'default,data' };
// A cold run in data imports its stack (1 to 3 s here, more on a loaded host); the zygote's runs
// take milliseconds. Generous bounds, so that only a hang fails on time.
const RUN = { timeout_s: 90 };
const CALL = { timeout: 120000 };
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

// A program's result: it worked, and its last line says so.
function checkSmoke(name, sc) {
  assert.equal(sc.exit_code, 0, `${name}: exit ${sc.exit_code}\nstdout: ${sc.stdout}\nstderr: ${sc.stderr}`);
  assert.equal(sc.timed_out, false);
  assert.equal(sc.oom_killed, false);
  const lines = sc.stdout.trimEnd().split('\n');
  assert.equal(lines.at(-1), `ok ${name}`, `stdout: ${sc.stdout}\nstderr: ${sc.stderr}`);
}

// seaborn's program saves /tmp/outputs/seaborn.png and then calls plt.show() on the same, still
// open figure, which the figures backend saves as figure-N.png (docs/exec.md, Figures): both
// are listed, returned, and sent as image items in the listing's order, each a PNG of its size.
function checkSeabornImages(result, sc) {
  assert.equal(sc.files.length, 2, `files: ${JSON.stringify(sc.files)}`);
  const [figure, saved] = sc.files;
  assert.match(figure.path, /^figure-\d+\.png$/);
  assert.equal(saved.path, 'seaborn.png');
  const images = result.content.slice(1);
  assert.equal(images.length, 2, 'one image item per returned file');
  sc.files.forEach((f, i) => {
    assert.equal(f.mime_type, 'image/png', f.path);
    assert.equal(f.returned, true, `${f.path}: ${f.reason}`);
    assert.equal(images[i].type, 'image', f.path);
    assert.equal(images[i].mimeType, 'image/png', f.path);
    const bytes = Buffer.from(images[i].data, 'base64');
    assert.ok(bytes.subarray(0, 8).equals(PNG_SIGNATURE), `${f.path} is not a PNG`);
    assert.equal(bytes.length, f.size, `${f.path}: the image item's bytes against the listed size`);
  });
}

it('the smoke programs are there, seaborn among them', () => {
  assert.ok(NAMES.length >= 12, `smoke.py names ${JSON.stringify(NAMES)}`);
  assert.ok(NAMES.includes('seaborn') && NAMES.includes('sklearn'), JSON.stringify(NAMES));
  for (const name of NAMES) assert.match(SOURCE[name], new RegExp(`print\\("ok ${name}"\\)`));
});

for (const transport of ['stdio', 'http']) {
  describe(`the data environment over ${transport}`, { timeout: 300000 }, () => {
    let srv;
    let conn;
    let tool;
    let validate;
    const call = (args, opts) => callExec(conn, validate, args, { ...CALL, ...opts });

    before(async () => {
      srv = await startServer(transport, { env: ENV });
      conn = await srv.connect();
      ({ tool, validate } = await execTool(conn.client));
    });
    after(async () => {
      await srv?.stop();
    });

    it('tools/list offers default and data, and the description lists data\'s packages', () => {
      const environment = tool.inputSchema.properties?.environment;
      assert.ok(environment, `no environment argument: ${JSON.stringify(tool.inputSchema)}`);
      assert.equal(environment.type, 'string');
      assert.deepEqual(environment.enum, ['default', 'data'], `${JSON.stringify(environment)}${srv.logs()}`);
      assert.ok(!(tool.inputSchema.required ?? []).includes('environment'), 'environment is optional');
      // "... data: bs4 4.11.2, jinja2 3.1.2, ..., yaml 6.0." after default's list.
      const listing = / data: ((?:[A-Za-z0-9_]+ [^ ,]+(?:, )?)+)\./.exec(tool.description);
      assert.ok(listing, `no list of data's packages in: ${tool.description}`);
      const packages = new Map(listing[1].split(', ').map((p) => p.split(' ')));
      for (const name of NAMES) assert.match(packages.get(name) ?? '', /^\d/, `${name} in: ${listing[1]}`);
      assert.match(listing[1], /\bscipy \d/);
      assert.match(tool.description, /default "default"/);
      const defaults = / default: (.+?)\. data: /.exec(tool.description);
      assert.ok(defaults, tool.description);
      assert.doesNotMatch(defaults[1], /scipy|sklearn|seaborn/, 'default lists what only data has');
    });

    it('an unknown environment is a tool error that lists the offered ones', async () => {
      const text = await expectToolError(conn, { code: 'print(1)', environment: 'gpu' });
      assert.equal(text, 'invalid arguments: unknown environment "gpu": this server offers default, data');
    });

    for (const name of NAMES) {
      it(`${name} works in data`, async () => {
        const { result, sc } = await call({ code: SOURCE[name], environment: 'data', ...RUN });
        checkSmoke(name, sc);
        if (name === 'seaborn') checkSeabornImages(result, sc);
        else assert.deepEqual(sc.files, [], `${name} left files`);
      });
    }

    it('the same scikit-learn program fails in default: the environment switches', async () => {
      const { sc } = await call({ code: SOURCE.sklearn, ...RUN });
      assert.equal(sc.exit_code, 1, sc.stdout + sc.stderr);
      assert.match(sc.stderr, /ModuleNotFoundError: No module named 'sklearn'/);
      assert.doesNotMatch(sc.stdout, /ok sklearn/);
      const { sc: named } = await call({ code: 'import scipy', environment: 'default', ...RUN });
      assert.match(named.stderr, /ModuleNotFoundError: No module named 'scipy'/);
    });

    if (transport !== 'http') return;

    // A session opened in data keeps it: calls name it again or not at all, and one that names
    // default is refused with the session's environment in the message.
    describe('a session in data', () => {
      let session;
      const inSession = (name, i) => {
        // Every other call names the environment again; the rest name none.
        const args = { code: SOURCE[name], session, ...RUN };
        if (i % 2 === 0) args.environment = 'data';
        return call(args, { environment: 'data' });
      };

      it(`${NAMES[0]} opens it`, async () => {
        const { sc } = await call({ code: SOURCE[NAMES[0]], session: 'new', environment: 'data', ...RUN });
        checkSmoke(NAMES[0], sc);
        assert.match(sc.session ?? '', /^s[0-9a-f]{8}_[0-9a-f]{32}$/);
        session = sc.session;
        const list = await conn.client.callTool({ name: 'session_list', arguments: {} });
        const entry = list.structuredContent.sessions.find((s) => s.session === session);
        assert.equal(entry?.environment, 'data', JSON.stringify(list.structuredContent));
      });

      it('naming default in it is a tool error that names data', async () => {
        assert.ok(session, 'no session was opened');
        const text = await expectToolError(conn, { code: 'print(1)', session, environment: 'default' });
        assert.match(text, /this session runs in the environment "data", which it keeps for its life/);
      });

      NAMES.slice(1).forEach((name, i) => {
        it(`${name} works in it`, async () => {
          assert.ok(session, 'no session was opened');
          const { result, sc } = await inSession(name, i);
          assert.equal(sc.session, session);
          checkSmoke(name, sc);
          if (name === 'seaborn') checkSeabornImages(result, sc);
          else assert.deepEqual(sc.files, [], `${name} left files`);
        });
      });

      it('the earlier programs\' imports are still there, and it closes', async () => {
        assert.ok(session, 'no session was opened');
        const { sc } = await call({ code: 'import sys\n"sklearn" in sys.modules', session, ...RUN },
          { environment: 'data' });
        assert.equal(sc.result, 'True');
        const closed = await conn.client.callTool({ name: 'session_close', arguments: { session } });
        assert.equal(closed.structuredContent.closed, true);
      });
    });
  });
}
