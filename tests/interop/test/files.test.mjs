// Files in and out of `exec` (issue 9): the `files` argument, and /tmp/outputs coming back as
// image and resource content, the same cases on every transport.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { callExec, execTool, expectToolError } from '../lib/exec.mjs';
import { TRANSPORTS, startServer } from '../lib/server.mjs';

const MIB = 1024 * 1024;

// Width and height from a PNG's IHDR chunk, after checking the signature.
function pngSize(bytes) {
  assert.ok(bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'not a PNG');
  assert.equal(bytes.subarray(12, 16).toString('latin1'), 'IHDR');
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

const listed = (sc, path) => sc.files.find((f) => f.path === path);

for (const transport of TRANSPORTS) {
  describe(`files over ${transport}`, { timeout: 180000 }, () => {
    let srv;
    let conn;
    let validate;
    const call = (args, opts) => callExec(conn, validate, args, opts);

    before(async () => {
      srv = await startServer(transport, { env: { MCP_EXEC_MAX_CONCURRENCY: 2 } });
      conn = await srv.connect();
      ({ validate } = await execTool(conn.client));
    });
    after(async () => {
      await srv?.stop();
    });

    it('a plot saved to /tmp/outputs arrives as an image item that decodes as a PNG of its size', async () => {
      const { result, sc } = await call({
        code: [
          'import matplotlib.pyplot as plt',
          'fig = plt.figure(figsize=(4, 3), dpi=50)',
          'plt.plot([1, 3, 2, 4])',
          'fig.savefig("/tmp/outputs/plot.png")',
          // Left open, it would also come back as figure-1.png (README, Figures).
          'plt.close(fig)',
        ].join('\n'),
      });
      assert.equal(sc.exit_code, 0, sc.stderr);
      const entry = listed(sc, 'plot.png');
      assert.deepEqual({ ...entry, size: undefined }, {
        path: 'plot.png', size: undefined, mime_type: 'image/png', returned: true, reason: null,
      });
      const images = result.content.filter((c) => c.type === 'image');
      assert.equal(images.length, 1);
      assert.equal(images[0].mimeType, 'image/png');
      const bytes = Buffer.from(images[0].data, 'base64');
      assert.equal(bytes.length, entry.size);
      assert.deepEqual(pngSize(bytes), { width: 200, height: 150 });
    });

    it('matplotlib figures come back without savefig: one shown, one left open at exit', async () => {
      const { result, sc } = await call({
        code: [
          'import matplotlib.pyplot as plt',
          'plt.figure(figsize=(4, 3)); plt.plot([1, 3, 2]); plt.show()',
          'plt.figure(figsize=(3, 4)); plt.plot([2, 1, 3])',
        ].join('\n'),
      });
      assert.equal(sc.exit_code, 0, sc.stderr);
      assert.deepEqual(sc.files.map((f) => [f.path, f.mime_type, f.returned]), [
        ['figure-1.png', 'image/png', true], ['figure-2.png', 'image/png', true],
      ]);
      const [wide, tall] = result.content.filter((c) => c.type === 'image')
        .map((c) => pngSize(Buffer.from(c.data, 'base64')));
      assert.ok(wide.width > wide.height && tall.height > tall.width, JSON.stringify([wide, tall]));
    });

    it('a CSV arrives as a text resource and a binary file as a blob, in name order', async () => {
      const { result, sc } = await call({
        code: [
          'import os',
          'os.makedirs("/tmp/outputs/data", exist_ok=True)',
          'open("/tmp/outputs/data/table.csv", "w").write("a,b\\n1,2\\n")',
          'open("/tmp/outputs/raw.bin", "wb").write(bytes(range(256)))',
        ].join('\n'),
      });
      assert.deepEqual(sc.files.map((f) => [f.path, f.mime_type, f.size, f.returned]), [
        ['data/table.csv', 'text/csv', 8, true],
        ['raw.bin', 'application/octet-stream', 256, true],
      ]);
      const [csv, bin] = result.content.slice(1);
      assert.equal(csv.type, 'resource');
      assert.deepEqual(csv.resource, {
        uri: 'mcp-exec:///tmp/outputs/data/table.csv', mimeType: 'text/csv', text: 'a,b\n1,2\n',
      });
      assert.equal(bin.type, 'resource');
      assert.equal(bin.resource.uri, 'mcp-exec:///tmp/outputs/raw.bin');
      assert.ok(Buffer.from(bin.resource.blob, 'base64').equals(Buffer.from([...Array(256).keys()])));
    });

    it('input files round-trip byte for byte, binary ones included', async () => {
      const binary = randomBytes(64 * 1024);
      const text = 'héllo, wörld\n'.repeat(100);
      const { result, sc } = await call({
        files: [
          { path: 'in/blob.bin', content: binary.toString('base64'), encoding: 'base64' },
          { path: 'notes.txt', content: text },
        ],
        code: [
          'import hashlib, os, shutil',
          'print(hashlib.sha256(open("in/blob.bin", "rb").read()).hexdigest())',
          'print(hashlib.sha256(open("notes.txt", "rb").read()).hexdigest())',
          'print(os.stat("in/blob.bin").st_uid == os.getuid(), os.access("in", os.W_OK))',
          'shutil.copy("in/blob.bin", "/tmp/outputs/blob.bin")',
          'shutil.copy("notes.txt", "/tmp/outputs/notes.txt")',
        ].join('\n'),
      });
      assert.equal(sc.exit_code, 0, sc.stderr);
      const sha = (b) => createHash('sha256').update(b).digest('hex');
      assert.equal(sc.stdout, `${sha(binary)}\n${sha(Buffer.from(text))}\nTrue True\n`);
      const [blob, notes] = result.content.slice(1);
      assert.ok(Buffer.from(blob.resource.blob, 'base64').equals(binary));
      assert.equal(notes.resource.text, text);
      assert.equal(notes.resource.mimeType, 'text/plain');
    });

    it('files over the caps are listed with returned false and the reason', async () => {
      const { result, sc } = await call({
        code: [
          'import os',
          'open("/tmp/outputs/a-big.bin", "wb").write(b"x" * (1024 * 1024 + 1))',
          'for i in range(2):',
          '    open(f"/tmp/outputs/b-half-{i}.bin", "wb").write(os.urandom(400 * 1024))',
          'for i in range(20):',
          '    open(f"/tmp/outputs/c-small-{i}.txt", "w").write(str(i))',
          'os.symlink("/etc/passwd", "/tmp/outputs/d-link")',
        ].join('\n'),
      });
      const big = listed(sc, 'a-big.bin');
      assert.equal(big.returned, false);
      assert.equal(big.size, MIB + 1);
      assert.match(big.reason, /MCP_EXEC_MAX_OUTPUT_FILE_BYTES/);
      // Two base64 blobs of 400 KiB do not fit in 1,000,000 bytes together: the second waits.
      assert.equal(listed(sc, 'b-half-0.bin').returned, true);
      assert.equal(listed(sc, 'b-half-1.bin').returned, false);
      assert.match(listed(sc, 'b-half-1.bin').reason, /MCP_EXEC_MAX_RESULT_BYTES/);
      // 16 files are read: the two halves and the first 14 small ones, which still fit.
      assert.equal(listed(sc, 'c-small-13.txt').returned, true);
      assert.match(listed(sc, 'c-small-14.txt').reason, /MCP_EXEC_MAX_OUTPUT_FILES/);
      assert.equal(listed(sc, 'd-link').reason, 'not a regular file (symlink)');
      assert.ok(JSON.stringify(result).length <= 1000000, 'the result passed MCP_EXEC_MAX_RESULT_BYTES');
      assert.ok(!JSON.stringify(result).includes('root:x:0:0'), 'host bytes came back');
    });

    it('bad input files are a tool error naming the entry, and nothing runs', async () => {
      const text = await expectToolError(conn, {
        code: 'open("/tmp/outputs/ran", "w").write("ran")',
        files: [{ path: 'ok.txt', content: 'x' }, { path: '../escape.txt', content: 'x' }],
      });
      assert.match(text, /files\[1\] \("\.\.\/escape\.txt"\)/);
      const bad64 = await expectToolError(conn, {
        code: 'pass',
        files: [{ path: 'x.bin', content: 'not base64!', encoding: 'base64' }],
      });
      assert.match(bad64, /files\[0\].*base64/);
    });
  });
}
