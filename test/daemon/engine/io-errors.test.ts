// A weight file (or prerouter heads file) that shrinks under a running model, dense or MoE: the
// next request is rejected with a clear error naming the file (no SIGBUS from the mapping, no crash), other models keep working, and
// once the file is whole again the same session continues with the right logits. Expert reads
// that fail in the I/O threads (prefetches in flight when the file shrank) leave no trace.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineError, NativeModel, type NativeSession, argmax } from '../../../daemon/engine/native-model.js';
import { writePrerouterHeads } from '../../../daemon/models/prerouter-heads.js';
import { Prng } from '../../../robot/common/prng.js';
import type { LoadModelOptions } from '../../../daemon/native/binding.js';
import { shardOf, synthTemp } from '../../native/helpers/model-files.js';

const PROMPT = [3, 14, 15, 92, 65, 35, 89, 79];
const PROFILES: [string, LoadModelOptions][] = [
  [
    'staged decode, direct reads, prerouter',
    { decodePath: 'staged', prefillPath: 'whole-layer', ioMode: 'direct', prerouter: 'on' },
  ],
  ['exact path (experts read through the mapping)', {}],
  ['hot decode, page-cache reads', { decodePath: 'hot', prefillPath: 'staged' }],
];

for (const [name, opts] of PROFILES) {
  test(`${name}: a shrunk weight file fails the request, not the process`, async (t) => {
    const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 4 });
    const control = synthTemp(t, { arch: 'qwen3_moe', seed: 4 });
    const model = await NativeModel.load(dir, { threads: 2, ...opts });
    const other = await NativeModel.load(control, { threads: 2, ...opts });
    t.after(() => {
      model.dispose();
      other.dispose();
    });
    const s = await model.createSession();
    const c = await other.createSession();
    let logits = await s.prefill(PROMPT);
    let want = await c.prefill(PROMPT);
    for (let i = 0; i < 3; i++) {
      logits = await s.decode(argmax(logits));
      want = await c.decode(argmax(want));
    }
    assert.deepEqual(logits, want);

    const shard = shardOf(dir, 'model.layers.2.mlp.switch_mlp.down_proj.weight');
    const bytes = readFileSync(shard);
    truncateSync(shard, Math.floor(bytes.length / 2));
    const next = argmax(logits);
    for (let i = 0; i < 2; i++) {
      await assert.rejects(
        s.decode(next),
        (e: Error) =>
          e instanceof EngineError &&
          e.message.includes(shard) &&
          /shrank from \d+ to \d+ bytes since the model was loaded \(truncated or rewritten\?\); reload the model/.test(
            e.message,
          ),
      );
    }
    await assert.rejects(
      model.createSession().then((x) => x.prefill([1, 2])),
      /shrank from/,
    );
    assert.equal(s.info().nPast, PROMPT.length + 3, 'the failed requests did not advance the session');
    // Another model is unaffected.
    want = await c.decode(next);

    writeFileSync(shard, bytes);
    assert.deepEqual(await s.decode(next), want, `${name}: after the file is whole again the session continues`);
    assert.equal(s.info().stream.drops, 0);
  });
}

/** Truncates `file` to 4 KiB, checks that the next decode is refused naming it, restores it and
 *  checks that the session then continues as `control` does. */
async function shrinkAndRestore(file: string, s: NativeSession, c: NativeSession, logits: Float32Array) {
  const bytes = readFileSync(file);
  truncateSync(file, 4096);
  const next = argmax(logits);
  await assert.rejects(
    s.decode(next),
    (e: Error) =>
      e instanceof EngineError && e.message.includes(file) && /shrank from \d+ to 4096 bytes/.test(e.message),
  );
  writeFileSync(file, bytes);
  assert.deepEqual(await s.decode(next), await c.decode(next), 'after the file is whole again the session continues');
}

// Weights read only through the mapping (no expert reads to fail first) were a SIGBUS.
test('a dense model: a shrunk weight file fails the request, not the process', async (t) => {
  const [dir, control] = [1, 2].map(() => synthTemp(t, { arch: 'llama', seed: 6 }));
  const [model, other] = await Promise.all([
    NativeModel.load(dir!, { threads: 2 }),
    NativeModel.load(control!, { threads: 2 }),
  ]);
  t.after(() => {
    model.dispose();
    other.dispose();
  });
  const [s, c] = await Promise.all([model.createSession(), other.createSession()]);
  const logits = await s.prefill(PROMPT);
  await c.prefill(PROMPT);
  await shrinkAndRestore(shardOf(dir!, 'model.layers.1.mlp.down_proj.weight'), s, c, logits);
});

test('a shrunk prerouter heads file fails the request, not the process', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 4 });
  const heads = join(dir, 'heads.safetensors');
  const rng = new Prng(9);
  const fill = (n: number) => Float32Array.from({ length: n }, () => rng.normal() * 0.1);
  const [H, E] = [128, 16];
  writePrerouterHeads(
    heads,
    [1, 2].map((owner) => ({
      owner,
      units: 64,
      fc1: fill(64 * (H + 2 * E)),
      fc2: fill(E * 64),
      linear: fill(E * (H + 2 * E)),
    })),
    { topK: 4, routing: 'softmax_topk', hiddenSize: H, numExperts: E, source: 'test' },
  );
  const [model, other] = await Promise.all(
    [heads, heads].map((p) => NativeModel.load(dir, { threads: 2, prerouter: p })),
  );
  t.after(() => {
    model!.dispose();
    other!.dispose();
  });
  const [s, c] = await Promise.all([model!.createSession(), other!.createSession()]);
  const logits = await s.prefill(PROMPT);
  await c.prefill(PROMPT);
  await shrinkAndRestore(heads, s, c, logits);
});
