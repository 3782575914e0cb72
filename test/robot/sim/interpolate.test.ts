import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sampleTrajectory } from '../../../robot/sim/interpolate.js';
import { Reference } from '../../../robot/sim/reference.js';
import { Prng } from '../../../robot/common/prng.js';
import type { TrajectoryPoint } from '../../../robot/link/protocol.js';

test('linear interpolation between positions (hand-computed), ends held', () => {
  const pts: TrajectoryPoint[] = [
    { t: 0, q: [0, 1] },
    { t: 2, q: [1, 0] },
    { t: 3, q: [1, 2] },
  ];
  assert.deepEqual(sampleTrajectory(pts, 0.5), { q: [0.25, 0.75], dq: [0.5, -0.5] });
  assert.deepEqual(sampleTrajectory(pts, 2.5), { q: [1, 1], dq: [0, 2] });
  assert.deepEqual(sampleTrajectory(pts, -1), { q: [0, 1], dq: [0, 0] });
  assert.deepEqual(sampleTrajectory(pts, 9), { q: [1, 2], dq: [0, 0] });
});

// Independent form of the cubic: Hermite basis functions h00, h10, h01, h11.
function hermite(p0: number, v0: number, p1: number, v1: number, h: number, tau: number): number {
  const s = tau / h;
  const h00 = 2 * s ** 3 - 3 * s ** 2 + 1;
  const h10 = s ** 3 - 2 * s ** 2 + s;
  const h01 = -2 * s ** 3 + 3 * s ** 2;
  const h11 = s ** 3 - s ** 2;
  return h00 * p0 + h10 * h * v0 + h01 * p1 + h11 * h * v1;
}

test('cubic with velocities matches the Hermite basis form (seeded, 200 segments)', () => {
  const r = new Prng(11);
  for (let c = 0; c < 200; c++) {
    const h = r.uniform(0.01, 2);
    const a: TrajectoryPoint = { t: 0, q: [r.uniform(-3, 3)], dq: [r.uniform(-2, 2)] };
    const b: TrajectoryPoint = { t: h, q: [r.uniform(-3, 3)], dq: [r.uniform(-2, 2)] };
    for (const f of [0.1, 0.37, 0.5, 0.93]) {
      const got = sampleTrajectory([a, b], f * h).q[0]!;
      const want = hermite(a.q[0]!, a.dq![0]!, b.q[0]!, b.dq![0]!, h, f * h);
      assert.ok(Math.abs(got - want) < 1e-9, `case ${c} (seed 11) at ${f}: ${got} vs ${want}`);
    }
  }
});

test('quintic with accelerations meets position, velocity and acceleration at both knots (seeded)', () => {
  const r = new Prng(12);
  for (let c = 0; c < 200; c++) {
    const h = r.uniform(0.5, 2);
    const a: TrajectoryPoint = { t: 0, q: [r.uniform(-3, 3)], dq: [r.uniform(-2, 2)], ddq: [r.uniform(-5, 5)] };
    const b: TrajectoryPoint = { t: h, q: [r.uniform(-3, 3)], dq: [r.uniform(-2, 2)], ddq: [r.uniform(-5, 5)] };
    const at = (t: number) => sampleTrajectory([a, b], t);
    // Acceleration by central differences of dq, extrapolated linearly to the knot.
    const acc = (t: number) => (at(t + 1e-6).dq[0]! - at(t - 1e-6).dq[0]!) / 2e-6;
    for (const [knot, p, t, dir] of [
      ['start', a, 0, 1],
      ['end', b, h, -1],
    ] as const) {
      const s = at(t + dir * 1e-9);
      const ddq = 2 * acc(t + dir * 1e-5) - acc(t + dir * 2e-5);
      const msg = `case ${c} (seed 12) ${knot}`;
      assert.ok(Math.abs(s.q[0]! - p.q[0]!) < 1e-7, `${msg}: q ${s.q[0]} vs ${p.q[0]}`);
      assert.ok(Math.abs(s.dq[0]! - p.dq![0]!) < 1e-6, `${msg}: dq ${s.dq[0]} vs ${p.dq![0]}`);
      assert.ok(Math.abs(ddq - p.ddq![0]!) < 1e-3, `${msg}: ddq ${ddq} vs ${p.ddq![0]}`);
    }
  }
});

test('rest-to-rest quintic is the minimum-jerk profile 10s³ − 15s⁴ + 6s⁵ (Flash & Hogan)', () => {
  const pts: TrajectoryPoint[] = [
    { t: 0, q: [1], dq: [0], ddq: [0] },
    { t: 2, q: [3], dq: [0], ddq: [0] },
  ];
  for (const s of [0.1, 0.25, 0.5, 0.8]) {
    const want = 1 + 2 * (10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5);
    assert.ok(Math.abs(sampleTrajectory(pts, 2 * s).q[0]! - want) < 1e-12);
  }
});

test('reference brake: joints stop together at the deceleration bound, on the path', () => {
  const ref = new Reference([0, 0], 0);
  ref.follow(0, [
    { t: 0, q: [0, 0] },
    { t: 10, q: [6, -3] },
  ]);
  const d = ref.brake(1, 2);
  assert.ok(Math.abs(d - 0.3) < 1e-12, `brake time ${d}`);
  const end = ref.at(1 + d + 1);
  assert.ok(Math.abs(end.q[0]! - (0.6 + 0.09)) < 1e-12 && Math.abs(end.q[1]! - (-0.3 - 0.045)) < 1e-12, `${end.q}`);
  assert.ok(
    end.dq.every((v) => v === 0),
    `${end.dq}`,
  );
  const mid = ref.at(1.15);
  assert.ok(Math.abs(mid.dq[0]! - 0.3) < 1e-12 && Math.abs(mid.dq[1]! + 0.15) < 1e-12);
  assert.equal(ref.restsAt(1.2), false);
  assert.equal(ref.restsAt(1.3), true);
  // Before the brake the trajectory still applies (the arm reads the reference in the past).
  assert.ok(Math.abs(ref.at(0.5).q[0]! - 0.3) < 1e-12);
});

test('reference: a later command replaces segments that start after it', () => {
  const ref = new Reference([0], 0);
  ref.follow(5, [
    { t: 0, q: [0] },
    { t: 1, q: [1] },
  ]);
  ref.hold(2, [0]);
  assert.deepEqual(ref.at(5.5).q, [0]);
  ref.prune(3);
  assert.deepEqual(ref.at(1).q, [0]);
});
