import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Prng } from '../../../robot/common/prng.js';
import { fixturePath } from '../../fixtures.js';
import { IkSolver } from '../../../robot/kinematics/ik.js';
import { parseIkCases } from '../../../daemon/bench/ik-cases.js';
import { runIkBenchmark } from '../../../daemon/bench/ik-bench.js';
import { chainOf, robot } from '../../robot/kinematics/robots.js';

test('parseIkCases reads the oracle format and rejects malformed files', () => {
  const text = readFileSync(fixturePath('oracles/ik-ur5e.csv'), 'utf8');
  const r = parseIkCases(text.split('\n').slice(0, 4).join('\n'));
  assert.ok(r.ok);
  assert.equal(r.dof, 6);
  assert.equal(r.cases.length, 3);
  assert.deepEqual(
    r.cases.map((c) => c.id),
    [0, 1, 2],
  );
  assert.equal(r.cases[0].truth[0], -4.667524489218516);
  assert.equal(r.cases[0].target[3], 0.13679907854025505);
  assert.equal(r.cases[0].seed[5], 5.581798913030846);
  const head = 'case,q0,q1,px,py,pz,qx,qy,qz,qw,seed0,seed1';
  for (const [bad, pattern] of [
    ['', /empty/],
    ['case,px,py,pz,qx,qy,qz,qw', /header lacks q0\.\./],
    ['case,q0,px,py,pz,qx,qy,qz,qw', /header lacks seed0/],
    [`${head}\n0,1,2,3,4,5,0,0,0,1,0`, /line 2: expected 12 finite numbers/],
    [`${head}\n0,1,2,3,4,5,0,0,0,1,0,x`, /line 2: expected 12 finite numbers/],
    [`${head}\n0,1,2,3,4,5,0,0,0,2,0,0`, /line 2: quaternion norm 2 is outside \[0\.99, 1\.01\]/],
  ] as const) {
    const p = parseIkCases(bad);
    assert.ok(!p.ok, bad);
    assert.match(p.error, pattern);
  }
  // Two-joint file: any joint count is read.
  const two = parseIkCases(`${head}\n7,1,2,3,4,5,0,0,0,1,0.5,0.25`);
  assert.ok(two.ok);
  assert.equal(two.dof, 2);
  assert.deepEqual(Array.from(two.cases[0].seed), [0.5, 0.25]);
});

test('runIkBenchmark scores 200 oracle cases and times them with the injected clock', () => {
  const parsed = parseIkCases(readFileSync(fixturePath('oracles/ik-ur5e.csv'), 'utf8'));
  assert.ok(parsed.ok);
  const cases = parsed.cases.slice(0, 200);
  let t = 0;
  // Every reading advances 5 µs, so each solve measures exactly 5 µs.
  const clock = (): number => (t += 5e-6);
  const solver = new IkSolver(chainOf('ur5e'), robot('ur5e').ik);
  const csv = runIkBenchmark(solver, cases, { seedMode: 'csv', clock });
  assert.equal(csv.cases, 200);
  assert.equal(csv.solved, 200);
  assert.equal(csv.solve_rate, 1);
  assert.ok(Math.abs(csv.median_us - 5) < 1e-6 && Math.abs(csv.p99_us - 5) < 1e-6, `${csv.median_us} ${csv.p99_us}`);
  assert.deepEqual(csv.unsolved, []);
  // Mid-range seed without restarts misses some; with restarts it solves them all.
  const plain = runIkBenchmark(solver, cases, { seedMode: 'mid', clock });
  assert.ok(plain.solved < 200 && plain.unsolved.length === Math.min(20, 200 - plain.solved), JSON.stringify(plain));
  let ct = 0;
  const restarted = runIkBenchmark(solver, cases, {
    seedMode: 'mid',
    clock,
    coldStart: { rng: new Prng(1), clock: () => (ct += 1e-4), budget: 0.01 },
  });
  assert.equal(restarted.solved, 200);
  assert.ok(restarted.mean_attempts > 1);
});
