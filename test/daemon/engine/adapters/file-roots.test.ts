// adapters.load reads only inside the adapter roots (files.adapter_roots, <data_dir>/adapters, the
// configured adapter paths): a path outside or a symlink out is invalid params, a FIFO or a
// malformed file is a bad-file error (-32006) that names the file and never echoes its contents.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { synthAdapter } from '../../../../daemon/tools/synth-adapter.js';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../../helpers/daemon.js';
import { RpcTestClient } from '../../../helpers/rpc.js';
import { synthTiny, type TinyModel } from '../../../helpers/serving.js';
import { tempDir, type TempDir } from '../../../helpers/temp.js';

let model: TinyModel;
let roots: TempDir;
let outside: TempDir;
let d: TestDaemon;
let ws: RpcTestClient;
let writer: ChildProcess | undefined;

before(async () => {
  model = await synthTiny(5);
  roots = tempDir('bs-adapter-roots-');
  outside = tempDir('bs-adapter-outside-');
  synthAdapter({
    model: model.path,
    out: join(roots.path, 'good'),
    format: 'edge0',
    rank: 4,
    alpha: 8,
    rms: 0.03,
    seed: 3,
  });
  synthAdapter({
    model: model.path,
    out: join(outside.path, 'away'),
    format: 'edge0',
    rank: 4,
    alpha: 8,
    rms: 0.03,
    seed: 3,
  });
  writeFileSync(join(outside.path, 'secret.txt'), 'TOP-SECRET-CONTENT\n');
  writeFileSync(join(roots.path, 'junk.safetensors'), 'TOP-SECRET-JUNK with no header at all');
  symlinkSync(join(outside.path, 'away'), join(roots.path, 'link-out'));
  execFileSync('mkfifo', [join(roots.path, 'pipe.safetensors')]);
  mkdirSync(join(roots.path, 'with-pipe'));
  execFileSync('mkfifo', [join(roots.path, 'with-pipe', 'adapter_config.json')]);
  d = await startTestDaemon({
    models: { tiny: { path: model.path, threads: 1, context_length: 256, keep_alive: -1 } },
    files: { adapter_roots: [roots.path] },
  });
  ws = await RpcTestClient.connect(d.ws, TEST_TOKEN);
});

after(async () => {
  writer?.kill();
  await ws?.close();
  await d?.stop();
  for (const t of [model, roots, outside]) t?.remove();
});

const load = (name: string, path: string) => ws.call('adapters.load', { name, path }, 60_000);

test('an adapter inside the roots loads; one outside them or behind a symlink out is invalid params', async () => {
  const good = await load('good', join(roots.path, 'good'));
  assert.equal(good.result?.adapter.name, 'good', JSON.stringify(good.error));
  for (const [name, path] of [
    ['passwd', '/etc/passwd'],
    ['secret', join(outside.path, 'secret.txt')],
    ['dotdot', join(roots.path, '..', outside.path.split('/').pop()!, 'away')],
    ['linked', join(roots.path, 'link-out')],
  ] as const) {
    const r = await load(name, path);
    assert.equal(r.error?.code, -32602, `${name}: ${JSON.stringify(r)}`);
    assert.deepEqual([r.error.data.field, r.error.data.code], ['path', 'path_outside_roots'], name);
    assert.match(r.error.message, /outside the adapter roots .*; add a folder to files\.adapter_roots/, name);
    assert.doesNotMatch(r.error.message, /root:|SECRET|bytes/, `${name}: nothing of the file is echoed`);
  }
  const missing = await load('missing', join(roots.path, 'nope'));
  assert.deepEqual([missing.error?.code, missing.error?.data.code], [-32602, 'path_not_found']);
  assert.match(missing.error!.message, /adapter path .*nope does not exist/);
});

test('a FIFO is refused without being opened, and the daemon keeps answering', async () => {
  // A writer that unblocks a reader: the old code opened the FIFO, got these bytes and failed later.
  const pipe = join(roots.path, 'pipe.safetensors');
  writer = spawn('sh', ['-c', `printf 'TOP-SECRET-PIPE' > '${pipe}'`], { stdio: 'ignore' });
  for (const path of [pipe, join(roots.path, 'with-pipe')]) {
    const r = await load('piped', path);
    assert.equal(r.error?.code, -32006, JSON.stringify(r));
    assert.deepEqual([r.error.data.field, r.error.data.code], ['path', 'bad_file']);
    assert.match(
      r.error.message,
      /adapter file .*(pipe\.safetensors|adapter_config\.json) is a FIFO, not a regular file/,
    );
  }
  assert.ok((await ws.call('adapters.list', {})).result, 'the daemon still answers');
});

test('a malformed file inside the roots is a bad-file error that does not echo its contents', async () => {
  const r = await load('junk', join(roots.path, 'junk.safetensors'));
  assert.equal(r.error?.code, -32006, JSON.stringify(r));
  assert.match(r.error.message, /junk\.safetensors/);
  assert.doesNotMatch(r.error.message, /SECRET|JUNK/);
});

test('a PEFT folder without its adapter_config.json, and a folder the daemon cannot read, are bad files naming them', async () => {
  const peft = join(roots.path, 'no-config');
  synthAdapter({ model: model.path, out: peft, format: 'peft', rank: 4, alpha: 8, rms: 0.03, seed: 4 });
  rmSync(join(peft, 'adapter_config.json'));
  const r = await load('noconfig', peft);
  assert.equal(r.error?.code, -32006, JSON.stringify(r));
  assert.deepEqual([r.error.data.field, r.error.data.code], ['path', 'bad_file']);
  assert.match(r.error.message, /adapter_config\.json is missing: the adapter at .*no-config needs it/);
  // Root ignores permissions: the unreadable case is only checkable as another user.
  if (process.getuid?.() === 0) return;
  const locked = join(roots.path, 'locked');
  mkdirSync(locked, { mode: 0o000 });
  const l = await load('locked', locked);
  assert.equal(l.error?.code, -32006, JSON.stringify(l));
  assert.match(l.error.message, /adapter path .*locked cannot be read \(EACCES\)/);
});
