import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  type NumberBounds,
  isComplete,
  minRemaining,
  numberSpec,
  scaled,
} from '../../../../daemon/engine/constrained/number.js';
import { Prng } from '../../../../robot/common/prng.js';

test('hand-checked completions', () => {
  const age = numberSpec(true, { minimum: 18, maximum: 120 })!;
  assert.equal(minRemaining(age, ''), 2, '"18"');
  assert.equal(minRemaining(age, '1'), 1, '"18".."19"');
  assert.equal(minRemaining(age, '12'), 1, '"120"');
  assert.equal(minRemaining(age, '13'), Infinity, '"13x" > 120 and "13" < 18');
  assert.equal(minRemaining(age, '-'), Infinity);
  assert.equal(isComplete(age, '99'), true);
  assert.equal(isComplete(age, '9'), false);
  const unit = numberSpec(false, { exclusiveMinimum: 0, maximum: 1 })!;
  assert.equal(minRemaining(unit, ''), 1, '"1"');
  assert.equal(minRemaining(unit, '0'), 2, '"0.1"');
  assert.equal(minRemaining(unit, '0.'), 1);
  assert.equal(minRemaining(unit, '0.000000'), Infinity, 'six zero decimals cannot exceed 0 any more');
  assert.equal(minRemaining(unit, '1.'), 1, '"1.0"');
  assert.equal(minRemaining(unit, '1.1'), Infinity);
  const neg = numberSpec(true, { maximum: -3 })!;
  assert.equal(minRemaining(neg, ''), 2, '"-3"');
  assert.equal(minRemaining(neg, '-0'), Infinity);
  assert.equal(numberSpec(true, { minimum: 0.5, maximum: 0.9 }), undefined, 'no integer in [0.5, 0.9]');
  assert.equal(numberSpec(true, { minimum: 1e20 }), undefined, 'beyond 15 digits');
});

test('scaled() rounds bounds exactly, including exponent forms', () => {
  assert.equal(scaled(0.1, 6, 'ceil'), 100000n);
  assert.equal(scaled(-2.5, 0, 'floor'), -3n);
  assert.equal(scaled(-2.5, 0, 'ceil'), -2n);
  assert.equal(scaled(1.5e-7, 6, 'ceil'), 1n);
  assert.equal(scaled(1.5e-7, 6, 'floor'), 0n);
  assert.equal(scaled(1e21, 0, 'floor'), 10n ** 21n);
});

// Independent check: enumerate every suffix up to 4 characters, parse with JSON.parse and test
// the bounds directly; the shortest valid one must have the length minRemaining says.
function bruteMin(prefix: string, integer: boolean, b: NumberBounds, fracCap: number): number {
  const alphabet = integer ? '-0123456789' : '-0123456789.';
  const ok = (s: string): boolean => {
    if (!/^-?(0|[1-9]\d*)(\.\d+)?$/.test(s)) return false;
    const [, frac = ''] = s.split('.');
    if (frac.length > fracCap || s.replace(/[-.]/g, '').length > 15) return false;
    const v = JSON.parse(s) as number;
    return (
      (b.minimum === undefined || v >= b.minimum) &&
      (b.maximum === undefined || v <= b.maximum) &&
      (b.exclusiveMinimum === undefined || v > b.exclusiveMinimum) &&
      (b.exclusiveMaximum === undefined || v < b.exclusiveMaximum)
    );
  };
  let frontier = [prefix];
  for (let n = 0; n <= 4; n++) {
    if (frontier.some(ok)) return n;
    frontier = frontier.flatMap((s) => [...alphabet].map((c) => s + c));
  }
  return Infinity;
}

test('minRemaining agrees with brute-force enumeration (seeded bounds and prefixes)', () => {
  const r = new Prng(11);
  for (let c = 0; c < 60; c++) {
    const integer = r.next() < 0.5;
    const b: NumberBounds = {};
    const pick = (): number => Math.round(r.uniform(-300, 300) * (integer ? 1 : 100)) / (integer ? 1 : 100);
    if (r.next() < 0.7) b.minimum = pick();
    if (r.next() < 0.7) b.maximum = pick();
    if (!integer && r.next() < 0.3) b.exclusiveMinimum = pick();
    const spec = numberSpec(integer, b);
    if (!spec) continue;
    for (let k = 0; k < 25; k++) {
      let prefix = r.next() < 0.3 ? '-' : '';
      const digits = r.int(4);
      for (let i = 0; i < digits; i++) prefix += String(r.int(10));
      if (!integer && r.next() < 0.3) prefix += '.' + (r.next() < 0.5 ? String(r.int(10)) : '');
      const want = bruteMin(prefix, integer, b, spec.fracCap);
      const got = minRemaining(spec, prefix);
      if (want <= 4)
        assert.equal(
          got,
          want,
          `case ${c} bounds ${JSON.stringify(b)} integer ${integer} prefix ${JSON.stringify(prefix)}`,
        );
      else
        assert.ok(
          got > 4,
          `case ${c} bounds ${JSON.stringify(b)} prefix ${JSON.stringify(prefix)}: got ${got}, brute force found nothing within 4`,
        );
    }
  }
});
