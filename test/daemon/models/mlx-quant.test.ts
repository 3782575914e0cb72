import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  codeAt,
  dequantizeAffine,
  quantizeAffine,
  quantLayoutError,
  roundHalfEven,
  QUANT_BITS,
  QUANT_GROUPS,
} from '../../../daemon/models/mlx-quant.js';
import { roundBf16 } from '../../../daemon/models/float16.js';
import { Prng } from '../../../robot/common/prng.js';

test('4-bit g32, largest magnitude positive: negative scale, bias = max, codes LSB-first', () => {
  // values 0..15 twice: mask false → scale = -(15/15) = -1, edge = bias = 15, q = 15 - w.
  const values = [...Array(32).keys()].map((i) => i % 16);
  const q = quantizeAffine(values, 1, 32, 4, 32);
  assert.equal(q.scales[0], -1);
  assert.equal(q.biases[0], 15);
  // element 8w+p sits in bits [4p, 4p+3] of word w: codes 15,14,...,8 → 0x89abcdef.
  assert.deepEqual(Array.from(q.weight), [0x89abcdef, 0x01234567, 0x89abcdef, 0x01234567]);
  assert.deepEqual(Array.from(dequantizeAffine(q)), values);
});

test('4-bit, largest magnitude negative: positive scale, bias = min', () => {
  const values = [...Array(32).keys()].map((i) => (i % 16) - 15);
  const q = quantizeAffine(values, 1, 32, 4, 32);
  assert.equal(q.scales[0], 1);
  assert.equal(q.biases[0], -15);
  assert.deepEqual(Array.from(q.weight), [0x76543210, 0xfedcba98, 0x76543210, 0xfedcba98]);
});

test('8-bit g64 packs four codes per word, byte p = element 4w+p', () => {
  const values = [...Array(64).keys()].map((i) => i * 0.5);
  const q = quantizeAffine(values, 1, 64, 8, 64);
  // max 31.5 has the larger magnitude: scale = -(31.5/255), bias = 31.5, q(0) = 255, q(31.5) = 0.
  assert.equal(q.biases[0], 31.5);
  assert.ok(q.scales[0] < 0);
  assert.equal(q.weight[0] & 0xff, 255);
  assert.equal(q.weight[15] >>> 24, 0);
  for (let c = 0; c < 64; c++) assert.equal(codeAt(q.weight, 0, c, 8), (q.weight[c >> 2] >>> ((c & 3) * 8)) & 0xff);
});

test('an all-zero group gets bias 0 and dequantises to zeros', () => {
  const q = quantizeAffine(new Array(64).fill(0), 1, 64, 4, 64);
  assert.equal(q.biases[0], 0);
  assert.deepEqual(Array.from(dequantizeAffine(q)), new Array(64).fill(0));
});

test('round half to even', () => {
  assert.deepEqual([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, 2.6].map(roundHalfEven), [0, 2, 2, -0, -2, 2, 3]);
});

test('layout rules name the field and value', () => {
  assert.match(quantLayoutError(64, 3, 64)!, /bits must be one of 2, 4, 8, got 3/);
  assert.match(quantLayoutError(64, 4, 48)!, /group_size must be one of 32, 64, 128, got 48/);
  assert.match(quantLayoutError(96, 4, 64)!, /input dimension 96 is not a multiple of group_size 64/);
  assert.equal(quantLayoutError(256, 8, 128), undefined);
  assert.throws(() => quantizeAffine([1, 2], 1, 2, 4, 32), /not a multiple/);
});

// MLX snaps the scale so the edge value is a whole number of steps; that can leave the far end
// of the group up to one step outside the grid (clipped), so the bound is one step, and most
// values stay within half a step.
test('round trip: every bits/group, error ≤ |scale| (mostly ≤ |scale|/2), both scale signs (seed 3)', () => {
  const rng = new Prng(3);
  for (const bits of QUANT_BITS) {
    for (const group of QUANT_GROUPS) {
      const rows = 7;
      const cols = group * 3;
      const w = Array.from(
        { length: rows * cols },
        () => rng.normal() * 0.02 + (rng.next() < 0.1 ? rng.uniform(-0.05, 0.05) : 0),
      );
      const q = quantizeAffine(w, rows, cols, bits, group);
      const d = dequantizeAffine(q);
      let neg = 0;
      let beyondHalf = 0;
      for (let i = 0; i < w.length; i++) {
        const s = Math.abs(q.scales[Math.floor(i / group)]);
        const err = Math.abs(d[i] - w[i]);
        assert.ok(err <= s * (1 + 1e-6), `bits ${bits} group ${group} i ${i}: ${w[i]} → ${d[i]} (scale ${s})`);
        if (err > s * (0.5 + 1e-6)) beyondHalf++;
      }
      assert.ok(beyondHalf <= w.length * 0.05, `bits ${bits} group ${group}: ${beyondHalf} values clipped`);
      for (const s of q.scales) if (s < 0) neg++;
      assert.ok(
        neg > 0 && neg < q.scales.length,
        `bits ${bits} group ${group}: ${neg}/${q.scales.length} negative scales`,
      );
      for (let r = 0; r < rows; r++) {
        for (let c = 0; c < cols; c++) assert.ok(codeAt(q.weight, (r * cols * bits) / 32, c, bits) < 2 ** bits);
      }
    }
  }
});

test('with bf16-rounded parameters the stored grid still reproduces the values within a step (seed 4)', () => {
  const rng = new Prng(4);
  const w = Array.from({ length: 16 * 128 }, () => rng.uniform(-1, 1));
  const q = quantizeAffine(w, 16, 128, 4, 64, { roundParam: roundBf16 });
  for (const s of q.scales) assert.equal(s, roundBf16(s));
  const d = dequantizeAffine(q);
  for (let i = 0; i < w.length; i++) {
    const s = Math.abs(q.scales[Math.floor(i / 64)]);
    assert.ok(Math.abs(d[i] - w[i]) <= 1.01 * s, `i ${i}: ${w[i]} → ${d[i]}`);
  }
});
