import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../../robot/common/prng.js';
import { type ArmTimingRequest, planTiming } from '../../../../robot/motion/timing/plan-timing.js';
import { type JointPath, timePath } from '../../../../robot/motion/timing/path-scaling.js';
import { resampleSegments } from '../../../../robot/motion/timing/resample.js';
import { stretchSegment, synchroniseArms } from '../../../../robot/motion/timing/dual-arm.js';
import { limitRatios } from '../../../../robot/motion/timing/limit-ratios.js';
import { evalSpline, splineCurvatures } from '../../../../robot/motion/timing/spline.js';
import { randomLimits, randomPath } from './paths.js';

const tcp = { linear: 0.08, angular: 0.5 };
const opts = { rate: 100, hold: 0.12 };

function row(q: Float64Array, i: number, joints: number): number[] {
  return Array.from(q.subarray(i * joints, (i + 1) * joints));
}

/** Random segments, each starting where the previous one ends. */
function chain(r: Prng, joints: number, count: number, maxSamples: number): JointPath[] {
  const segments: JointPath[] = [];
  let start = Array.from({ length: joints }, () => r.uniform(-1, 1));
  for (let k = 0; k < count; k++) {
    const p = randomPath(r, joints, 2 + r.int(maxSamples), r.next() < 0.5);
    const off = start.map((x, j) => x - p.q[j]);
    for (let s = 0; s < p.samples; s++) for (let j = 0; j < joints; j++) p.q[s * joints + j] += off[j];
    start = row(p.q, p.samples - 1, joints);
    segments.push(p);
  }
  return segments;
}

test('spline interpolates the samples, reproduces straight lines and has not-a-knot ends', () => {
  const s = new Float64Array([0, 0.1, 0.35, 0.6, 1]);
  const q = new Float64Array([0, 2, 0.1, 1.8, 0.35, 1.3, 0.6, 0.8, 1, 0]); // joint 0 = s, joint 1 = 2 − 2s
  const m2 = splineCurvatures(s, q, 5, 2);
  assert.ok(
    m2.every((x) => Math.abs(x) < 1e-12),
    `a straight line has no curvature: ${m2}`,
  );
  const out = new Float64Array(2);
  evalSpline(s, q, m2, 2, 2, 0.5, out, 0);
  assert.ok(Math.abs(out[0] - 0.5) < 1e-12 && Math.abs(out[1] - 1) < 1e-12, `${out}`);
  const bent = new Float64Array([0, 1, 0.5, 0.2, 0]);
  const c = splineCurvatures(s, bent, 5, 1);
  for (let k = 0; k < 4; k++) {
    evalSpline(s, bent, c, 1, k, s[k], out, 0);
    assert.ok(Math.abs(out[0] - bent[k]) < 1e-12, `sample ${k}`);
  }
  // Not-a-knot: the third derivative (m_{k+1} − m_k)/h_k is the same on the first two and last two intervals.
  const third = (k: number): number => (c[k + 1] - c[k]) / (s[k + 1] - s[k]);
  assert.ok(Math.abs(third(0) - third(1)) < 1e-9 && Math.abs(third(2) - third(3)) < 1e-9, `${c}`);
});

test('not-a-knot spline reproduces any cubic and its derivatives (seed 54; 3 samples: the parabola)', () => {
  const r = new Prng(54);
  const out = new Float64Array(1),
    d1 = new Float64Array(1),
    d2 = new Float64Array(1);
  for (let c = 0; c < 50; c++) {
    const n = 3 + r.int(12);
    const [c0, c1, c2, c3] = [r.uniform(-1, 1), r.uniform(-2, 2), r.uniform(-3, 3), n === 3 ? 0 : r.uniform(-4, 4)];
    const f = (x: number): number => c0 + x * (c1 + x * (c2 + x * c3));
    const s = randomPath(r, 1, n, false).s ?? new Float64Array(0);
    const q = s.map(f);
    const m2 = splineCurvatures(s, q, n, 1);
    for (let i = 0; i <= 100; i++) {
      const x = i / 100;
      let k = 0;
      while (k < n - 2 && s[k + 1] <= x) k++;
      evalSpline(s, q, m2, 1, k, x, out, 0, d1, d2);
      const what = `seed 54 case ${c} (${n} samples) at s = ${x}`;
      assert.ok(Math.abs(out[0] - f(x)) < 1e-9, `${what}: ${out[0]} vs ${f(x)}`);
      assert.ok(Math.abs(d1[0] - (c1 + x * (2 * c2 + 3 * c3 * x))) < 1e-7, `${what}: slope`);
      assert.ok(Math.abs(d2[0] - (2 * c2 + 6 * c3 * x)) < 1e-6, `${what}: curvature`);
    }
  }
});

