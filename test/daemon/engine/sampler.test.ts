import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_SAMPLING, type SamplingParams, Sampler, resolveSampling } from '../../../daemon/engine/sampler.js';
import { RequestError } from '../../../daemon/engine/request-error.js';
import { EngineError } from '../../../daemon/engine/native-model.js';
import { Prng } from '../../../robot/common/prng.js';

const L = Float32Array.of(2, 1, 0, -1);
const params = (p: Partial<SamplingParams>): SamplingParams => ({ ...DEFAULT_SAMPLING, seed: 1, ...p });

function dist(
  p: Partial<SamplingParams>,
  logits = L,
  prime: number[] = [],
  accepted: number[] = [],
  exempt: number[] = [],
): Map<number, number> {
  const s = new Sampler(params(p), new Set(exempt));
  s.prime(prime);
  for (const t of accepted) s.accept(t);
  const d = s.distribution(logits);
  return new Map([...d.ids].map((id, k) => [id, d.probs[k]]));
}

function softmax(xs: number[]): number[] {
  const e = xs.map((x) => Math.exp(x));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / sum);
}

function assertDist(got: Map<number, number>, want: Record<number, number>, label: string): void {
  assert.deepEqual([...got.keys()].sort(), Object.keys(want).map(Number).sort(), `${label}: kept tokens`);
  for (const [id, p] of Object.entries(want))
    assert.ok(Math.abs(got.get(Number(id))! - p) < 1e-9, `${label}: p[${id}] = ${got.get(Number(id))}, want ${p}`);
}

test('temperature 1 is the softmax; temperature 0.5 sharpens it (hand-computed)', () => {
  const p1 = softmax([2, 1, 0, -1]);
  assertDist(dist({}), { 0: p1[0], 1: p1[1], 2: p1[2], 3: p1[3] }, 'T=1');
  const p05 = softmax([4, 2, 0, -2]);
  assertDist(dist({ temperature: 0.5 }), { 0: p05[0], 1: p05[1], 2: p05[2], 3: p05[3] }, 'T=0.5');
});

test('top-k, top-p and min-p keep the hand-computed sets', () => {
  const e = Math.E;
  assertDist(dist({ topK: 2 }), { 0: e / (e + 1), 1: 1 / (e + 1) }, 'top_k 2');
  // T=1 probabilities ≈ 0.644, 0.237, 0.087, 0.032.
  assertDist(dist({ topP: 0.8 }), { 0: e / (e + 1), 1: 1 / (e + 1) }, 'top_p 0.8');
  assertDist(dist({ topP: 0.6 }), { 0: 1 }, 'top_p 0.6');
  assertDist(dist({ minP: 0.2 }), { 0: e / (e + 1), 1: 1 / (e + 1) }, 'min_p 0.2 (0.237 ≥ 0.129)');
  const p3 = softmax([2, 1, 0]);
  assertDist(dist({ minP: 0.1 }), { 0: p3[0], 1: p3[1], 2: p3[2] }, 'min_p 0.1');
  assertDist(dist({ topK: 3, topP: 0.95 }), { 0: p3[0], 1: p3[1], 2: p3[2] }, 'top_p over the top-k renormalised mass');
});

test('greedy: temperature 0 (or top_k 1) picks the argmax, lowest id on ties', () => {
  assertDist(dist({ temperature: 0 }, Float32Array.of(1, 3, 3)), { 1: 1 }, 'T=0');
  assertDist(dist({ topK: 1 }, Float32Array.of(1, 3, 3)), { 1: 1 }, 'top_k 1');
  const s = new Sampler(params({ temperature: 0 }));
  assert.equal(s.sample(Float32Array.of(0, -Infinity, 5, 4)), 2);
});

