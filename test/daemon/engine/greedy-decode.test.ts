// decodeGreedy on synthetic tiny models: the session's argmax (below a vocabulary limit) is the
// token the logits path picks, the daemon's token loop takes it for greedy requests, and a
// session without it (or a request that needs the logits) keeps the logits path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generate } from '../../../daemon/engine/generate.js';
import { NativeModel, argmax } from '../../../daemon/engine/native-model.js';
import { type LogitsSource, PrefixSession } from '../../../daemon/engine/prefix-cache.js';
import { DEFAULT_SAMPLING, Sampler } from '../../../daemon/engine/sampler.js';
import { synthTemp } from '../../native/helpers/model-files.js';

const PROMPT = [1, 5, 9, 20, 33, 40, 2, 7, 64, 11, 300, 599];
const VOCAB = 640; // tiny

for (const arch of ['qwen3_moe', 'glm4_moe', 'llama'] as const) {
  test(`${arch}: decodeGreedy returns the argmax the logits path picks, below any vocabulary limit`, async (t) => {
    const model = await NativeModel.load(synthTemp(t, { arch, seed: 4 }));
    t.after(() => model.dispose());
    for (const limit of [undefined, VOCAB, 600, 7]) {
      const viaLogits = await model.createSession();
      const viaGreedy = await model.createSession();
      const first = await viaLogits.prefill(PROMPT);
      await viaGreedy.prefill(PROMPT);
      const pick = (l: Float32Array) => argmax(l.subarray(0, limit ?? l.length));
      let a = pick(first);
      let b = a;
      const tokens: number[] = [];
      for (let i = 0; i < 10; i++) {
        a = pick(await viaLogits.decode(a));
        b = await viaGreedy.decodeGreedy(b, limit);
        assert.equal(b, a, `${arch} limit ${limit} step ${i}`);
        tokens.push(b);
      }
      assert.ok(
        tokens.every((id) => id >= 0 && id < (limit ?? VOCAB)),
        `${arch} limit ${limit}: ${tokens}`,
      );
      assert.equal(viaGreedy.info().nPast, PROMPT.length + 10);
      viaLogits.dispose();
      viaGreedy.dispose();
    }
  });
}

/** The native session without decodeGreedy: what the token loop did before it existed. */
function logitsOnly(s: LogitsSource): LogitsSource {
  return {
    prefill: (t) => s.prefill(t),
    decode: (t) => s.decode(t),
    truncate: (n) => s.truncate(n),
    get length() {
      return s.length;
    },
  };
}

test('the token loop decodes greedy requests through decodeGreedy with the tokens of the logits path', async (t) => {
  const model = await NativeModel.load(synthTemp(t, { arch: 'qwen3_moe', seed: 6 }));
  t.after(() => model.dispose());
  const run = async (wrap: (s: LogitsSource) => LogitsSource, temperature = 0) => {
    const native = await model.createSession();
    const session = new PrefixSession(wrap(native));
    const gen = generate(session, {
      prompt: PROMPT,
      maxTokens: 16,
      sampler: new Sampler({ ...DEFAULT_SAMPLING, seed: 3, temperature }),
      detokenizer: { push: () => '', flush: () => '' },
      stopTokens: new Set(),
      vocabSize: 600,
    });
    let step = await gen.next();
    while (!step.done) step = await gen.next();
    native.dispose();
    return { tokens: step.value.tokens, stats: session.stats };
  };
  const fast = await run((s) => s);
  const slow = await run(logitsOnly);
  assert.equal(fast.tokens.length, 16);
  assert.deepEqual(fast.tokens, slow.tokens);
  assert.equal(fast.stats.greedyDecodes, 15, 'every decode step left the logits native');
  assert.equal(slow.stats.greedyDecodes, 0);
  const sampled = await run((s) => s, 0.8);
  assert.equal(sampled.stats.greedyDecodes, 0, 'a sampled request reads the logits');
  assert.equal(sampled.stats.decodedTokens, 15);
});

test('decodeGreedy misuse is a rejected promise naming the argument', async (t) => {
  const model = await NativeModel.load(synthTemp(t, { arch: 'glm4_moe' }), { contextLength: 12 });
  t.after(() => model.dispose());
  const s = await model.createSession();
  await s.prefill([1, 2, 3]);
  await assert.rejects(s.decodeGreedy(VOCAB), /token id 640 at index 0 is outside the vocabulary \[0, 640\)/);
  await assert.rejects(s.decodeGreedy(1.5), /decodeGreedy: token must be an integer between 0 and 2147483647/);
  await assert.rejects(
    s.decodeGreedy(1, 0),
    /decodeGreedy: vocabSize must be an integer between 1 and 2147483647, got 0/,
  );
  assert.equal(s.info().nPast, 3, 'a rejected call leaves the cache unchanged');
  const pending = s.decodeGreedy(5);
  await assert.rejects(s.decodeGreedy(6), /decodeGreedy: the session is busy/);
  await pending;
  s.dispose();
  await assert.rejects(s.decodeGreedy(1), /decodeGreedy: the session was disposed/);
});