test('resampling at 100 Hz with a 0.12 s hold: tick count, start, exact final pose, hold', () => {
  const path = randomPath(new Prng(3), 3, 60);
  const res = timePath(path, randomLimits(new Prng(4), 3), tcp);
  assert.ok(res.ok);
  const traj = resampleSegments([res.segment], 100, 0.12);
  const T = res.segment.duration;
  const end = Math.ceil(T * 100 - 1e-9);
  assert.equal(traj.count, end + 1 + 12);
  assert.equal(traj.motionEnd, T);
  assert.deepEqual(row(traj.q, 0, 3), row(path.q, 0, 3));
  const last = row(path.q, path.samples - 1, 3);
  for (let i = end; i < traj.count; i++) assert.deepEqual(row(traj.q, i, 3), last, `tick ${i} holds the final pose`);
  assert.notDeepEqual(row(traj.q, end - 1, 3), last, 'the tick before the end is still moving');
});

test('a curvature cache filled by one resampling serves the segments stretched in time: the same references bit for bit (seed 56)', () => {
  const r = new Prng(56);
  for (let c = 0; c < 10; c++) {
    const limits = randomLimits(r, 3);
    const segments = chain(r, 3, 1 + r.int(4), 40).map((p) => {
      const res = timePath(p, limits, tcp);
      assert.ok(res.ok);
      return res.segment;
    });
    const cache: (Float64Array | undefined)[] = [];
    resampleSegments(segments, 100, 0.12, cache);
    assert.equal(cache.length, segments.length, `seed 56 case ${c}: one spline per segment`);
    const f = 1 + r.next();
    const stretched = segments.map((seg) => stretchSegment(seg, seg.duration * f));
    const cached = resampleSegments(stretched, 100, 0.12, cache),
      fresh = resampleSegments(stretched, 100, 0.12);
    assert.equal(cached.count, fresh.count);
    for (const key of ['q', 'qd', 'qdd'] as const)
      assert.deepEqual(cached[key], fresh[key], `seed 56 case ${c}: ${key}`);
  }
});

test('resampled velocities and accelerations are the derivatives of the positions (seed 53, 20 paths)', () => {
  const r = new Prng(53);
  for (let c = 0; c < 20; c++) {
    const path = randomPath(r, 3, 5 + r.int(60), r.next() < 0.5);
    const res = timePath(path, randomLimits(r, 3), tcp);
    assert.ok(res.ok);
    // At 10 kHz, central differences of q and qd approximate qd and qdd to O(dt²).
    const traj = resampleSegments([res.segment], 10000, 0.01);
    const what = `seed 53 path ${c}`;
    let scale = 0;
    for (let i = 0; i < traj.qdd.length; i++) scale = Math.max(scale, Math.abs(traj.qdd[i]));
    for (let i = 1; i + 1 < traj.count; i++) {
      if ((i + 1) / traj.rate >= traj.motionEnd) break;
      for (let j = 0; j < 3; j++) {
        const v = (traj.q[(i + 1) * 3 + j] - traj.q[(i - 1) * 3 + j]) * (traj.rate / 2);
        const a = (traj.qd[(i + 1) * 3 + j] - traj.qd[(i - 1) * 3 + j]) * (traj.rate / 2);
        assert.ok(
          Math.abs(v - traj.qd[i * 3 + j]) < 1e-3 * (1 + scale),
          `${what} tick ${i} joint ${j}: qd ${traj.qd[i * 3 + j]} vs ${v}`,
        );
        assert.ok(
          Math.abs(a - traj.qdd[i * 3 + j]) < 2e-2 * (1 + scale),
          `${what} tick ${i} joint ${j}: qdd ${traj.qdd[i * 3 + j]} vs ${a}`,
        );
      }
    }
    for (let i = Math.ceil(traj.motionEnd * traj.rate); i < traj.count; i++) {
      for (let j = 0; j < 3; j++)
        assert.ok(traj.qd[i * 3 + j] === 0 && traj.qdd[i * 3 + j] === 0, `${what}: at rest from tick ${i}`);
    }
  }
});