test('repetition penalty divides positive and multiplies negative logits of recent tokens', () => {
  // Recent {0, 3}: 2/2 = 1 and -1*2 = -2.
  const p = softmax([1, 1, 0, -2]);
  assertDist(dist({ repetitionPenalty: 2 }, L, [0, 3]), { 0: p[0], 1: p[1], 2: p[2], 3: p[3] }, 'repetition 2');
  const window1 = softmax([2, 1, 0, -2]);
  assertDist(
    dist({ repetitionPenalty: 2, repeatLastN: 1 }, L, [0, 3]),
    { 0: window1[0], 1: window1[1], 2: window1[2], 3: window1[3] },
    'only the last token',
  );
  const exempt = softmax([2, 1, 0, -2]);
  assertDist(
    dist({ repetitionPenalty: 2 }, L, [0, 3], [], [0]),
    { 0: exempt[0], 1: exempt[1], 2: exempt[2], 3: exempt[3] },
    'stop tokens exempt',
  );
});

test('frequency and presence penalties subtract per output occurrence (prompt tokens do not count)', () => {
  // Token 1 sampled twice: 1 - 0.5*2 - 0.25 = -0.25.
  const p = softmax([2, -0.25, 0, -1]);
  assertDist(
    dist({ frequencyPenalty: 0.5, presencePenalty: 0.25 }, L, [1, 1, 1], [1, 1]),
    { 0: p[0], 1: p[1], 2: p[2], 3: p[3] },
    'freq/presence',
  );
});

test('entries beyond the vocabulary are never sampled', () => {
  const s = new Sampler(params({ temperature: 0 }));
  assert.equal(s.sample(Float32Array.of(0, 1, 9), 2), 1);
  // No finite logit is the model's fault (an engine error), never the request's.
  assert.throws(
    () => s.sample(Float32Array.of(-Infinity, NaN)),
    (e: Error) => e instanceof EngineError && /no token has a finite logit .*the model is faulty/.test(e.message),
  );
});

test('same seed → same tokens; another seed → other tokens', () => {
  const draw = (seed: number): number[] => {
    const s = new Sampler(params({ seed, temperature: 1.5 }));
    const r = new Prng(99);
    return Array.from({ length: 64 }, () => s.sample(Float32Array.from({ length: 50 }, () => r.normal())));
  };
  assert.deepEqual(draw(7), draw(7));
  assert.notDeepEqual(draw(7), draw(8));
  // Seeds beyond 32 bits are accepted and fold deterministically.
  const big = (seed: number): number[] => {
    const s = new Sampler(params({ seed }));
    return Array.from({ length: 16 }, () => s.sample(L));
  };
  assert.deepEqual(big(2 ** 40 + 5), big(2 ** 40 + 5));
});

for (const [label, p] of [
  ['top_k 3', { topK: 3, temperature: 0.8 }],
  ['unfiltered (drawn from the weights in id order)', { temperature: 0.8 }],
] as const) {
  test(`draw frequencies match the distribution, ${label} (20k seeded draws, within 5 sigma)`, () => {
    const s = new Sampler(params({ seed: 3, ...p }));
    const logits = Float32Array.of(2, 1, -Infinity, 0, -1);
    const d = s.distribution(logits);
    const n = 20_000;
    const counts = new Map<number, number>();
    for (let i = 0; i < n; i++) {
      const t = s.sample(logits);
      counts.set(t, (counts.get(t) ?? 0) + 1);
    }
    assert.equal(counts.has(2), false, 'a -Infinity logit is never drawn');
    if (p.topK) assert.equal(counts.has(4), false, 'top_k 3 never draws the fourth token');
    d.ids.forEach((id, k) => {
      const q = d.probs[k];
      const sigma = Math.sqrt(n * q * (1 - q));
      assert.ok(Math.abs((counts.get(id) ?? 0) - n * q) < 5 * sigma, `token ${id}: ${counts.get(id)} vs ${n * q}`);
    });
  });
}

