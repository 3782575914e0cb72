import { test } from 'node:test';
import assert from 'node:assert/strict';
import { quat, quatAngle, quatFromTransform, quatMultiply, slerp } from '../../../robot/math/quaternion.js';
import { forwardKinematics } from '../../../robot/kinematics/forward.js';
import { IkSolver } from '../../../robot/kinematics/ik.js';
import {
  sampleCartesianPath,
  segmentSamples,
  type PathOptions,
  type PoseTarget,
} from '../../../robot/motion/cartesian-path.js';
import { chainOf, robot } from '../kinematics/robots.js';

const UR5E = robot('ur5e');
const OPTIONS: PathOptions = { sampling: UR5E.path, tcpSpeed: UR5E.tcpSpeed };
const START = [0.3, -1.2, 1.5, -1.9, -1.57, 0.2];

function setup(): { solver: IkSolver; start: Float64Array; startQuat: Float64Array } {
  const solver = new IkSolver(chainOf('ur5e'), UR5E.ik);
  const start = forwardKinematics(solver.chain, START, new Float64Array(12));
  return { solver, start, startQuat: quatFromTransform(quat(), start) };
}

function about(axis: number[], angle: number): Float64Array {
  const s = Math.sin(angle / 2);
  return quat(axis[0] * s, axis[1] * s, axis[2] * s, Math.cos(angle / 2));
}

test('samples per segment: max(2, ceil(max(L/Δp, θ/Δθ, T_nom·rate))) with T_nom = max(L/v, θ/ω, 1/rate)', () => {
  // 0.1 m: T_nom = 0.1/0.08 = 1.25 s → 125 samples (L/Δp alone would be 20).
  assert.deepEqual(segmentSamples(0.1, 0, OPTIONS), { count: 125, nominalDuration: 1.25 });
  // 0.7 rad: T_nom = 1.4 s → 140 (θ/Δθ = 20).
  assert.deepEqual(segmentSamples(0, 0.7, OPTIONS), { count: 140, nominalDuration: 1.4 });
  // Tiny and empty segments: the 1/rate floor gives one step, the minimum is two.
  assert.deepEqual(segmentSamples(1e-4, 0, OPTIONS), { count: 2, nominalDuration: 0.01 });
  assert.deepEqual(segmentSamples(0, 0, OPTIONS), { count: 2, nominalDuration: 0.01 });
  // Coarse steps at a fast TCP: the geometric step decides.
  const fast: PathOptions = {
    sampling: { positionStep: 0.005, rotationStep: 0.035, rateHz: 100 },
    tcpSpeed: { linear: 10, angular: 10 },
  };
  assert.equal(segmentSamples(0.1, 0, fast).count, 20);
  assert.equal(segmentSamples(0, 0.7, fast).count, 20);
});

test('UR5e: a 10 cm line then a 0.5 rad turn; every sample is on the interpolated pose, joints continuous', () => {
  const { solver, start, startQuat } = setup();
  const p0 = [start[3], start[7], start[11]];
  const p1 = [p0[0] + 0.1, p0[1], p0[2]];
  const q1 = quatMultiply(quat(), about([0, 0, 1], 0.5), startQuat);
  const targets: PoseTarget[] = [
    { position: p1, orientation: startQuat },
    { position: p1, orientation: q1 },
  ];
  const r = sampleCartesianPath(solver, START, targets, OPTIONS);
  assert.equal(r.code, 'ok');
  if (r.code !== 'ok') return;
  assert.deepEqual(
    r.segments.map((s) => [s.target, s.points]),
    [
      [0, 126],
      [1, 101],
    ],
  );
  assert.ok(Math.abs(r.segments[0].length - 0.1) < 1e-15 && r.segments[0].angle < 1e-12);
  assert.ok(Math.abs(r.segments[1].angle - 0.5) < 1e-12 && r.segments[1].length === 0);
  assert.deepEqual(Array.from(r.segments[0].q.subarray(0, 6)), START, 'row 0 is the measured joints');
  const tcp = new Float64Array(12);
  const froms = [
    { p: p0, q: startQuat },
    { p: p1, q: startQuat },
  ];
  const tos = [
    { p: p1, q: startQuat },
    { p: p1, q: q1 },
  ];
  r.segments.forEach((seg, k) => {
    const N = seg.points - 1;
    for (let i = 0; i <= N; i++) {
      const q = seg.q.subarray(i * 6, i * 6 + 6);
      assert.ok(solver.chain.withinLimits(q), `segment ${k} sample ${i} out of limits`);
      if (i > 0) {
        for (let j = 0; j < 6; j++)
          assert.ok(Math.abs(q[j] - seg.q[(i - 1) * 6 + j]) < 0.05, `segment ${k} sample ${i} joint ${j} jumps`);
      }
      forwardKinematics(solver.chain, q, tcp);
      const s = i / N;
      const want = froms[k].p.map((x, a) => x + s * (tos[k].p[a] - x));
      const dp = Math.hypot(tcp[3] - want[0], tcp[7] - want[1], tcp[11] - want[2]);
      const dr = quatAngle(quatFromTransform(quat(), tcp), slerp(quat(), froms[k].q, tos[k].q, s));
      assert.ok(
        dp <= 0.002 && dr <= Math.PI / 180,
        `segment ${k} sample ${i}: ${dp} m, ${dr} rad off the interpolated pose`,
      );
    }
  });
});

