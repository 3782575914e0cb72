import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import type { Obstacle, Triple } from '../../../robot/description/types.js';
import { forwardKinematics } from '../../../robot/kinematics/forward.js';
import { fromXyzRpy } from '../../../robot/math/transform.js';
import { obstacleDistance } from '../../../robot/safety/obstacle-distance.js';
import {
  checkTrajectories,
  robotSafety,
  type ArmSafetyModel,
  type JointTrajectory,
} from '../../../robot/safety/trajectory-check.js';
import { robot } from '../kinematics/robots.js';

const box = (name: string, xyz: Triple, rpy: Triple, size: Triple): Obstacle => ({
  name,
  shape: 'box',
  pose: fromXyzRpy(xyz, rpy),
  half: [size[0] / 2, size[1] / 2, size[2] / 2],
});
const sphere = (center: Triple, radius: number): Obstacle => ({ name: 's', shape: 'sphere', center, radius });
const capsule = (a: Triple, b: Triple, radius: number): Obstacle => ({ name: 'c', shape: 'capsule', a, b, radius });
const dist = (a: Triple, b: Triple, r: number, o: Obstacle): number => obstacleDistance([...a, ...b], 0, 3, r, o);

test('by hand: capsule–box, capsule–sphere and capsule–capsule distances', () => {
  const cube = box('cube', [0, 0, 0], [0, 0, 0], [0.2, 0.2, 0.2]);
  const close = (x: number, y: number) => assert.ok(Math.abs(x - y) < 1e-9, `${x} vs ${y}`);
  // Parallel to a face: 0.3 − 0.1 − 0.05.
  close(dist([0.3, -0.5, 0], [0.3, 0.5, 0], 0.05, cube), 0.15);
  // Parallel to an edge at (0.1, 0.1, z): √2·0.1 from (0.2, 0.2, z).
  close(dist([0.2, 0.2, -1], [0.2, 0.2, 1], 0, cube), Math.SQRT2 * 0.1);
  // Crossing diagonally above the top face, closest at the middle: 0.25 − 0.1.
  close(dist([-1, -1, 0.25], [1, 1, 0.25], 0, cube), 0.15);
  // Through the centre: depth 0.1 plus the radius.
  close(dist([0, 0, -1], [0, 0, 1], 0.05, cube), -0.15);
  // Rotated 45° about z, a point on +x: the corner reaches √2·0.1.
  const turned = box('turned', [1, 0, 0], [0, 0, Math.PI / 4], [0.2, 0.2, 0.2]);
  close(dist([1.3, 0, 0], [1.3, 0, 0], 0, turned), 0.3 - Math.SQRT2 * 0.1);
  // Sphere above the middle of the axis, and off the end of the axis.
  close(dist([-1, 0, 0], [1, 0, 0], 0.05, sphere([0, 0, 1], 0.1)), 0.85);
  close(dist([0.5, 0, 0], [1, 0, 0], 0.05, sphere([0, 0, 0], 0.1)), 0.35);
  // Crossed capsules 0.5 apart in z.
  close(dist([-1, 0, 0], [1, 0, 0], 0.05, capsule([0, -1, 0.5], [0, 1, 0.5], 0.1)), 0.35);
});

/** Independent reference: dense points along the axis, point–shape distances by their definitions. */
function sampledDistance(a: Triple, b: Triple, r: number, o: Obstacle, n = 4000): number {
  let best = Infinity;
  for (let k = 0; k <= n; k++) {
    const p = a.map((x, i) => x + (k / n) * (b[i] - x));
    let d: number;
    if (o.shape === 'sphere') d = Math.hypot(...p.map((x, i) => x - o.center[i])) - o.radius;
    else if (o.shape === 'capsule') {
      const m = 4000;
      d = Infinity;
      for (let j = 0; j <= m; j += 1) {
        const s = o.a.map((x, i) => x + (j / m) * (o.b[i] - x));
        d = Math.min(d, Math.hypot(...p.map((x, i) => x - s[i])));
      }
      d -= o.radius;
    } else {
      // Box frame: local_i = Σ_j R_ji (p_j − t_j); then outside length or minus depth.
      const t = [o.pose[3], o.pose[7], o.pose[11]];
      const l = [0, 1, 2].map((i) => [0, 1, 2].reduce((s, j) => s + o.pose[j * 4 + i] * (p[j] - t[j]), 0));
      const q = l.map((x, i) => Math.abs(x) - o.half[i]);
      const out = Math.hypot(...q.map((x) => Math.max(x, 0)));
      d = out > 0 ? out : Math.max(...q);
    }
    best = Math.min(best, d);
  }
  return best - r;
}

