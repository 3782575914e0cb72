// Adapters at run time on one loaded model: several resident, chosen per session, switched
// mid-conversation (outputs change from the switch on; truncating back and switching back
// restores them bit for bit), prefix reuse keyed by adapter, unload while in use, misuse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AdapterManager } from '../../../../daemon/engine/adapters/adapter-manager.js';
import { EngineError, NativeModel } from '../../../../daemon/engine/native-model.js';
import { PrefixSession } from '../../../../daemon/engine/prefix-cache.js';
import { synthTemp } from '../../../native/helpers/model-files.js';
import { maxAbs, maxAbsDiff, synthAdapterTemp } from './helpers.js';

const PROMPT = [1, 5, 9, 20, 33, 40, 2, 7, 64, 11];

async function setup(t: { after(fn: () => void): void }) {
  const dir = synthTemp(t, { arch: 'glm4_moe', seed: 6 });
  const model = await NativeModel.load(dir, { threads: 2 });
  t.after(() => model.dispose());
  const adapters = new AdapterManager(model);
  const dirA = synthAdapterTemp(t, {
    model: dir,
    format: 'peft',
    rank: 8,
    alpha: 16,
    rms: 0.02,
    seed: 1,
    targets: ['all'],
  });
  await adapters.load('a', dirA);
  await adapters.load('b', synthAdapterTemp(t, { model: dir, format: 'mlx', rank: 4, alpha: 8, rms: 0.02, seed: 2 }));
  return { model, adapters, dirA };
}

test('switching adapters mid-conversation changes outputs; switching back restores them exactly', async (t) => {
  const { model, adapters } = await setup(t);
  const a = adapters.get('a');
  const b = adapters.get('b');
  // Reference run: the whole conversation with adapter a.
  const ref = await model.createSession();
  ref.setAdapter(a);
  await ref.prefill(PROMPT);
  const refNext = [await ref.decode(3), await ref.decode(4)];

  const s = await model.createSession();
  s.setAdapter(a);
  assert.deepEqual(
    await s.prefill(PROMPT),
    await (async () => {
      const x = await model.createSession();
      x.setAdapter(a);
      return x.prefill(PROMPT);
    })(),
    'same adapter, same prompt: same logits',
  );
  s.setAdapter(b);
  assert.equal(s.info().adapter, 'b');
  const switched = await s.decode(3);
  assert.ok(
    maxAbsDiff(switched, refNext[0]!) > 1e-2 * maxAbs(refNext[0]!),
    "adapter b changes the next token's logits",
  );
  s.setAdapter(null);
  const plain = await s.decode(4);
  assert.ok(maxAbsDiff(plain, refNext[1]!) > 1e-2 * maxAbs(refNext[1]!), 'the base model differs too');
  // Back to a: drop the two tokens computed under b / the base, recompute them under a.
  await s.truncate(PROMPT.length);
  s.setAdapter(a);
  assert.deepEqual(await s.decode(3), refNext[0], 'bit-identical after switching back');
  assert.deepEqual(await s.decode(4), refNext[1]);
});

test('sessions run different adapters side by side on one model', async (t) => {
  const { model, adapters } = await setup(t);
  const single = async (name: string | null) => {
    const x = await model.createSession();
    x.setAdapter(name ? adapters.get(name) : null);
    return x.greedy(PROMPT, 4);
  };
  const [ra, rb, r0] = [await single('a'), await single('b'), await single(null)];
  const sa = await model.createSession();
  const sb = await model.createSession();
  sa.setAdapter(adapters.get('a'));
  sb.setAdapter(adapters.get('b'));
  const [ga, gb] = await Promise.all([sa.greedy(PROMPT, 4), sb.greedy(PROMPT, 4)]);
  assert.deepEqual(ga.logits, ra.logits);
  assert.deepEqual(gb.logits, rb.logits);
  assert.ok(maxAbsDiff(ra.logits[0]!, r0.logits[0]!) > 1e-2 && maxAbsDiff(rb.logits[0]!, r0.logits[0]!) > 1e-2);
  assert.deepEqual(
    adapters.list().map((x) => [x.name, x.format, x.ranks]),
    [
      ['a', 'peft', [8]],
      ['b', 'mlx', [4]],
    ],
  );
  assert.equal(
    adapters.bytes(),
    adapters.list().reduce((n, x) => n + x.bytes, 0),
  );
  // glm4 tiny, rank 8 F32 on q/k/v/o (128/64/64/128 out, 128 in), dense layer 0 MLP (256), shared (128).
  const attn = 4 * (4 * 8 * 128 * 4 + 8 * (128 + 64 + 64 + 128) * 4);
  const mlp = (inter: number) => 2 * (8 * 128 * 4 + inter * 8 * 4) + (8 * inter * 4 + 128 * 8 * 4);
  assert.equal(adapters.list()[0]!.bytes, attn + mlp(256) + 3 * mlp(128));
});