test('property (seed 51, 100 requests): one arm, several segments; what is sent keeps every joint limit', () => {
  const r = new Prng(51);
  for (let i = 0; i < 100; i++) {
    const joints = 6;
    const limits = randomLimits(r, joints);
    const segments = chain(r, joints, 1 + r.int(4), 120);
    const end = row(segments[segments.length - 1].q, segments[segments.length - 1].samples - 1, joints);
    const what = `seed 51 request ${i} (${segments.map((s) => s.samples).join('+')} samples)`;
    const plan = planTiming([{ segments, limits, tcp }], opts);
    assert.ok(plan.ok, `${what}: ${JSON.stringify(plan)}`);
    const traj = plan.arms[0].trajectory;
    const t = Float64Array.from({ length: traj.count }, (_, k) => k / traj.rate);
    const rt = limitRatios(t, traj.q, traj.count, joints, limits);
    assert.ok(
      Math.max(rt.velocity, rt.acceleration, rt.jerk) <= 1,
      `${what}: sent references exceed limits ${JSON.stringify(rt)}`,
    );
    const total = plan.arms[0].segments.reduce((a, s) => a + s.duration, 0);
    assert.ok(Math.abs(plan.duration - total) < 1e-12 * total, `${what}: duration`);
    assert.deepEqual(row(traj.q, traj.count - 1, joints), end, `${what}: ends at the last pose`);
  }
});

test('dual arm (seed 52, 60 requests): every segment ends at the same time for both arms, limits hold', () => {
  const r = new Prng(52);
  let stretchedLeft = 0,
    stretchedRight = 0;
  for (let i = 0; i < 60; i++) {
    const nseg = 1 + r.int(3);
    const arm = (): ArmTimingRequest => ({ segments: chain(r, 6, nseg, 80), limits: randomLimits(r, 6), tcp });
    const request = [arm(), arm()];
    const what = `seed 52 request ${i}`;
    const plan = planTiming(request, opts);
    assert.ok(plan.ok, `${what}: ${JSON.stringify(plan)}`);
    const [left, right] = plan.arms;
    for (let k = 0; k < nseg; k++) {
      const L = left.segments[k],
        R = right.segments[k];
      assert.equal(L.duration, R.duration, `${what}: segment ${k} durations differ`);
      assert.equal(L.t[L.t.length - 1], R.t[R.t.length - 1], `${what}: segment ${k} last timestamps differ`);
      const own = [
        timePath(request[0].segments[k], request[0].limits, tcp),
        timePath(request[1].segments[k], request[1].limits, tcp),
      ];
      assert.ok(own[0].ok && own[1].ok);
      const slower = Math.max(own[0].segment.duration, own[1].segment.duration) * plan.extraStretch;
      assert.ok(
        Math.abs(L.duration - slower) <= 1e-12 * slower,
        `${what}: segment ${k} lasts ${L.duration}, slower arm ${slower}`,
      );
      if (own[0].segment.duration < own[1].segment.duration) stretchedLeft++;
      else stretchedRight++;
    }
    assert.equal(left.trajectory.count, right.trajectory.count, what);
    for (const [a, arm] of plan.arms.entries()) {
      const traj = arm.trajectory;
      const t = Float64Array.from({ length: traj.count }, (_, k) => k / traj.rate);
      const rt = limitRatios(t, traj.q, traj.count, 6, request[a].limits);
      assert.ok(
        Math.max(rt.velocity, rt.acceleration, rt.jerk) <= 1,
        `${what}: arm ${a} exceeds limits ${JSON.stringify(rt)}`,
      );
    }
  }
  assert.ok(stretchedLeft > 0 && stretchedRight > 0, 'both arms should sometimes be the faster one');
});

