// The demo model: generated once under data_dir, served when no model is configured, and the
// whole path through `brainstem start` (what `npm start` runs) on a fresh data_dir.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { loadConfig } from '../../../daemon/config/load.js';
import {
  DEMO_MODEL,
  demoModelDir,
  ensureDemoModel,
  servedModels,
  withSnapshotBlobs,
} from '../../../daemon/engine/demo-model.js';
import { type FileAccessError, FileRoots } from '../../../daemon/util/file-roots.js';
import { spawnTestDaemon } from '../../helpers/daemon.js';
import { tempDir } from '../../helpers/temp.js';

test('the demo model is written once, completely, and reused', (t) => {
  const data = tempDir('bs-demo-');
  t.after(() => data.remove());
  const dir = demoModelDir(data.path);
  assert.equal(ensureDemoModel(dir), true);
  for (const f of [
    'config.json',
    'tokenizer.json',
    'tokenizer_config.json',
    'generation_config.json',
    'model.safetensors.index.json',
  ])
    assert.ok(existsSync(join(dir, f)), f);
  const mtime = statSync(join(dir, 'config.json')).mtimeMs;
  assert.equal(ensureDemoModel(dir), false);
  assert.equal(statSync(join(dir, 'config.json')).mtimeMs, mtime);
  assert.deepEqual(readdirSync(dirname(dir)), ['demo-qwen3_moe-tiny-v1'], 'no temporary folder is left behind');
});

test('served models: the configured ones with resolved paths, else the demo unless switched off', () => {
  const cfg = (o: Record<string, unknown>) => loadConfig({ env: {}, overrides: { data_dir: '/srv/bs', ...o } });
  const configured = servedModels(
    cfg({ engine: { threads: 2 }, models: { a: { path: '~/m/a', top_k: 6 }, b: { path: 'rel/b', threads: 4 } } }),
    '/work',
  );
  assert.equal(configured.demo, undefined);
  assert.deepEqual(Object.keys(configured.models), ['a', 'b']);
  assert.equal(configured.models.a!.path, join(homedir(), 'm/a'));
  assert.deepEqual(
    [configured.models.a!.threads, configured.models.a!.topK, configured.models.a!.keepAliveMs],
    [2, 6, 300_000],
  );
  assert.deepEqual([configured.models.b!.path, configured.models.b!.threads], ['/work/rel/b', 4]);
  const demo = servedModels(cfg({}));
  assert.deepEqual(Object.keys(demo.models), [DEMO_MODEL]);
  assert.equal(demo.models[DEMO_MODEL]!.path, '/srv/bs/models/demo-qwen3_moe-tiny-v1');
  assert.deepEqual(servedModels(cfg({ engine: { demo_model: false } })).models, {});
});

test('`brainstem start` with no model configured serves the demo model on a fresh data_dir', async (t) => {
  const d = await spawnTestDaemon({ BRAINSTEM_ENGINE_THREADS: '1' });
  t.after(() => d.cleanup());
  const auth = { authorization: `Bearer ${d.token}` };
  const models = (await (await fetch(`${d.runtime.http}/v1/models`, { headers: auth })).json()) as any;
  assert.deepEqual(
    models.data.map((m: any) => [m.id, m.state]),
    [['demo', 'unloaded']],
  );
  const r = await fetch(`${d.runtime.http}/v1/chat/completions`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hello' }], max_tokens: 8 }),
  });
  const body = (await r.json()) as any;
  assert.equal(r.status, 200, JSON.stringify(body));
  assert.equal(body.model, 'demo', 'the only model answers when the request names none');
  assert.equal(typeof body.choices[0].message.content, 'string');
  assert.ok(existsSync(join(demoModelDir(d.dataDir), 'model.safetensors.index.json')));
  assert.match(d.output().stdout, /generated the demo model \(random weights: its output is gibberish\)/);
});

test('a configured Hugging Face cache snapshot admits its blobs, and nothing else beside it', async (t) => {
  const cache = tempDir('bs-hf-');
  t.after(() => cache.remove());
  const repo = join(cache.path, 'models--org--tiny');
  const snap = join(repo, 'snapshots', 'abc123');
  mkdirSync(join(repo, 'blobs'), { recursive: true });
  mkdirSync(snap, { recursive: true });
  writeFileSync(join(repo, 'blobs', 'f00d'), '{}');
  symlinkSync('../../blobs/f00d', join(snap, 'config.json'));
  writeFileSync(join(cache.path, 'elsewhere.json'), '{}');
  symlinkSync('../../../elsewhere.json', join(snap, 'tokenizer.json'));

  assert.deepEqual(withSnapshotBlobs(snap), [snap, join(repo, 'blobs')]);
  assert.deepEqual(withSnapshotBlobs(join(cache.path, 'plain')), [join(cache.path, 'plain')]);
  const cfg = loadConfig({ env: {}, overrides: { data_dir: '/srv/bs', models: { tiny: { path: snap } } } });
  const roots = servedModels(cfg).models.tiny!.roots!;
  const files = new FileRoots(roots.models, 'model', 'files.model_roots');
  assert.equal(await files.resolve(join(snap, 'config.json')), join(repo, 'blobs', 'f00d'));
  await assert.rejects(files.resolve(join(snap, 'tokenizer.json')), (e: FileAccessError) => e.problem === 'outside');
});
