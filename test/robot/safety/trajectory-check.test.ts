import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSetup } from '../../../robot/description/loader.js';
import type { SetupDescription } from '../../../robot/description/types.js';
import { fromXyzRpy } from '../../../robot/math/transform.js';
import {
  checkTrajectories,
  robotSafety,
  setupSafety,
  type JointTrajectory,
  type SafetyEnvelope,
} from '../../../robot/safety/trajectory-check.js';
import { Prng } from '../../../robot/common/prng.js';
import { forwardKinematics } from '../../../robot/kinematics/forward.js';
import { segmentDistance } from '../../../robot/safety/segment-distance.js';
import { robot } from '../kinematics/robots.js';
import { planar } from './planar.js';

/** count samples of a joint path q(t) at 100 Hz (or at the given times). */
function sampled(q: (t: number) => number[], count: number, times?: number[]): JointTrajectory {
  const ts = times ?? Array.from({ length: count }, (_, k) => k / 100);
  return { times: ts, q: ts.flatMap(q) };
}

/** Quintic rest-to-rest blend from a to b over T seconds. */
function quintic(a: number[], b: number[], T: number): (t: number) => number[] {
  return (t) => {
    const u = Math.min(1, t / T);
    const s = u * u * u * (10 - 15 * u + 6 * u * u);
    return a.map((x, i) => x + s * (b[i] - x));
  };
}

const READY = [0, -0.785, 0, -2.356, 0, 1.571, 0.785];

test('a smooth panda move within all limits passes and reports the closest self distance', () => {
  const { arms, envelope } = robotSafety(robot('panda'));
  const r = checkTrajectories(arms, [sampled(quintic(READY, [0.4, -0.5, 0.2, -2.0, 0.1, 1.8, 0.5], 2), 201)], envelope);
  assert.ok(r.ok, r.ok ? '' : r.message);
  assert.ok(r.minSelfDistance > 0 && r.minSelfDistance < 0.1, `${r.minSelfDistance}`);
  assert.equal(r.minArmDistance, Infinity);
});

test('joint position, velocity, acceleration and jerk limits, from exact divided differences', () => {
  const ur = robotSafety(robot('ur5e'));
  const pos = checkTrajectories(
    robotSafety(robot('panda')).arms,
    [sampled(() => [0, 0, 0, 0, 0, 0, 0], 3)],
    robotSafety(robot('panda')).envelope,
  );
  assert.deepEqual(pos, {
    ok: false,
    violation: {
      code: 'joint-position',
      arm: 'panda',
      joint: 'joint4',
      sample: 0,
      value: 0,
      limit: -0.0698,
      start: { bound: 0.03 },
    },
    message:
      'arm "panda" joint "joint4" at sample 0: position 0.00000 exceeds the limit -0.0698; the arm starts there, more than the 0.03 rad a path may start past a limit: it is outside its limits and needs an operator to bring it back',
  });
  const base = [0, -1.57, 1.57, -1.57, -1.57, 0];
  const with0 = (x: number): number[] => [x, ...base.slice(1)];
  // 0.05 rad in 10 ms at sample 3: 5 rad/s > π.
  const vel = checkTrajectories(ur.arms, [sampled((t) => with0(t > 0.025 ? 0.05 : 0), 6)], ur.envelope);
  assert.ok(
    !vel.ok &&
      vel.violation.code === 'joint-velocity' &&
      vel.violation.sample === 3 &&
      vel.violation.joint === 'shoulder_pan',
  );
  // q = c·t²: the second divided difference is 2c exactly. UR5e acceleration limit 8 rad/s².
  for (const [accel, ok] of [
    [7.99, true],
    [8.01, false],
  ] as const) {
    const r = checkTrajectories(ur.arms, [sampled((t) => with0((accel / 2) * t * t), 20)], ur.envelope);
    assert.equal(r.ok, ok, `acceleration ${accel}`);
    if (!r.ok)
      assert.deepEqual([r.violation.code, (r.violation as { sample: number }).sample], ['joint-acceleration', 2]);
  }
  // q = c·t³ on uneven times: the third divided difference is 6c exactly. Jerk limit 80 rad/s³.
  const uneven = [0, 0.01, 0.025, 0.03, 0.045, 0.05, 0.07];
  for (const [jerk, ok] of [
    [79.9, true],
    [80.1, false],
  ] as const) {
    const r = checkTrajectories(ur.arms, [sampled((t) => with0((jerk / 6) * t ** 3), 0, uneven)], ur.envelope);
    assert.equal(r.ok, ok, `jerk ${jerk}: ${r.ok ? '' : r.message}`);
    if (!r.ok) {
      assert.equal(r.violation.code, 'joint-jerk');
      assert.ok(Math.abs((r.violation as { value: number }).value - jerk) < 1e-6);
      assert.equal((r.violation as { sample: number }).sample, 3);
    }
  }
});

