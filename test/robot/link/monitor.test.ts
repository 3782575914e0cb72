import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import { SettleDetector, referenceAt, trackingError, type SentReference } from '../../../robot/link/monitor.js';

const CRITERIA = {
  positionTolerance: 0.03,
  velocityTolerance: 0.05,
  samples: 10,
  minWindow: 0.3,
  span: 0.002,
  timeout: 3,
};

test('reference: linear between rows at i/rate, first row before the start, last row after the end (hand-computed)', () => {
  // Two joints at 10 Hz: rows (0, 1), (1, 1), (3, 0).
  const ref: SentReference = { rate: 10, joints: 2, count: 3, q: [0, 1, 1, 1, 3, 0] };
  assert.equal(referenceAt(ref, -1, 0), 0);
  assert.equal(referenceAt(ref, 0.05, 0), 0.5);
  assert.ok(Math.abs(referenceAt(ref, 0.15, 0) - 2) < 1e-12);
  assert.ok(Math.abs(referenceAt(ref, 0.15, 1) - 0.5) < 1e-12);
  assert.equal(referenceAt(ref, 0.2, 0), 3);
  assert.equal(referenceAt(ref, 7, 1), 0);
  assert.deepEqual(trackingError(ref, 0.15, [2.1, 0.2]), { error: 0.3, joint: 1 });
});

test('reference: exact at every row and between the neighbouring rows (seeded property, 200 trajectories)', () => {
  const r = new Prng(5);
  for (let k = 0; k < 200; k++) {
    const joints = 1 + r.int(7),
      count = 2 + r.int(49),
      rate = r.uniform(10, 1000);
    const q = Array.from({ length: joints * count }, () => r.uniform(-3, 3));
    const ref = { rate, joints, count, q };
    const i = r.int(count),
      j = r.int(joints);
    assert.ok(Math.abs(referenceAt(ref, i / rate, j) - q[i * joints + j]!) < 1e-9, `seed 5 case ${k}: row ${i}`);
    const tau = r.uniform(0, (count - 1) / rate);
    const lo = Math.floor(tau * rate),
      v = referenceAt(ref, tau, j);
    const a = q[lo * joints + j]!,
      b = q[Math.min(lo + 1, count - 1) * joints + j]!;
    assert.ok(v >= Math.min(a, b) - 1e-9 && v <= Math.max(a, b) + 1e-9, `seed 5 case ${k}: ${v} outside [${a}, ${b}]`);
  }
});

test('settle: needs 0.3 s of samples within 0.03 rad and 0.05 rad/s, at least 10 of them, moving less than 0.002 rad', () => {
  const goal = [1, -1];
  const at = (d: SettleDetector, t0: number, n: number, dt: number, q: (t: number) => number[], dq = [0, 0]) => {
    let settled = false;
    for (let i = 0; i < n; i++) settled = d.push(t0 + i * dt, q(t0 + i * dt), dq);
    return settled;
  };
  // 100 Hz at the goal: settled at the first sample 0.3 s after the first (31 samples).
  const d = new SettleDetector(CRITERIA, goal);
  assert.equal(
    at(d, 0, 30, 0.01, () => goal),
    false,
  );
  assert.equal(d.push(0.3, goal, [0, 0]), true);
  // 20 Hz: 0.3 s holds only 7 samples; 10 are needed, so the window must reach 0.45 s.
  const slow = new SettleDetector(CRITERIA, goal);
  assert.equal(
    at(slow, 0, 9, 0.05, () => goal),
    false,
  );
  assert.equal(slow.push(0.45, goal, [0, 0]), true);
  // Inside the tolerance but drifting 0.01 rad/s: 0.003 rad over 0.3 s exceeds the span.
  assert.equal(
    at(new SettleDetector(CRITERIA, goal), 0, 100, 0.01, (t) => [1 + 0.01 * t - 0.02, -1]),
    false,
  );
  // Too fast, or too far: never settled; one bad sample restarts the window.
  assert.equal(
    at(new SettleDetector(CRITERIA, goal), 0, 100, 0.01, () => goal, [0.06, 0]),
    false,
  );
  assert.equal(
    at(new SettleDetector(CRITERIA, goal), 0, 100, 0.01, () => [1.031, -1]),
    false,
  );
  const reset = new SettleDetector(CRITERIA, goal);
  at(reset, 0, 25, 0.01, () => goal);
  reset.push(0.25, [1.05, -1], [0, 0]);
  assert.equal(
    at(reset, 0.26, 30, 0.01, () => goal),
    false,
  );
  assert.equal(reset.push(0.56, goal, [0, 0]), true);
});

test('settle: a first-order approach settles once inside every bound for the window (seeded property vs direct check)', () => {
  const r = new Prng(9);
  for (let k = 0; k < 100; k++) {
    const tau = r.uniform(0.02, 0.3),
      e0 = r.uniform(-0.5, 0.5),
      rate = [50, 100, 200, 500][r.int(4)]!;
    const d = new SettleDetector(CRITERIA, [0]);
    let first = -1;
    const ok = (t: number) =>
      Math.abs(e0 * Math.exp(-t / tau)) <= 0.03 && Math.abs((e0 / tau) * Math.exp(-t / tau)) <= 0.05;
    for (let i = 0; i < rate * 5 && first < 0; i++) {
      const t = i / rate;
      if (d.push(t, [e0 * Math.exp(-t / tau)], [(-e0 / tau) * Math.exp(-t / tau)])) first = t;
    }
    assert.ok(first > 0, `seed 9 case ${k} (tau ${tau}, e0 ${e0}, ${rate} Hz): never settled`);
    // Independent check: every sample of the last 0.3 s is within bounds and they span ≤ 0.002.
    const window = Array.from({ length: Math.round(0.3 * rate) + 1 }, (_, i) => first - i / rate);
    assert.ok(
      window.every((t) => t < 0 || ok(t)),
      `seed 9 case ${k}: settled at ${first} with a bad sample in the window`,
    );
    const span = Math.abs(e0 * (Math.exp(-(first - 0.3) / tau) - Math.exp(-first / tau)));
    assert.ok(span <= 0.002 + 1e-12, `seed 9 case ${k}: span ${span}`);
    // One sample earlier it was not yet settled (first is the first time).
    const prev = new SettleDetector(CRITERIA, [0]);
    let early = false;
    for (let i = 0; i < Math.round(first * rate); i++)
      early ||= prev.push(i / rate, [e0 * Math.exp(-i / rate / tau)], [(-e0 / tau) * Math.exp(-i / rate / tau)]);
    assert.equal(early, false, `seed 9 case ${k}`);
  }
});
