import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffDelay } from '../../../daemon/mqtt/backoff.js';
import { Prng } from '../../../robot/common/prng.js';

test('hand-computed delays: the cap doubles from min to max', () => {
  const lo = () => 0;
  const hi = () => 0.999999;
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7].map((a) => backoffDelay(a, 500, 30_000, lo)),
    [250, 500, 1000, 2000, 4000, 8000, 15_000],
  );
  assert.deepEqual(
    [1, 2, 3, 7, 100].map((a) => backoffDelay(a, 500, 30_000, hi)),
    [500, 1000, 2000, 30_000, 30_000],
  );
  assert.equal(backoffDelay(0, 500, 30_000, lo), 250, 'attempt 0 is treated as the first');
});

test('property: every delay lies in [cap/2, cap] and caps never shrink (seed 5, 5k cases)', () => {
  const r = new Prng(5);
  for (let i = 0; i < 5000; i++) {
    const min = 10 + r.int(2000);
    const max = min + r.int(100_000);
    const attempt = 1 + r.int(60);
    const cap = Math.min(max, min * 2 ** (attempt - 1));
    const d = backoffDelay(attempt, min, max, () => r.next());
    assert.ok(
      d >= Math.floor(cap / 2) && d <= Math.ceil(cap),
      `seed 5 case ${i}: min ${min} max ${max} attempt ${attempt} → ${d}, cap ${cap}`,
    );
    assert.ok(Number.isInteger(d), `case ${i}: integer ms`);
  }
});