test('workspace box and table plane: TCP and link capsules, with how far they reach out', () => {
  const ur = robot('ur5e');
  const { arms } = robotSafety(ur);
  const env = (patch: Partial<SafetyEnvelope>): SafetyEnvelope => ({
    workspace: ur.workspace,
    table: ur.table,
    minClearance: 0,
    ...patch,
  });
  // q = 0: TCP at x = −0.8172, 17.2 mm past a box starting at −0.8.
  const ws = checkTrajectories(
    arms,
    [sampled(() => [0, 0, 0, 0, 0, 0], 1)],
    env({ workspace: { min: [-0.8, -1, -0.1], max: [1, 1, 1.2] } }),
  );
  assert.ok(!ws.ok && ws.violation.code === 'workspace');
  assert.equal((ws.violation as { link: string }).link, 'tcp');
  assert.ok(Math.abs((ws.violation as { distance: number }).distance - 0.0172) < 1e-12);
  assert.match(ws.message, /^arm "ur5e" TCP at sample 0: 17\.2 mm outside the workspace box; the arm starts there/);
  // Upright pose over a table raised to 2 cm: the base capsule (bottom at z = 0.005) is 15 mm into
  // it, more than a path may start with (start-allowance.test.ts has the tolerated depths).
  const table = checkTrajectories(
    arms,
    [sampled(() => [0, -Math.PI / 2, 0, -Math.PI / 2, 0, 0], 1)],
    env({ table: { normal: [0, 0, 1], offset: 0.02 } }),
  );
  assert.ok(!table.ok);
  assert.deepEqual(
    { ...table.violation, distance: Math.round((table.violation as { distance: number }).distance * 1e9) / 1e9 },
    { code: 'table', arm: 'ur5e', link: 'base', sample: 0, distance: 0.015, start: { bound: 0.01 } },
  );
  assert.equal(
    table.message,
    'arm "ur5e" link "base" at sample 0: 15.0 mm below the table plane; the arm starts there, more than the 10.0 mm a path may start past a limit: it is outside its limits and needs an operator to bring it back',
  );
  // A capsule leaving the box through its radius: the upright arm's top reaches z = 1.0794 + 0.04.
  const top = checkTrajectories(
    arms,
    [sampled(() => [0, -Math.PI / 2, 0, -Math.PI / 2, 0, 0], 1)],
    env({ workspace: { min: [-1, -1, -0.1], max: [1, 1, 1.1] } }),
  );
  assert.ok(
    !top.ok && top.violation.code === 'workspace' && (top.violation as { link: string }).link !== 'tcp',
    top.ok ? '' : top.message,
  );
});