test('dual arm by hand: the faster arm is slowed uniformly to the slower arm', () => {
  const r = new Prng(6);
  const limits = randomLimits(r, 2);
  const fast = timePath(
    { joints: 2, samples: 2, q: new Float64Array([0, 0, 0.1, 0.1]), length: 0, rotation: 0 },
    limits,
    tcp,
  );
  const slow = timePath(
    { joints: 2, samples: 2, q: new Float64Array([0, 0, 1, -1]), length: 0, rotation: 0 },
    limits,
    tcp,
  );
  assert.ok(fast.ok && slow.ok);
  const sync = synchroniseArms([fast.segment], [slow.segment]);
  assert.ok(sync.ok);
  const f = slow.segment.duration / fast.segment.duration;
  assert.equal(sync.left[0].duration, slow.segment.duration);
  assert.ok(Math.abs(sync.left[0].scale - fast.segment.alpha * f) < 1e-12 * f);
  assert.equal(sync.right[0], slow.segment);
  const bad = synchroniseArms([fast.segment], []);
  assert.ok(!bad.ok && bad.code === 'segment_count_mismatch' && /left has 1, right 0/.test(bad.message));
});

test('sparse samples around a sharp bend: the resampled references are stretched until they keep the limits', () => {
  // Three samples with a reversal: the spline through them bends harder than the sample
  // differences show, so the 100 Hz references need more time than α alone gives.
  const path: JointPath = { joints: 1, samples: 3, q: new Float64Array([0, 1, 0]), length: 0, rotation: 0 };
  const limits = [{ velocity: 1, acceleration: 1, jerk: 1 }];
  const plan = planTiming([{ segments: [path], limits, tcp }], opts);
  assert.ok(plan.ok, JSON.stringify(plan));
  assert.ok(plan.extraStretch > 1, `expected an extra stretch, got ${plan.extraStretch}`);
  const traj = plan.arms[0].trajectory;
  const rt = limitRatios(
    Float64Array.from({ length: traj.count }, (_, k) => k / 100),
    traj.q,
    traj.count,
    1,
    limits,
  );
  assert.ok(Math.max(rt.velocity, rt.acceleration, rt.jerk) <= 1, JSON.stringify(rt));
});

test('bad requests return codes with the arm and segment', () => {
  const limits = randomLimits(new Prng(7), 2);
  const good: JointPath = { joints: 2, samples: 2, q: new Float64Array([0, 0, 1, 1]), length: 0.1, rotation: 0 };
  const bad: JointPath = { ...good, q: new Float64Array([0, 0, 1, NaN]) };
  const a = planTiming([{ segments: [good, bad], limits, tcp }], opts);
  assert.ok(
    !a.ok &&
      a.code === 'invalid_path' &&
      a.arm === 0 &&
      a.segment === 1 &&
      /arm 0 segment 1: path.q\[1\]\[1\]/.test(a.message),
    JSON.stringify(a),
  );
  const b = planTiming([{ segments: [good], limits, tcp }], { rate: 0, hold: 0.1 });
  assert.ok(!b.ok && b.code === 'invalid_options' && /rate must be finite and > 0/.test(b.message));
  const back: JointPath = { ...good, q: new Float64Array([1, 1, 0, 0]) };
  const c = planTiming(
    [
      { segments: [good], limits, tcp },
      { segments: [good, back], limits, tcp },
    ],
    opts,
  );
  assert.ok(!c.ok && c.code === 'segment_count_mismatch');
  const e = planTiming([{ segments: [good, { ...good, q: new Float64Array([0.5, 1, 2, 2]) }], limits, tcp }], opts);
  assert.ok(
    !e.ok &&
      e.code === 'invalid_path' &&
      e.segment === 1 &&
      /must start where segment 0 ends.*off by 0.5/.test(e.message),
    JSON.stringify(e),
  );
  const d = planTiming([], opts);
  assert.ok(!d.ok && /need 1 or 2 arms, got 0/.test(d.message));
});
