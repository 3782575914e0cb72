import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bf16ToNumber, f16ToNumber, numberToBf16, numberToF16, roundBf16 } from '../../../daemon/models/float16.js';
import { Prng } from '../../../robot/common/prng.js';

test('bfloat16 hand cases: exact values, ties to even, NaN', () => {
  assert.equal(numberToBf16(1), 0x3f80);
  assert.equal(numberToBf16(-2), 0xc000);
  assert.equal(numberToBf16(0.5), 0x3f00);
  assert.equal(bf16ToNumber(0x3f80), 1);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even mantissa (1).
  assert.equal(numberToBf16(1 + 2 ** -8), 0x3f80);
  // 1 + 3·2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: rounds up to even.
  assert.equal(numberToBf16(1 + 3 * 2 ** -8), 0x3f82);
  assert.ok(Number.isNaN(bf16ToNumber(numberToBf16(NaN))));
  assert.equal(roundBf16(3.14159), 3.140625);
});

test('IEEE half hand cases: normals, subnormals, overflow', () => {
  assert.equal(numberToF16(1), 0x3c00);
  assert.equal(numberToF16(-0.5), 0xb800);
  assert.equal(numberToF16(65504), 0x7bff);
  assert.equal(numberToF16(65520), 0x7c00); // halfway to 2^16 rounds to infinity
  assert.equal(numberToF16(2 ** -24), 0x0001); // smallest subnormal
  assert.equal(numberToF16(2 ** -25), 0x0000); // tie to even (0)
  assert.equal(numberToF16(3 * 2 ** -25), 0x0002); // tie between 1 and 2 subnormal steps: even
  assert.equal(f16ToNumber(0x0001), 2 ** -24);
  assert.equal(f16ToNumber(0x7c00), Infinity);
  assert.equal(f16ToNumber(0x3555), 0.333251953125);
});

test('every finite half and bfloat16 bit pattern round-trips through number', () => {
  for (let h = 0; h < 0x10000; h++) {
    const exp = (h >>> 10) & 0x1f;
    if (exp === 0x1f && (h & 0x3ff) !== 0) continue;
    assert.equal(numberToF16(f16ToNumber(h)), h, `half 0x${h.toString(16)}`);
    const bexp = (h >>> 7) & 0xff;
    if (bexp === 0xff && (h & 0x7f) !== 0) continue;
    assert.equal(numberToBf16(bf16ToNumber(h)), h, `bf16 0x${h.toString(16)}`);
  }
});

// Conversion goes through float32 like ggml's, so the bound holds for float32 inputs.
test('half rounding error of float32 values is at most half an ulp (seed 11, 20k values)', () => {
  const rng = new Prng(11);
  for (let i = 0; i < 20_000; i++) {
    const x = Math.fround(rng.normal() * 2 ** rng.int(20) * 2 ** -10);
    const y = f16ToNumber(numberToF16(x));
    const ulp = 2 ** (Math.max(Math.floor(Math.log2(Math.abs(x))), -14) - 10);
    assert.ok(Math.abs(y - x) <= ulp / 2 + 1e-30, `x=${x} y=${y}`);
  }
});