test('self-collision of non-adjacent capsules: crossing collides, parallel keeps its gap, ignored pairs pass', () => {
  const { arms, envelope } = robotSafety(planar());
  // Folded: link 3 crosses link 1 (segments intersect: distance 0 − 2·0.02).
  const crossing = checkTrajectories(arms, [sampled(() => [0, 2.6, 2.6], 1)], envelope);
  assert.ok(!crossing.ok);
  const hit = crossing.violation as { distance: number };
  assert.ok(Math.abs(hit.distance + 0.04) < 1e-12, `${hit.distance}`);
  assert.deepEqual(
    { ...crossing.violation, distance: -0.04 },
    {
      code: 'self-collision',
      arm: 'planar',
      links: ['l1', 'l3'],
      sample: 0,
      distance: -0.04,
      start: { bound: 0.01 },
    },
  );
  assert.equal(
    crossing.message,
    'arm "planar" links "l1" and "l3" collide at sample 0 (distance -40.0 mm); the arm starts there, more than the 10.0 mm a path may start past a limit: it is outside its limits and needs an operator to bring it back',
  );
  // A U shape: link 3 parallel to link 1, 0.3 m above it.
  const parallel = checkTrajectories(arms, [sampled(() => [0, Math.PI / 2, Math.PI / 2], 1)], envelope);
  assert.ok(
    parallel.ok && Math.abs(parallel.minSelfDistance - 0.26) < 1e-12,
    parallel.ok ? `${parallel.minSelfDistance}` : parallel.message,
  );
  // Adjacent links (l1–l2) and ignored pairs are never reported.
  const ignoring = robotSafety(planar([['l3', 'l1']]));
  assert.ok(checkTrajectories(ignoring.arms, [sampled(() => [0, 2.6, 2.6], 1)], ignoring.envelope).ok);
  // The first colliding sample of a folding motion is named.
  const folding = checkTrajectories(arms, [sampled(quintic([0, 0.5, 0.5], [0, 2.6, 2.6], 1), 101)], envelope);
  assert.ok(!folding.ok && folding.violation.code === 'self-collision');
  const k = (folding.violation as { sample: number }).sample;
  assert.ok(k > 0 && k < 100, `sample ${k}`);
  const before = sampled(quintic([0, 0.5, 0.5], [0, 2.6, 2.6], 1), k);
  assert.ok(checkTrajectories(arms, [before], envelope).ok, 'samples before the reported one are clear');
});

test('arm against arm: the shipped bimanual YAM at rest is clear; arms turned into each other are caught', () => {
  const shipped = loadSetup('dual-yam');
  assert.ok(shipped.ok);
  const rest = sampled(() => [0, 0, 0, 0, 0, 0], 2);
  const s = setupSafety(shipped.value);
  const ok = checkTrajectories(s.arms, [rest, rest], s.envelope);
  assert.ok(ok.ok && ok.minArmDistance > shipped.value.minClearance, ok.ok ? `${ok.minArmDistance}` : ok.message);

  // Bases 0.2 m apart; the left arm swings its base joint by −π/2 towards the right arm over 6 s.
  const close: SetupDescription = {
    ...shipped.value,
    arms: [
      { name: 'left', robot: robot('yam'), base: fromXyzRpy([0, 0.1, 0], [0, 0, 0]) },
      { name: 'right', robot: robot('yam'), base: fromXyzRpy([0, -0.1, 0], [0, 0, 0]) },
    ],
  };
  const c = setupSafety(close);
  const swing = sampled(quintic([0, 0, 0, 0, 0, 0], [-Math.PI / 2, 0, 0, 0, 0, 0], 6), 601);
  const still = sampled(() => [0, 0, 0, 0, 0, 0], 601);
  const hit = checkTrajectories(c.arms, [swing, still], c.envelope);
  assert.ok(!hit.ok && hit.violation.code === 'arm-collision', hit.ok ? 'passed' : hit.message);
  const v = hit.violation as { arms: string[]; links: string[]; sample: number; distance: number; clearance: number };
  assert.deepEqual(v.arms, ['left', 'right']);
  assert.ok(v.sample > 0 && v.distance < 0.02 && v.clearance === 0.02, JSON.stringify(v));
  assert.match(
    hit.message,
    /^arm "left" link "\S+" and arm "right" link "\S+" are -?\d+\.\d mm apart at sample \d+, below the clearance 20\.0 mm$/,
  );
  const prefix = (t: JointTrajectory): JointTrajectory => ({
    times: Array.from(t.times).slice(0, v.sample),
    q: Array.from(t.q).slice(0, v.sample * 6),
  });
  const before = checkTrajectories(c.arms, [prefix(swing), prefix(still)], c.envelope);
  assert.ok(before.ok && before.minArmDistance >= 0.02, 'every earlier sample keeps the clearance');
});

