// Routing width per session (setTopK, a request's experts_per_token): the model's own K is
// today's output bit for bit, a narrower K equals the same model loaded with that topK — for
// prefill and decode, on the exact path and on staged decode with the prerouter predicting at
// the session's K — out-of-range widths are refused, and the prefix cache never reuses keys and
// values computed at another K.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EngineError, NativeModel, type NativeSession } from '../../../daemon/engine/native-model.js';
import { PrefixSession } from '../../../daemon/engine/prefix-cache.js';
import type { LoadModelOptions } from '../../../daemon/native/binding.js';
import { Prng } from '../../../robot/common/prng.js';
import { synthTemp } from '../../native/helpers/model-files.js';

const STEPS = 6;
// 40 tokens: the prefill and then single-token decode steps both run at the session's K.
const prompt = (() => {
  const rng = new Prng(5);
  return Array.from({ length: 40 }, () => rng.int(640));
})();

async function load(t: { after(fn: () => void): void }, dir: string, o: LoadModelOptions): Promise<NativeModel> {
  const m = await NativeModel.load(dir, { threads: 2, ...o });
  t.after(() => m.dispose());
  return m;
}

async function greedyAt(m: NativeModel, k: number | null, session?: NativeSession) {
  const s = session ?? (await m.createSession());
  s.setTopK(k);
  const out = await s.greedy(prompt, STEPS);
  assert.equal(s.info().topK, k ?? m.summary.topK);
  return out;
}

const PROFILES: [string, LoadModelOptions][] = [
  ['exact', {}],
  [
    'whole-layer prefill, staged decode, prerouter on',
    { prefillPath: 'whole-layer', decodePath: 'staged', prerouter: 'on' },
  ],
];

for (const [name, profile] of PROFILES) {
  test(`${name}: K = the model's K is today's output; K = 2 differs and equals a model loaded with topK 2`, async (t) => {
    const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 31 });
    const full = await load(t, dir, profile);
    const narrow = await load(t, dir, { ...profile, topK: 2 });
    assert.equal(full.summary.topK, 4);
    const today = await (await full.createSession()).greedy(prompt, STEPS);
    assert.deepEqual(await greedyAt(full, 4), today, 'explicit K = 4: bit for bit');
    assert.deepEqual(await greedyAt(full, null), today, 'K null (the model default): bit for bit');

    const two = await greedyAt(full, 2);
    assert.notDeepEqual(two.logits[0], today.logits[0], 'K = 2 changes the logits');
    assert.deepEqual(
      two,
      await (await narrow.createSession()).greedy(prompt, STEPS),
      'K = 2 = a model loaded with topK 2',
    );

    // One session switched 2 → 4 after a truncate gives today's output again (no state carried over).
    const s = await full.createSession();
    s.setTopK(2);
    await s.greedy(prompt, 2);
    await s.truncate(0);
    assert.deepEqual(await greedyAt(full, 4, s), today, 'switched back to K = 4');
    if (profile.prerouter === 'on') {
      const st = s.info().stream;
      assert.equal(st.prefetchMisses, 0, 'the prerouter predicted at the session K: no prefetch misses');
      assert.equal(st.drops, 0);
    }
  });
}

test('routing widths outside 1..the model K are refused with the rule and the value', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 31 });
  const m = await load(t, dir, {});
  const s = await m.createSession();
  for (const k of [0, 5, -1]) {
    assert.throws(
      () => s.setTopK(k),
      (e: unknown) => e instanceof EngineError && /topK/.test(e.message) && e.message.includes(String(k)),
      `K = ${k}`,
    );
  }
  assert.throws(() => s.setTopK(1.5), EngineError);
  assert.equal(s.info().topK, 4, 'a refused width leaves the session as it was');
});

test('the prefix cache does not reuse keys and values computed at another K', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 31 });
  const m = await load(t, dir, {});
  const cache = new PrefixSession(await m.createSession());
  const at2 = await cache.start(prompt, undefined, null, undefined, 2);
  assert.equal(cache.topK, 2);
  const full = await cache.start(prompt, undefined, null, undefined, null);
  assert.equal(full!.reused, 0, 'another K starts from empty');
  assert.deepEqual(full!.logits, await (await m.createSession()).prefill(prompt), 'full K from a cold cache');
  assert.notDeepEqual(at2!.logits, full!.logits);
  const again = await cache.start([...prompt, 7], undefined, null, undefined, null);
  assert.equal(again!.reused, prompt.length, 'the same K reuses the prefix');
});