test('property (seeded): distances match a dense reference, are symmetric, and positive when apart', () => {
  const rng = new Prng(25);
  const pt = (s: number): Triple => [rng.uniform(-s, s), rng.uniform(-s, s), rng.uniform(-s, s)];
  for (let trial = 0; trial < 150; trial++) {
    const a = pt(0.6),
      b = pt(0.6),
      r = rng.uniform(0, 0.1);
    const kind = trial % 3;
    const o: Obstacle =
      kind === 0
        ? box('b', pt(0.3), pt(Math.PI), [rng.uniform(0.01, 0.5), rng.uniform(0.01, 0.5), rng.uniform(0.01, 0.5)])
        : kind === 1
          ? sphere(pt(0.5), rng.uniform(0.01, 0.3))
          : capsule(pt(0.5), pt(0.5), rng.uniform(0.01, 0.2));
    const input = JSON.stringify({ trial, a, b, r, o: { ...o, pose: 'pose' in o ? [...o.pose] : undefined } });
    const d = dist(a, b, r, o);
    const ref = kind === 2 ? sampledDistance(a, b, r, o, 400) : sampledDistance(a, b, r, o);
    // The reference overestimates by at most half a sample step (both shapes sampled for capsules).
    const tol = kind === 2 ? 2e-3 : 2e-4;
    assert.ok(d <= ref + 1e-9 && d >= ref - tol, `distance ${d}, reference ${ref}: ${input}`);
    if (ref > tol) assert.ok(d > 0, `apart but ${d}: ${input}`);
    const reversed = dist(b, a, r, o);
    assert.ok(Math.abs(reversed - d) < 1e-12, `not symmetric in the capsule's ends: ${reversed} vs ${d}: ${input}`);
    if (o.shape === 'capsule') {
      const swapped = obstacleDistance([...o.a, ...o.b], 0, 3, o.radius, capsule(a, b, r));
      assert.ok(Math.abs(swapped - d) < 1e-12, `capsule pair not symmetric: ${swapped} vs ${d}: ${input}`);
    }
  }
});

/** count samples at 100 Hz of a rest-to-rest quintic from a to b over T seconds. */
function quinticPath(a: number[], b: number[], T: number): JointTrajectory {
  const count = Math.round(T * 100) + 1;
  const times = Array.from({ length: count }, (_, k) => k / 100);
  return {
    times,
    q: times.flatMap((t) => {
      const u = Math.min(1, t / T);
      const s = u * u * u * (10 - 15 * u + 6 * u * u);
      return a.map((x, i) => x + s * (b[i] - x));
    }),
  };
}

/** First sample where the TCP or a capsule is closer than `clearance` to o, by the dense reference. */
function firstHit(arm: ArmSafetyModel, t: JointTrajectory, o: Obstacle, clearance: number) {
  const n = arm.chain.dof;
  const frames = new Float64Array((n + 1) * 12);
  const tcp = new Float64Array(12);
  for (let k = 0; k < t.times.length; k++) {
    forwardKinematics(arm.chain, Array.from(t.q).slice(k * n, k * n + n), tcp, frames);
    arm.capsules.place(frames);
    const c = arm.capsules;
    const parts: [Triple, Triple, number][] = [[[tcp[3], tcp[7], tcp[11]], [tcp[3], tcp[7], tcp[11]], 0]];
    for (let i = 0; i < c.count; i++) {
      const w = Array.from(c.world.slice(i * 6, i * 6 + 6));
      parts.push([[w[0], w[1], w[2]], [w[3], w[4], w[5]], c.radius[i]]);
    }
    const d = Math.min(...parts.map(([a, b, r]) => sampledDistance(a, b, r, o, 200)));
    if (d < clearance) return { sample: k, distance: d };
  }
  return undefined;
}

const READY = [0, -0.785, 0, -2.356, 0, 1.571, 0.785];

test('a panda swing through a box is refused at the first sample within the clearance; swinging away passes', () => {
  const { arms, envelope } = robotSafety(robot('panda'));
  // A 10 cm cube where the TCP is with joint1 at +0.8 rad.
  const tcp = new Float64Array(12);
  forwardKinematics(arms[0].chain, [0.8, ...READY.slice(1)], tcp, new Float64Array((7 + 1) * 12));
  const shelf = box('shelf', [tcp[3], tcp[7], tcp[11]], [0, 0, 0.3], [0.1, 0.1, 0.1]);
  const env = { ...envelope, obstacles: [shelf], obstacleClearance: 0.01 };
  const through = quinticPath(READY, [1.6, ...READY.slice(1)], 2);
  const r = checkTrajectories(arms, [through], env);
  const expected = firstHit(arms[0], through, shelf, 0.01);
  assert.ok(expected && expected.sample > 0);
  assert.ok(!r.ok && r.violation.code === 'obstacle', r.ok ? 'passed' : r.message);
  const v = r.violation as Extract<typeof r.violation, { code: 'obstacle' }>;
  assert.equal(v.sample, expected.sample);
  assert.equal(v.obstacle, 'shelf');
  assert.equal(v.clearance, 0.01);
  assert.ok(v.distance < 0.01 && Math.abs(v.distance - expected.distance) < 2e-3, JSON.stringify([v, expected]));
  assert.match(
    r.message,
    /^arm "panda" (TCP|link "\w+") at sample \d+ is -?\d+\.\d mm from obstacle "shelf", below the clearance 10\.0 mm$/,
  );
  const away = quinticPath(READY, [-1.6, ...READY.slice(1)], 2);
  assert.equal(firstHit(arms[0], away, shelf, 0.01), undefined);
  const ok = checkTrajectories(arms, [away], env);
  assert.ok(ok.ok, ok.ok ? '' : ok.message);
});
