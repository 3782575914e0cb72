import { test } from 'node:test';
import assert from 'node:assert/strict';
import { attend, rmsNorm, rmsNormHeads, rope, silu, softmax } from '../../../../daemon/tools/reference/ops.js';
import { routeSigmoidGroup, routeSoftmaxTopK, topK } from '../../../../daemon/tools/reference/routing.js';

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol = 1e-12, what = ''): void => {
  assert.equal(a.length, b.length, what);
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]}`);
};

test('rmsNorm: [3, 4] has mean square 12.5', () => {
  const s = 1 / Math.sqrt(12.5 + 0.5);
  close(rmsNorm(Float64Array.of(3, 4), Float64Array.of(1, 2), 0.5), [3 * s, 8 * s]);
  const x = Float64Array.of(3, 4, 1, 1);
  rmsNormHeads(x, Float64Array.of(1, 1), 0);
  close(x, [3 / Math.sqrt(12.5), 4 / Math.sqrt(12.5), 1, 1]);
});

test('rope: identity at position 0, rotate-half pairing (i, i + rot/2), partial dims pass through', () => {
  const x = Float64Array.of(1, 2, 3, 4, 5, 6);
  rope(x, 6, 6, 0, 10000);
  close(x, [1, 2, 3, 4, 5, 6]);
  // headDim 4, rot 2 (partial 0.5): only the pair (0, 1) rotates, by pos * theta^0 = pos.
  const y = Float64Array.of(1, 0, 7, 8, 0, 1, 9, 10);
  rope(y, 4, 2, 1, 10000);
  close(y, [Math.cos(1), Math.sin(1), 7, 8, -Math.sin(1), Math.cos(1), 9, 10]);
  // headDim 4, full rot: pairs (0, 2) at frequency 1 and (1, 3) at theta^(-1/2) = 0.01.
  const z = Float64Array.of(1, 1, 0, 0);
  rope(z, 4, 4, 2, 10000);
  close(z, [Math.cos(2), Math.cos(0.02), Math.sin(2), Math.sin(0.02)]);
});

test('attention: one position returns v; equal keys average values; GQA maps heads to kv heads', () => {
  const v1 = Float64Array.of(1, 2, 3, 4);
  const one = attend(Float64Array.of(5, 5, 5, 5, 1, 1, 1, 1), [Float64Array.of(1, 0, 0, 1)], [v1], 4, 2, 2);
  close(one, [1, 2, 1, 2, 3, 4, 3, 4]);
  const k = Float64Array.of(1, 1);
  const avg = attend(Float64Array.of(2, 3), [k, k], [Float64Array.of(0, 2), Float64Array.of(4, 6)], 1, 1, 2);
  close(avg, [2, 4]);
  // scores 0 and 1/sqrt(2)·2 = sqrt(2): weights softmax([0, sqrt 2]).
  const w = softmax([0, Math.SQRT2]);
  close(
    attend(
      Float64Array.of(1, 1),
      [Float64Array.of(0, 0), Float64Array.of(1, 1)],
      [Float64Array.of(1, 0), Float64Array.of(0, 1)],
      1,
      1,
      2,
    ),
    [w[0], w[1]],
  );
});

test('silu, softmax hand values', () => {
  assert.equal(silu(0), 0);
  assert.ok(Math.abs(silu(1) - 1 / (1 + Math.exp(-1))) < 1e-15);
  close(softmax([0, Math.log(3)]), [0.25, 0.75]);
  close(softmax([1000, 1000]), [0.5, 0.5]);
});

test('topK orders by value, ties to the lower index', () => {
  assert.deepEqual(topK([0.1, 0.5, 0.5, 0.9, 0.2], 3), [3, 1, 2]);
});

test('softmax top-k routing renormalises only when asked', () => {
  const logits = [0, Math.log(2), Math.log(3), Math.log(4)]; // softmax = [1, 2, 3, 4] / 10
  const r = routeSoftmaxTopK(logits, 2, true);
  assert.deepEqual(r.experts, [3, 2]);
  close(r.weights, [4 / 7, 3 / 7]);
  close(routeSoftmaxTopK(logits, 2, false).weights, [0.4, 0.3]);
});

test('sigmoid group routing: bias picks, raw scores weigh, dropped groups read 0.0, scaling applies', () => {
  const sig = (p: number): number => Math.log(p / (1 - p)); // logit whose sigmoid is p
  // 8 experts in 4 groups of 2. Scores s:
  const s = [0.9, 0.1, 0.6, 0.55, 0.2, 0.3, 0.8, 0.7];
  const bias = [0, 0, 0, 0, 0, 0, -0.3, 0.2];
  // sel = s + bias = [0.9, 0.1, 0.6, 0.55, 0.2, 0.3, 0.5, 0.9]; group sums (top-2 of 2):
  // g0 1.0, g1 1.15, g2 0.5, g3 1.4 → keep g3, g1 (topk_group 2).
  const r = routeSigmoidGroup(s.map(sig), bias, { k: 3, nGroup: 4, topkGroup: 2, norm: true, scaling: 2 });
  // kept sel: e2 0.6, e3 0.55, e6 0.5, e7 0.9 (e0 0.9 is in a dropped group) → top-3 = 7, 2, 3.
  assert.deepEqual(r.experts, [7, 2, 3]);
  const sum = 0.7 + 0.6 + 0.55;
  close(r.weights, [(2 * 0.7) / sum, (2 * 0.6) / sum, (2 * 0.55) / sum], 1e-12);
  // Without groups, expert 0 (sel 0.9) wins a tie with 7 by the lower id.
  assert.deepEqual(
    routeSigmoidGroup(s.map(sig), bias, { k: 2, nGroup: 1, topkGroup: 1, norm: false, scaling: 1 }).experts,
    [0, 7],
  );
  // mlx-lm sets dropped groups to 0.0 (not -inf): a kept expert with negative sel loses to them.
  // g0 sel [0.9, -0.3] (sum 0.6) beats g1 sel [0.25, 0.25] (0.5); top-2 = e0, then a zeroed e2.
  const neg = routeSigmoidGroup([sig(0.9), sig(0.1), sig(0.25), sig(0.25)], [0, -0.4, 0, 0], {
    k: 2,
    nGroup: 2,
    topkGroup: 1,
    norm: false,
    scaling: 1,
  });
  assert.deepEqual(neg.experts, [0, 2]);
  // k = 1: mlx-lm does not renormalise a single weight.
  close(
    routeSigmoidGroup([sig(0.3)], [0], { k: 1, nGroup: 1, topkGroup: 1, norm: true, scaling: 1 }).weights,
    [0.3],
    1e-12,
  );
});