test('prefix reuse is keyed by adapter: another adapter re-prefills, coming back matches a clean run', async (t) => {
  const { model, adapters, dirA } = await setup(t);
  const a = adapters.get('a');
  const b = adapters.get('b');
  const p = new PrefixSession(await model.createSession());
  const turn1 = await p.start(PROMPT, undefined, a);
  await p.decode(17);
  const turn2 = [...PROMPT, 17, 8, 9];
  const withB = await p.start(turn2, undefined, b);
  assert.equal(withB?.reused, 0, 'KV rows computed with adapter a are not reused under b');
  assert.equal(p.adapter?.id, b.id);
  const backToA = await p.start([...turn2, 12], undefined, a);
  assert.equal(backToA?.reused, 0);
  const clean = new PrefixSession(await model.createSession());
  assert.deepEqual(
    backToA?.logits,
    (await clean.start([...turn2, 12], undefined, a))?.logits,
    'identical to a clean run under a',
  );
  const same = await p.start([...turn2, 12, 5], undefined, a);
  assert.equal(same?.reused, turn2.length + 1, 'the same adapter reuses the prefix');
  assert.ok(turn1 && maxAbs(turn1.logits) > 0);
  // A reloaded adapter of the same name is another load (new id): its cache starts empty.
  adapters.unload('a');
  await adapters.load('a', dirA);
  assert.notEqual(adapters.get('a').id, a.id);
  // Same tokens in the same batch as backToA (fast kernel sets round a prefill batch and a
  // one-token decode differently, so the comparison keeps the batching).
  const reloaded = await p.start([...turn2, 12], undefined, adapters.get('a'));
  assert.equal(reloaded?.reused, 0);
  assert.deepEqual(reloaded?.logits, backToA?.logits, 'same weights, same logits');
});

test('unload while a session runs with the adapter: the session keeps it until it switches', async (t) => {
  const { model, adapters } = await setup(t);
  const s = await model.createSession();
  s.setAdapter(adapters.get('a'));
  const before = await s.prefill(PROMPT);
  const info = adapters.unload('a');
  assert.equal(info.name, 'a');
  assert.equal(adapters.has('a'), false);
  await s.truncate(0);
  assert.deepEqual(await s.prefill(PROMPT), before, 'still runs with the unloaded adapter');
  assert.throws(() => s.setAdapter(adapters.get('a')), /adapter "a" is not loaded \(loaded: b\)/);
  s.setAdapter(null);
  assert.equal(s.info().adapter, null);
});

test("misuse: busy sessions, another model's adapter, disposed adapters", async (t) => {
  const { model, adapters } = await setup(t);
  const other = await NativeModel.load(synthTemp(t, { arch: 'glm4_moe', seed: 6 }));
  t.after(() => other.dispose());
  const s = await model.createSession();
  const pending = s.prefill(PROMPT);
  assert.throws(
    () => s.setAdapter(adapters.get('a')),
    (e: Error) =>
      e instanceof EngineError && /setAdapter: the session is busy with another call; await it first/.test(e.message),
  );
  await pending;
  const os = await other.createSession();
  assert.throws(() => os.setAdapter(adapters.get('a')), /setAdapter: adapter "a" was loaded for another model/);
  const b = adapters.get('b');
  adapters.unload('b');
  assert.throws(() => s.setAdapter(b), /setAdapter: the adapter was disposed; load it again/);
  assert.equal(s.info().adapter, null, 'a refused switch changes nothing');
});
