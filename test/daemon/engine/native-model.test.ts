// The engine through its TS classes on tiny model folders: prefill/decode/truncate agree
// with each other, results do not depend on thread count or sharding, the routing width
// override works, and every misuse is a rejected promise with a clear message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EngineError, NativeModel, argmax } from '../../../daemon/engine/native-model.js';
import { loadNative } from '../../../daemon/native/binding.js';
import { tempDir } from '../../helpers/temp.js';
import { writeTinyModel, type TinyArch, type TinyModelOptions } from '../../native/helpers/tiny-model.js';

const ARCHS: TinyArch[] = ['qwen3_moe', 'glm4_moe'];
const PROMPT = [1, 5, 9, 20, 33, 40, 2, 7, 64, 11];

function modelDir(t: { after: (fn: () => void) => void }, opts: TinyModelOptions): string {
  const dir = tempDir('bs-engine-');
  t.after(() => dir.remove());
  writeTinyModel(dir.path, opts);
  return dir.path;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

function maxAbs(a: Float32Array): number {
  return a.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
}

for (const arch of ARCHS) {
  test(`${arch}: one prefill equals prefill + token-by-token decode`, async (t) => {
    const model = await NativeModel.load(modelDir(t, { arch, tieWordEmbeddings: false }));
    t.after(() => model.dispose());
    const whole = await model.createSession();
    const full = await whole.prefill(PROMPT);
    const steps = await model.createSession();
    let last = await steps.prefill(PROMPT.slice(0, 3));
    for (const tok of PROMPT.slice(3)) last = await steps.decode(tok);
    assert.ok(maxAbsDiff(full, last) <= 1e-5 * maxAbs(full), `${arch}: diff ${maxAbsDiff(full, last)}`);
    assert.equal(whole.info().nPast, PROMPT.length);
    assert.equal(steps.info().nPast, PROMPT.length);
    assert.ok(Number.isFinite(maxAbs(full)) && maxAbs(full) > 0.1, 'logits are finite and not degenerate');
  });

  test(`${arch}: truncate reuses a prefix and reproduces the same logits`, async (t) => {
    const model = await NativeModel.load(modelDir(t, { arch, seed: 3 }));
    t.after(() => model.dispose());
    const s = await model.createSession({ contextLength: 64 });
    await s.prefill(PROMPT.slice(0, 6));
    const first = await s.prefill(PROMPT.slice(6));
    await s.truncate(6);
    assert.equal(s.info().nPast, 6);
    const again = await s.prefill(PROMPT.slice(6));
    assert.deepEqual(again, first);
    await s.truncate(2);
    const other = await s.decode(50);
    const fresh = await model.createSession();
    await fresh.prefill(PROMPT.slice(0, 2));
    assert.deepEqual(other, await fresh.decode(50));
    await assert.rejects(s.truncate(99), (e: Error) => e instanceof EngineError && /outside the session's 3 cached tokens/.test(e.message));
  });

  test(`${arch}: thread count and sharding do not change the logits`, async (t) => {
    const single = await NativeModel.load(modelDir(t, { arch, seed: 5 }), { threads: 1 });
    const sharded = await NativeModel.load(modelDir(t, { arch, seed: 5, shards: 3 }), { threads: 3 });
    t.after(() => {
      single.dispose();
      sharded.dispose();
    });
    assert.equal(sharded.summary.files, 3);
    assert.equal(sharded.summary.threads, 3);
    const a = await (await single.createSession()).greedy(PROMPT, 6);
    const b = await (await sharded.createSession()).greedy(PROMPT, 6);
    assert.deepEqual(b.tokens, a.tokens);
    for (let i = 0; i < a.logits.length; i++) assert.deepEqual(b.logits[i], a.logits[i], `step ${i}`);
  });

  test(`${arch}: routing width override changes routing and is bounded`, async (t) => {
    const dir = modelDir(t, { arch, seed: 7 });
    const base = await NativeModel.load(dir);
    const wide = await NativeModel.load(dir, { topK: 4 });
    t.after(() => {
      base.dispose();
      wide.dispose();
    });
    assert.equal(base.summary.topK, 2);
    assert.equal(wide.summary.topK, 4);
    assert.equal(wide.summary.configTopK, 2);
    const sb = await base.createSession();
    const sw = await wide.createSession();
    const lb = await sb.prefill(PROMPT);
    const lw = await sw.prefill(PROMPT);
    assert.ok(maxAbsDiff(lb, lw) > 1e-3, 'four experts per token give other logits than two');
    // Decode touches exactly K experts per MoE layer.
    const before = sw.info().expertsComputed;
    await sw.decode(3);
    assert.equal(sw.info().expertsComputed - before, 4 * wide.summary.moeLayers);
    const max = arch === 'glm4_moe' ? 4 : 8; // glm: topk_group 1 of 2 groups of 4 experts
    await assert.rejects(NativeModel.load(dir, { topK: max + 1 }), new RegExp(`topK \\(routing width\\) must be between 1 and ${max} for this model, got ${max + 1}`));
  });
}

test('active bytes per decoded token are counted from the weights actually read', async (t) => {
  const model = await NativeModel.load(modelDir(t, { arch: 'qwen3_moe', tieWordEmbeddings: false }));
  t.after(() => model.dispose());
  const s = await model.createSession();
  await s.prefill(PROMPT);
  const before = s.info().weightBytes;
  await s.decode(4);
  const perToken = s.info().weightBytes - before;
  const { matrixBytes, expertBytes, moeLayers, topK, experts } = model.summary;
  // Everything except the experts not routed to, and all but one embedding row.
  const unusedExperts = (experts - topK) * expertBytes * moeLayers;
  assert.ok(perToken < matrixBytes - unusedExperts, `${perToken} < ${matrixBytes - unusedExperts}`);
  assert.ok(perToken > topK * expertBytes * moeLayers, `${perToken} counts the routed experts`);
});

test('tied embeddings serve as the output projection', async (t) => {
  const model = await NativeModel.load(modelDir(t, { arch: 'qwen3_moe', tieWordEmbeddings: true }));
  t.after(() => model.dispose());
  assert.equal(model.summary.tieEmbeddings, true);
  const logits = await (await model.createSession()).prefill(PROMPT);
  assert.equal(logits.length, 96);
  assert.ok(argmax(logits) >= 0);
});

test('misuse is a rejected promise with a message naming the problem', async (t) => {
  const model = await NativeModel.load(modelDir(t, { arch: 'glm4_moe' }), { contextLength: 12 });
  const s = await model.createSession();
  await s.prefill([1, 2, 3]);
  await assert.rejects(s.decode(96), /token id 96 at index 0 is outside the vocabulary \[0, 96\)/);
  await assert.rejects(s.prefill([4, -1]), /token id -1 at index 1/);
  assert.equal(s.info().nPast, 3, 'a rejected call leaves the cache unchanged');
  await assert.rejects(s.prefill([]), /no tokens given/);
  await assert.rejects(s.decode(1.5), /decode: token must be an integer between 0 and 2147483647, got 1.5/);
  await assert.rejects(s.prefill(Array.from({ length: 10 }, () => 4)), /context is full: 3 cached \+ 10 new tokens exceed the session's contextLength 12/);
  const pending = s.decode(5);
  await assert.rejects(s.decode(6), /the session is busy with another call; await it before the next/);
  await pending;
  assert.equal(s.info().nPast, 4);

  const addon = loadNative();
  await assert.rejects(addon.prefill(s as never, new Int32Array([1])), /prefill: first argument is not a session handle/);
  await assert.rejects(addon.loadModel(42 as never), /loadModel: dir must be a string/);
  await assert.rejects(NativeModel.load('/x', { threads: 0 }), /loadModel: option threads must be an integer between 1 and 256, got 0/);
  await assert.rejects(NativeModel.load('/x', { contextLength: 'long' as never }), /option contextLength must be an integer .* got a string/);
  await assert.rejects(NativeModel.load('/x', { backend: 'cuda-9' }), /backend "cuda-9" is not compiled into this build \(available: cpu-ref\)/);
  await assert.rejects(model.createSession({ contextLength: 0 }), /createSession: option contextLength must be an integer between 1/);

  s.dispose();
  await assert.rejects(s.decode(1), /decode: the session was disposed/);
  const kept = await model.createSession();
  model.dispose();
  await assert.rejects(model.createSession(), /the model was disposed; load it again/);
  assert.equal((await kept.prefill([1, 2])).length, 96, 'a session keeps its model alive after dispose');
  kept.dispose();
});