test('orientation takes the short arc: q and −q targets give the same joint path', () => {
  const { solver, start, startQuat } = setup();
  const target = quatMultiply(quat(), about([1, 0, 0], 0.4), startQuat);
  const position = [start[3], start[7] + 0.02, start[11]];
  const a = sampleCartesianPath(solver, START, [{ position, orientation: target }], OPTIONS);
  const b = sampleCartesianPath(solver, START, [{ position, orientation: target.map((x) => -x) }], OPTIONS);
  assert.ok(a.code === 'ok' && b.code === 'ok');
  assert.equal(a.segments[0].points, b.segments[0].points);
  assert.ok(Math.abs(a.segments[0].angle - 0.4) < 1e-12, `angle ${a.segments[0].angle}`);
  assert.deepEqual(Array.from(a.segments[0].q), Array.from(b.segments[0].q));
});

test('an unreachable target reports target index, sample index and residuals', () => {
  const { solver, start, startQuat } = setup();
  const near = [start[3], start[7], start[11] + 0.05];
  const r = sampleCartesianPath(
    solver,
    START,
    [
      { position: near, orientation: startQuat },
      { position: [2, 0, 0.3], orientation: startQuat },
    ],
    OPTIONS,
  );
  assert.equal(r.code, 'unreachable');
  if (r.code !== 'unreachable') return;
  assert.equal(r.target, 1);
  assert.ok(r.sample > 1, `sample ${r.sample}`);
  assert.ok(
    r.positionError > 0.002 || r.rotationError > Math.PI / 180,
    `residuals ${r.positionError} m, ${r.rotationError} rad`,
  );
  assert.ok(['not-converged', 'out-of-reach'].includes(r.ik));
});

test('bad requests: non-finite position, non-unit quaternion, wrong joint count, no targets, a joint jump', () => {
  const { solver, start, startQuat } = setup();
  const p = [start[3], start[7], start[11]];
  const cases: [unknown[], PoseTarget[], object, PathOptions?][] = [
    [
      START,
      [
        { position: p, orientation: startQuat },
        { position: [NaN, 0, 0], orientation: startQuat },
      ],
      { code: 'invalid-target', target: 1, message: 'position must be three finite numbers' },
    ],
    [
      START,
      [{ position: p, orientation: [0, 0, 0, 0.5] }],
      { code: 'invalid-target', target: 0, message: 'quaternion norm 0.5 is outside [0.99, 1.01]' },
    ],
    [
      START,
      [{ position: p, orientation: [0, 0, 1] }],
      { code: 'invalid-target', target: 0, message: 'quaternion must be four finite numbers' },
    ],
    [
      [0, 0, 0],
      [{ position: p, orientation: startQuat }],
      { code: 'invalid-start', message: 'measured joints must be 6 finite values' },
    ],
    [START, [], { code: 'invalid-target', target: 0, message: 'no targets' }],
  ];
  for (const [measured, targets, expected] of cases) {
    assert.deepEqual(sampleCartesianPath(solver, measured as number[], targets, OPTIONS), expected);
  }
  // A quaternion of norm 1.005 is accepted and normalised.
  assert.equal(
    sampleCartesianPath(solver, START, [{ position: p, orientation: startQuat.map((x) => x * 1.005) }], OPTIONS).code,
    'ok',
  );
  const jump = sampleCartesianPath(solver, START, [{ position: [p[0] + 0.05, p[1], p[2]], orientation: startQuat }], {
    ...OPTIONS,
    maxJointStep: 1e-4,
  });
  assert.equal(jump.code, 'joint-jump');
  if (jump.code === 'joint-jump') {
    assert.equal(jump.target, 0);
    assert.equal(jump.sample, 1);
    assert.ok(solver.chain.jointNames.includes(jump.joint) && jump.step > 1e-4);
  }
});

test('the path starts from the measured joints: a different IK branch is kept, not switched', () => {
  const { solver, start, startQuat } = setup();
  // Same TCP pose, other elbow: solve from the flipped-elbow guess, then move 3 cm.
  const flipped = solver.solve(start, [0.3, -1.2 + 1.5 * 0.9, -1.5, -1.9 + 1.5 * 0.6, -1.57, 0.2]);
  assert.equal(flipped.code, 'ok');
  assert.ok(flipped.q[2] < 0, `expected the elbow-down branch, got q3 = ${flipped.q[2]}`);
  const r = sampleCartesianPath(
    solver,
    flipped.q,
    [{ position: [start[3], start[7], start[11] + 0.03], orientation: startQuat }],
    OPTIONS,
  );
  assert.equal(r.code, 'ok');
  if (r.code !== 'ok') return;
  const seg = r.segments[0];
  for (let i = 0; i < seg.points; i++)
    assert.ok(seg.q[i * 6 + 2] < 0, `sample ${i} switched elbow: ${seg.q[i * 6 + 2]}`);
});
