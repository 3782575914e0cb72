// Where model and adapter files may be read from (FileRoots, files.* roots), and the checks on a
// model folder's text side: a FIFO, a path outside the roots or an out-of-vocabulary special token
// fails the load naming the file, never by blocking or by echoing contents.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../../daemon/config/load.js';
import { servedModels } from '../../../daemon/engine/demo-model.js';
import { loadNativeModel, ModelLoadError } from '../../../daemon/engine/served-model.js';
import { loadTextModel } from '../../../daemon/engine/text-config.js';
import { FileAccessError, FileRoots, readRegularText, readRegularTextSync } from '../../../daemon/util/file-roots.js';
import { synthModel } from '../../../daemon/tools/synth.js';
import { tempDir } from '../../helpers/temp.js';

function fixture(t: { after(fn: () => void): void }) {
  const base = tempDir('bs-file-roots-');
  t.after(() => base.remove());
  const root = join(base.path, 'root');
  const away = join(base.path, 'away');
  mkdirSync(join(root, 'folder'), { recursive: true });
  mkdirSync(away);
  writeFileSync(join(root, 'folder', 'a.json'), '{}');
  writeFileSync(join(away, 'secret'), 'SECRET');
  symlinkSync(join(away, 'secret'), join(root, 'out'));
  symlinkSync(join(root, 'folder', 'a.json'), join(root, 'in'));
  execFileSync('mkfifo', [join(root, 'pipe')]);
  return { root, away, roots: new FileRoots([root], 'adapter', 'files.adapter_roots') };
}

const problem = (p: FileAccessError['problem'], message: RegExp) => (e: unknown) =>
  e instanceof FileAccessError && e.problem === p && message.test(e.message);

test('FileRoots: inside resolves; outside, symlinks out, missing and FIFOs are refused by name', async (t) => {
  const { root, away, roots } = fixture(t);
  assert.deepEqual(await roots.entry(join(root, 'in')), { real: join(root, 'folder', 'a.json'), folder: false });
  assert.deepEqual(await roots.entry(join(root, 'folder')), { real: join(root, 'folder'), folder: true });
  await assert.rejects(roots.entry(join(away, 'secret')), problem('outside', /outside the adapter roots/));
  await assert.rejects(roots.entry(join(root, '..', 'away', 'secret')), problem('outside', /away\/secret leads/));
  await assert.rejects(roots.entry(join(root, 'out')), problem('outside', /leads through a symlink outside/));
  await assert.rejects(roots.entry(join(root, 'nope')), problem('missing', /nope does not exist/));
  await assert.rejects(roots.entry(join(root, 'pipe')), problem('not_regular', /pipe is a FIFO, not a regular file/));
  // A folder is checked entry by entry: the FIFO, and the symlink out of the roots.
  await assert.rejects(roots.entry(root), (e: unknown) =>
    /root\/(out leads through a symlink outside|pipe is a FIFO)/.test((e as Error).message),
  );
  await assert.rejects(roots.entry(join(root, '..')), problem('outside', /outside the adapter roots/));
});

test('a model folder outside files.model_roots or holding a FIFO fails its load, naming it', async (t) => {
  const base = tempDir('bs-model-roots-');
  t.after(() => base.remove());
  const dir = join(base.path, 'model');
  synthModel({ arch: 'qwen3_moe', shape: 'tiny', out: dir, seed: 1, force: true });
  const profile = (roots: string[]) => ({
    path: dir,
    threads: 1,
    contextLength: 0,
    keepAliveMs: 0,
    queueSize: 1,
    sessions: 1,
    roots: { models: roots, adapters: [] },
  });
  await assert.rejects(
    loadNativeModel(profile([join(base.path, 'elsewhere')]), () => {}),
    (e: unknown) => e instanceof ModelLoadError && /model path .*model leads outside the model roots/.test(e.message),
  );
  execFileSync('mkfifo', [join(dir, 'tokenizer_config.json.fifo')]);
  await assert.rejects(
    loadNativeModel(profile([dir]), () => {}),
    (e: unknown) => e instanceof ModelLoadError && /tokenizer_config\.json\.fifo is a FIFO/.test(e.message),
  );
});

test('the configured models, their adapters and <data_dir>/models|adapters are roots; files.* adds more', () => {
  const config = loadConfig({
    env: {},
    overrides: [
      {
        data_dir: '/data',
        files: { model_roots: ['/hf'], adapter_roots: ['/ad'] },
        models: { m: { path: '/models/m', adapters: { a: { path: '/adapters/a' } } } },
      },
    ],
  });
  assert.deepEqual(servedModels(config, '/').models.m!.roots, {
    models: ['/hf', '/data/models', '/models/m'],
    adapters: ['/ad', '/data/adapters', '/adapters/a'],
  });
});

test('special token ids outside the tokenizer are refused, naming the file, the key and the value', async (t) => {
  for (const [file, key] of [
    ['config.json', 'bos_token_id'],
    ['generation_config.json', 'pad_token_id'],
  ] as const) {
    const dir = tempDir('bs-token-ids-');
    t.after(() => dir.remove());
    synthModel({ arch: 'qwen3_moe', shape: 'tiny', out: dir.path, seed: 1, force: true });
    const vocab = (await loadTextModel(dir.path)).tokenizer.vocabSize;
    const path = join(dir.path, file);
    writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, 'utf8')), [key]: vocab + 7 }));
    await assert.rejects(
      loadTextModel(dir.path),
      new RegExp(`${file}: ${key} ${vocab + 7} is not a token id below ${vocab}`),
    );
  }
});

test('model-folder text files are read only when regular and at most 64 MiB, naming the file and its size', async (t) => {
  const dir = tempDir('bs-text-caps-');
  t.after(() => dir.remove());
  synthModel({ arch: 'qwen3_moe', shape: 'tiny', out: dir.path, seed: 1, force: true });
  const tooLarge = (name: string, bytes: number) => (e: unknown) =>
    e instanceof FileAccessError &&
    e.problem === 'too_large' &&
    e.message.endsWith(`${name} is ${bytes} bytes, over the 64 MiB it may take`);
  // A FIFO template would have blocked a thread-pool thread until a writer came.
  execFileSync('mkfifo', [join(dir.path, 'chat_template.jinja')]);
  await assert.rejects(loadTextModel(dir.path), /chat_template\.jinja is a FIFO, not a regular file/);
  execFileSync('rm', [join(dir.path, 'chat_template.jinja')]);
  truncateSync(join(dir.path, 'tokenizer.json'), (64 << 20) + 1);
  await assert.rejects(loadTextModel(dir.path), tooLarge('tokenizer.json', (64 << 20) + 1));

  // Exactly at the cap is read; one byte over is not (the sync reader shares the rule).
  const file = join(dir.path, 'probe.txt');
  writeFileSync(file, 'x'.repeat(1 << 20));
  assert.equal((await readRegularText(file, 1 << 20)).length, 1 << 20);
  assert.equal(readRegularTextSync(file, 1 << 20).length, 1 << 20);
  assert.throws(
    () => readRegularTextSync(file, (1 << 20) - 1),
    (e: unknown) => e instanceof FileAccessError && e.problem === 'too_large',
  );
});