test('property (seed 43, 60 random moves): the reported minima are exactly the brute-force minima over every pair and sample', () => {
  // The check skips pairs its centre bound proves farther than the minimum so far; the minima
  // must still be those of segmentDistance over all pairs at all samples, bit for bit.
  const rng = new Prng(43);
  const dual = loadSetup('dual-yam');
  assert.ok(dual.ok);
  const setups = [robotSafety(robot('ur5e')), robotSafety(robot('panda')), setupSafety(dual.value)];
  let passed = 0;
  for (let c = 0; c < 60; c++) {
    const { arms, envelope } = setups[c % setups.length];
    const trajectories = arms.map((arm) => {
      const n = arm.chain.dof;
      const a = arm.chain.midRange(),
        b = arm.chain.midRange();
      for (let j = 0; j < n; j++) {
        a[j] += rng.uniform(-0.4, 0.4);
        b[j] = a[j] + rng.uniform(-0.3, 0.3);
      }
      return sampled(quintic(Array.from(a), Array.from(b), 2), 101);
    });
    const r = checkTrajectories(arms, trajectories, envelope);
    let minSelf = Infinity,
      minArm = Infinity;
    const frames = arms.map((arm) => new Float64Array((arm.chain.dof + 1) * 12));
    for (let k = 0; k < 101; k++) {
      arms.forEach((arm, a) => {
        const n = arm.chain.dof;
        forwardKinematics(
          arm.chain,
          Array.from(trajectories[a].q).slice(k * n, (k + 1) * n),
          new Float64Array(12),
          frames[a],
        );
        arm.capsules.place(frames[a]);
        const w = arm.capsules.world,
          rad = arm.capsules.radius;
        for (const [i, j] of arm.selfPairs)
          minSelf = Math.min(minSelf, segmentDistance(w, i * 6, i * 6 + 3, w, j * 6, j * 6 + 3) - rad[i] - rad[j]);
      });
      if (arms.length === 2) {
        const [ca, cb] = [arms[0].capsules, arms[1].capsules];
        for (let i = 0; i < ca.count; i++) {
          for (let j = 0; j < cb.count; j++)
            minArm = Math.min(
              minArm,
              segmentDistance(ca.world, i * 6, i * 6 + 3, cb.world, j * 6, j * 6 + 3) - ca.radius[i] - cb.radius[j],
            );
        }
      }
    }
    const what = `seed 43 move ${c} (${arms.map((a) => a.name).join(', ')})`;
    // Only moves that pass every check report minima (a refusal stops at its sample).
    if (!r.ok) {
      assert.ok(r.violation.code !== 'invalid-trajectory', `${what}: ${r.message}`);
      continue;
    }
    assert.equal(r.minSelfDistance, minSelf, what);
    assert.equal(r.minArmDistance, minArm, what);
    passed++;
  }
  assert.ok(passed >= 40, `${passed} of 60 moves pass the check`);
});

test('malformed trajectories are refused before any check', () => {
  const { arms, envelope } = robotSafety(robot('ur5e'));
  const q = [0, -1.57, 1.57, -1.57, -1.57, 0];
  const cases: [JointTrajectory[], RegExp][] = [
    [[{ times: [0, 0], q: [...q, ...q] }], /times must be finite and strictly increasing \(sample 1\)/],
    [[{ times: [0], q: q.slice(1) }], /q has 5 values, expected 1 samples × 6 joints/],
    [[{ times: [0], q: [NaN, ...q.slice(1)] }], /q has a non-finite value at sample 0/],
    [[{ times: [], q: [] }], /no samples/],
    [[], /1 arms but 0 trajectories/],
  ];
  for (const [trajectories, pattern] of cases) {
    const r = checkTrajectories(arms, trajectories, envelope);
    assert.ok(!r.ok && r.violation.code === 'invalid-trajectory');
    assert.match(r.message, pattern);
  }
  const dual = loadSetup('dual-yam');
  assert.ok(dual.ok);
  const s = setupSafety(dual.value);
  const zero = [0, 0, 0, 0, 0, 0];
  const unsynced = checkTrajectories(
    s.arms,
    [
      { times: [0, 0.01], q: [...zero, ...zero] },
      { times: [0, 0.02], q: [...zero, ...zero] },
    ],
    s.envelope,
  );
  assert.ok(!unsynced.ok);
  assert.equal(
    unsynced.message,
    'arm "right": invalid trajectory: sample 1 is at 0.02 s, the first arm\'s at 0.01 s: arms must be synchronised',
  );
});
