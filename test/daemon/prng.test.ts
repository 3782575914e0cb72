import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../daemon/util/prng.js';

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
  let su = 0, sn = 0, sn2 = 0;
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
