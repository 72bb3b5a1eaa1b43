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
// lib/packages.mjs holds what this test shares with packages-index.test.mjs: the chain, the
// wheelhouse's temporary directory, and the checks of a result that installed packages.
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { callExec } from '../lib/exec.mjs';
import {
  CALL, CHAIN, IMPORT_CHAIN, RUN, checkChainImported, checkPackagesArgument, checkPackagesResult,
  checkProgress, checkRunWithoutPackages, checkSessionRefusesPackages, installChain, layers,
  makeWork, removeWork, sessionExpected, startPackagesServer,
} from '../lib/packages.mjs';

let work;
let wheelhouse;
before(() => {
  ({ work, wheelhouse } = makeWork(path.join(os.tmpdir(), 'mcp-exec-interop-packages-')));
});
after(() => {
  removeWork(work);
});

for (const transport of ['stdio', 'http']) {
  describe(`packages over ${transport}`, { timeout: 300000 }, () => {
    const ctx = {};
    let first;

    before(() => startPackagesServer(ctx, transport, work, `cache-${transport}-`,
      { MCP_EXEC_WHEELHOUSE: wheelhouse }));
    after(async () => {
      await ctx.srv?.stop();
    });

    it('tools/list: exec takes packages, an array of strings', () => {
      checkPackagesArgument(ctx.tool);
      assert.ok(!(ctx.tool.inputSchema.required ?? []).includes('packages'), 'packages is optional');
    });

    it('mcpx-a: the first install sends progress, then the chain from one new layer', async () => {
      const notes = [];
      first = await installChain(ctx.conn, ctx.validate, wheelhouse, notes);
      assert.equal(layers(ctx.cache).length, 1, `layers: ${layers(ctx.cache)}${ctx.srv.logs()}`);
      checkProgress(ctx.conn, notes);
    });

    it('mcpx-a again: the same list, from the cache (no new layer)', async () => {
      assert.ok(first, 'the first call failed');
      const before = layers(ctx.cache);
      const sc = await installChain(ctx.conn, ctx.validate, wheelhouse);
      assert.deepEqual(sc.packages, first.packages);
      assert.deepEqual(layers(ctx.cache), before);
    });

    it('a run without packages does not see the layer', async () => {
      await checkRunWithoutPackages(ctx.conn, ctx.validate, wheelhouse);
    });

    describe('a session opened with packages', () => {
      let session;

      it('session "new" with packages: mcpx-a installs and imports', async () => {
        const { result } = await callExec(ctx.conn, ctx.validate,
          { code: IMPORT_CHAIN, packages: ['mcpx-a'], session: 'new', ...RUN }, { ...CALL, expectError: true });
        const sc = checkPackagesResult(wheelhouse, result, ctx.validate, CHAIN);
        checkChainImported(sc);
        assert.match(sc.session ?? '', /^s[0-9a-f]{8}_[0-9a-f]{32}$/);
        session = sc.session;
      });

      it('a later call with the handle sees the packages', async () => {
        assert.ok(session, 'no session was opened');
        const { result } = await callExec(ctx.conn, ctx.validate,
          { code: 'import mcpx_c\n(mcpx_c.VALUE, mcpx_c.__file__)', session, ...RUN }, { ...CALL, expectError: true });
        // The call asks for nothing; a result that lists the session's packages lists the chain.
        const sc = checkPackagesResult(wheelhouse, result, ctx.validate, sessionExpected(result, CHAIN));
        assert.equal(sc.session, session);
        assert.match(sc.result ?? '', /^\('mcpx_c 1\.0', '\/usr\/lib\/mcp-exec\/packages\//, JSON.stringify(sc));
      });

      it('packages on a call to the open session is a tool error about the session', async () => {
        await checkSessionRefusesPackages(ctx.conn, session);
      });
    });
  });
}
