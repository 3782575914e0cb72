import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';

test('same seed gives the same sequence, different seeds differ', () => {
  const a = new Prng(42);
  const b = new Prng(42);
  const c = new Prng(43);
  const sa = Array.from({ length: 16 }, () => a.nextU32());
  const sb = Array.from({ length: 16 }, () => b.nextU32());
  const sc = Array.from({ length: 16 }, () => c.nextU32());
  assert.deepEqual(sa, sb);
  assert.notDeepEqual(sa, sc);
});

test('uniform and normal moments are plausible over 100k draws (seed 7)', () => {
  const r = new Prng(7);
  const n = 100_000;
  let su = 0,
    sn = 0,
    sn2 = 0;
  for (let i = 0; i < n; i++) {
    const u = r.next();
    assert.ok(u >= 0 && u < 1, `uniform out of range: ${u}`);
    su += u;
    const z = r.normal();
    sn += z;
    sn2 += z * z;
  }
  assert.ok(Math.abs(su / n - 0.5) < 0.01, `uniform mean ${su / n}`);
  assert.ok(Math.abs(sn / n) < 0.02, `normal mean ${sn / n}`);
  assert.ok(Math.abs(sn2 / n - 1) < 0.02, `normal variance ${sn2 / n}`);
});

test('fillU32 yields exactly the nextU32 stream and leaves the state in step (seeds 0..20)', () => {
  for (let seed = 0; seed <= 20; seed++) {
    const a = new Prng(seed);
    const b = new Prng(seed);
    const filled = new Uint32Array(37 + seed);
    a.fillU32(filled);
    const expected = Array.from({ length: filled.length }, () => b.nextU32());
    assert.deepEqual(Array.from(filled), expected, `seed ${seed}`);
    assert.equal(a.nextU32(), b.nextU32(), `state after fill, seed ${seed}`);
  }
});