// The filters as written down: every finite token sorted by logit (lower id on ties), the first
// top_k, the prefix whose mass reaches top_p, then min-p against the top token.
function referenceDistribution(l: Float32Array, p: SamplingParams): Map<number, number> {
  const max = Math.max(...l.filter((x) => x > -Infinity));
  const z = (id: number) => (l[id]! - max) / p.temperature;
  let ids = [...l.keys()].filter((i) => l[i]! > -Infinity).sort((a, b) => l[b]! - l[a]! || a - b);
  if (p.topK > 0) ids = ids.slice(0, p.topK);
  const mass = (p.topK > 0 ? ids : [...l.keys()]).reduce((s, i) => s + Math.exp(z(i)), 0);
  if (p.topP < 1) {
    let cum = 0;
    const keep = ids.findIndex((i) => (cum += Math.exp(z(i)) / mass) >= p.topP);
    ids = ids.slice(0, keep < 0 ? ids.length : keep + 1);
  }
  if (p.minP > 0) ids = ids.filter((i) => z(i) >= Math.log(p.minP));
  const sum = ids.reduce((s, i) => s + Math.exp(z(i)), 0);
  return new Map(ids.map((i) => [i, Math.exp(z(i)) / sum]));
}

test('seeded random logits and filters: the sampler keeps the reference sets and probabilities', () => {
  const rng = new Prng(91);
  for (let c = 0; c < 300; c++) {
    const n = 1 + rng.int(c % 10 === 0 ? 5000 : 300);
    // Few distinct values (ties), some -Infinity, and a spread that makes top-p keep many tokens.
    const levels = 2 + rng.int(60);
    const logits = Float32Array.from({ length: n }, () =>
      rng.int(12) === 0 ? -Infinity : (rng.int(levels) * 8) / levels,
    );
    if (!logits.some((x) => x > -Infinity)) logits[rng.int(n)] = 0;
    const p = params({
      temperature: [0.5, 1, 1.7][rng.int(3)]!,
      topK: rng.int(3) === 0 ? 0 : 1 + rng.int(60),
      topP: rng.int(2) === 0 ? 1 : 0.05 + 0.9 * rng.next(),
      minP: rng.int(3) === 0 ? 0.001 + 0.3 * rng.next() : 0,
    });
    const label = `case ${c} (seed 91) n ${n} ${JSON.stringify({ ...p, seed: undefined })}`;
    const want = referenceDistribution(logits, p);
    const got = new Sampler(p).distribution(logits);
    assert.deepEqual(
      [...got.ids].sort((a, b) => a - b),
      [...want.keys()].sort((a, b) => a - b),
      `${label}: kept tokens`,
    );
    got.ids.forEach((id, k) =>
      assert.ok(
        Math.abs(got.probs[k]! - want.get(id)!) < 1e-12,
        `${label}: p[${id}] ${got.probs[k]} vs ${want.get(id)}`,
      ),
    );
  }
});

test('request fields resolve over model defaults; bad values name the field', () => {
  const p = resolveSampling({ top_p: 0.5, seed: 4, repeat_penalty: 1.1 }, { temperature: 0.6, topK: 20 });
  assert.deepEqual(p, { ...DEFAULT_SAMPLING, temperature: 0.6, topK: 20, topP: 0.5, repetitionPenalty: 1.1, seed: 4 });
  const bad: Array<[Record<string, unknown>, RegExp]> = [
    [{ temperature: -1 }, /^temperature: must be in \[0, 100\], got -1/],
    [{ top_k: 1.5 }, /^top_k: must be an integer, got 1.5/],
    [{ top_p: 2 }, /^top_p: must be in \[0, 1\]/],
    [{ seed: 'x' }, /^seed: must be a number, got "x"/],
    [{ presence_penalty: 3 }, /^presence_penalty: must be in \[-2, 2\]/],
  ];
  for (const [req, re] of bad)
    assert.throws(
      () => resolveSampling(req),
      (e: unknown) => e instanceof RequestError && re.test(e.message),
      JSON.stringify(req),
    );
});
