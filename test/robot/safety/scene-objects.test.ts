// The safety check against a simulated scene's objects (robot/safety/scene-bodies.ts): link
// capsules against objects nobody holds, the gripper enclosing an object in the jaw's channel,
// and a held object against objects, the table and its own arm's links but the gripper.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import { KinematicChain } from '../../../robot/kinematics/chain.js';
import { forwardKinematics } from '../../../robot/kinematics/forward.js';
import { IkSolver } from '../../../robot/kinematics/ik.js';
import { compose, invert, translation, type Transform } from '../../../robot/math/transform.js';
import { placeHeld } from '../../../robot/safety/held-object.js';
import { heldOutside } from '../../../robot/safety/scene-checks.js';
import { heldBodyBottom, heldCapsule, type HeldBody, type SceneBody } from '../../../robot/safety/scene-bodies.js';
import {
  checkTrajectories,
  robotSafety,
  type ArmSafetyModel,
  type JointTrajectory,
  type SafetyEnvelope,
} from '../../../robot/safety/trajectory-check.js';
import type { Shape } from '../../../robot/sim/scene/types.js';
import { robot } from '../kinematics/robots.js';

const HOME = [0, 1, 1, 0, 0, 0];

/** Joints with yam's TCP at (0.35, 0, z) pointing straight down. */
function downAt(z: number): number[] {
  const r = robot('yam');
  let t = 0;
  const ik = new IkSolver(new KinematicChain(r), r.ik);
  const target = new Float64Array([-1, 0, 0, 0.35, 0, 1, 0, 0, 0, 0, -1, z]);
  const s = ik.solve(target, HOME, { rng: new Prng(3), clock: () => (t += 1e-4), maxAttempts: 300 });
  assert.equal(s.code, 'ok');
  return [...s.q];
}
const at = (...qs: number[][]): JointTrajectory => ({ times: qs.map((_, k) => k), q: qs.flat() });

function yam(): { arm: ArmSafetyModel; env: SafetyEnvelope } {
  const { arms, envelope } = robotSafety(robot('yam'));
  return {
    arm: arms[0]!,
    env: { ...envelope, table: { normal: [0, 0, 1], offset: -10 }, workspace: { min: [-5, -5, -5], max: [5, 5, 5] } },
  };
}

/** TCP pose at q, placing the arm's capsules there too. */
function place(arm: ArmSafetyModel, q: number[]): Transform {
  const tcp = new Float64Array(12);
  const frames = new Float64Array((arm.chain.dof + 1) * 12);
  forwardKinematics(arm.chain, q, tcp, frames);
  arm.capsules.place(frames);
  return tcp;
}

const at3 = (x: number, y: number, z: number): Transform => translation(new Float64Array(12), x, y, z);
const body = (name: string, shape: Shape, pose: Transform, tags: string[] = []): SceneBody => ({
  name,
  shape,
  pose,
  tags,
});
const cube = (s: number): Shape => ({ kind: 'box', size: [s, s, s] });

/** Midpoint of capsule `link` and a unit vector perpendicular to its axis. */
function capsuleMid(arm: ArmSafetyModel, link: string): { m: number[]; u: number[]; r: number } {
  const c = arm.capsules;
  const i = c.links.indexOf(link);
  const w = c.world.slice(i * 6, i * 6 + 6);
  const d = [w[3]! - w[0]!, w[4]! - w[1]!, w[5]! - w[2]!];
  // Perpendicular: d × z (the axis is never vertical at HOME for link_2), normalised.
  const p = [d[1]!, -d[0]!, 0];
  const n = Math.hypot(...p);
  return { m: [0, 1, 2].map((k) => (w[k]! + w[k + 3]!) / 2), u: p.map((x) => x / n), r: c.radius[i]! };
}

test("by hand: a sphere 30 mm from link_2's axis (r 10 mm) overlaps it by 8 mm; at 50 mm it is 12 mm clear", () => {
  const { arm, env } = yam();
  place(arm, HOME);
  const { m, u, r } = capsuleMid(arm, 'link_2');
  assert.equal(r, 0.028);
  const sphere = (D: number) =>
    body('ball', { kind: 'sphere', radius: 0.01 }, at3(m[0]! + D * u[0]!, m[1]! + D * u[1]!, m[2]!));
  const near = checkTrajectories([arm], [at(HOME)], { ...env, objects: [sphere(0.03)] });
  assert.equal(near.ok, false);
  assert.ok(!near.ok && near.violation.code === 'object');
  if (near.ok || near.violation.code !== 'object') return;
  assert.deepEqual([near.violation.link, near.violation.object, near.violation.clearance], ['link_2', 'ball', 0]);
  assert.ok(Math.abs(near.violation.distance + 0.008) < 1e-12, String(near.violation.distance));
  assert.match(
    near.message,
    /arm "yam" link "link_2" at sample 0 is -8\.0 mm from object "ball" \(inside it\), below the clearance 0\.0 mm/,
  );
  assert.equal(checkTrajectories([arm], [at(HOME)], { ...env, objects: [sphere(0.05)] }).ok, true);
});

test("by hand: a 20 mm cube centred on link_2's axis is 10 + 28 mm deep", () => {
  const { arm, env } = yam();
  place(arm, HOME);
  const { m } = capsuleMid(arm, 'link_2');
  const r = checkTrajectories([arm], [at(HOME)], {
    ...env,
    objects: [body('cube', cube(0.02), at3(m[0]!, m[1]!, m[2]!))],
  });
  assert.ok(
    !r.ok && r.violation.code === 'object' && Math.abs(r.violation.distance + 0.038) < 1e-9,
    r.ok ? '' : r.message,
  );
});

/** A 4 cm cube 1 cm ahead of the TCP (along its z), `side` m off along the TCP x axis (across the thin side of yam's jaw). */
function cubeAhead(tcp: Transform, side = 0): SceneBody {
  const local = at3(side, 0, 0.01);
  return body('block', cube(0.04), compose(new Float64Array(12), tcp, local));
}

test('the open gripper may enclose a block in its jaw channel; closed, too narrow, or beside the channel it may not', () => {
  const { arm, env } = yam();
  const tcp = place(arm, HOME);
  const scene = (side: number) => ({ ...env, objects: [cubeAhead(tcp, side)], graspTolerance: 0 });
  arm.opening = 0.095;
  assert.equal(checkTrajectories([arm], [at(HOME)], scene(0)).ok, true);
  for (const [opening, side, why] of [
    [0, 0, 'closed'],
    [0.03, 0, 'narrower than the block'],
    [0.095, 0.03, 'outside the 2 cm thick jaw'],
  ] as const) {
    arm.opening = opening;
    const r = checkTrajectories([arm], [at(HOME)], scene(side));
    assert.ok(!r.ok && r.violation.code === 'object', why);
    if (!r.ok && r.violation.code === 'object')
      assert.deepEqual([r.violation.link, r.violation.object], ['gripper', 'block'], why);
  }
});

/** A held 4 cm cube 15 mm ahead of the TCP, as after a grasp. */
function holdCube(arm: ArmSafetyModel): HeldBody {
  const held: HeldBody = { name: 'red', shape: cube(0.04), tcpFromObject: at3(0, 0, 0.015) };
  arm.heldBody = held;
  arm.held = heldCapsule(held);
  return held;
}

test('a held cube may rest on top of a block (≤ 1 mm), not sink 3 mm into it; its exact bottom meets the table the same way', () => {
  const { arm, env } = yam();
  const start = downAt(0.1);
  const tcp = place(arm, start);
  const held = holdCube(arm);
  const bottom = heldBodyBottom(held, tcp);
  const obj = compose(new Float64Array(12), tcp, held.tcpFromObject);
  // A 4 cm block right below the held one's centre, its top `gap` below the held one's exact bottom.
  const below = (gap: number) => body('blue', cube(0.04), at3(obj[3]!, obj[7]!, bottom - gap - 0.02));
  for (const [gap, ok] of [
    [0.0005, true],
    [-0.0005, true],
    [-0.003, false],
  ] as const) {
    const r = checkTrajectories([arm], [at(start)], { ...env, objects: [below(gap)] });
    assert.equal(r.ok, ok, `gap ${gap}: ${r.ok ? '' : r.message}`);
    if (!r.ok) assert.match(r.message, /held object "red" at sample 0 is -\d+\.\d mm from object "blue"/);
  }
  // The table (heldOutside, as checkTrajectories calls it once the move has started clear of it):
  // the exact bottom 0.5 mm into it rests, 3 mm is refused by how far.
  const w = new Float64Array(6);
  placeHeld(arm.held!, tcp, w);
  for (const [depth, ok] of [
    [0.0005, true],
    [0.003, false],
  ] as const) {
    const table = { normal: [0, 0, 1] as [number, number, number], offset: bottom + depth };
    const v = heldOutside(arm, arm.held!, w, tcp, { ...env, table }, 7, 0);
    assert.equal(v === undefined, ok, `depth ${depth}`);
    if (v)
      assert.ok(v.code === 'table' && Math.abs(v.distance - depth) < 1e-12 && v.link === 'held:red', JSON.stringify(v));
  }
});

test("a held object is checked against its own arm's links but the gripper's (self-collision naming both)", () => {
  const { arm, env } = yam();
  const tcp = place(arm, HOME);
  const { m } = capsuleMid(arm, 'link_2');
  const held: HeldBody = {
    name: 'red',
    shape: cube(0.02),
    tcpFromObject: compose(new Float64Array(12), invert(new Float64Array(12), tcp), at3(m[0]!, m[1]!, m[2]!)),
  };
  arm.heldBody = held;
  arm.held = heldCapsule(held);
  const r = checkTrajectories([arm], [at(HOME)], env);
  assert.ok(!r.ok && r.violation.code === 'self-collision', r.ok ? 'planned' : r.message);
  if (!r.ok && r.violation.code === 'self-collision') assert.deepEqual(r.violation.links, ['held:red', 'link_2']);
  holdCube(arm);
  assert.equal(checkTrajectories([arm], [at(HOME)], env).ok, true, 'held in the gripper');
});

/** Signed distance from point p to an axis-aligned box (centre c, half sizes h): an independent reference. */
function pointBox(p: number[], c: number[], h: number): number {
  const q = p.map((x, i) => Math.abs(x - c[i]!) - h);
  const out = Math.hypot(...q.map((x) => Math.max(x, 0)));
  return out > 0 ? out : Math.max(...q);
}

test('property (seeded): random arm poses and objects; refused exactly when densely sampled capsule points reach into an object', () => {
  const rng = new Prng(25);
  const { arm, env } = yam();
  arm.opening = 0; // no grasp approach: every capsule counts
  const c = arm.capsules;
  let refused = 0,
    clear = 0;
  for (let trial = 0; trial < 300; trial++) {
    const q = arm.limits.map((l) => rng.uniform(Math.max(l.lower, -2), Math.min(l.upper, 2)));
    place(arm, q);
    if (!checkTrajectories([arm], [at(q)], env).ok) continue; // self-collision: not this test's subject
    const objects: SceneBody[] = [];
    for (let n = 0; n < 3; n++) {
      const ctr = [rng.uniform(-0.4, 0.4), rng.uniform(-0.4, 0.4), rng.uniform(0, 0.5)];
      const s = rng.uniform(0.01, 0.05);
      objects.push(
        n % 2
          ? body(`box${n}`, cube(2 * s), at3(ctr[0]!, ctr[1]!, ctr[2]!))
          : body(`ball${n}`, { kind: 'sphere', radius: s }, at3(ctr[0]!, ctr[1]!, ctr[2]!)),
      );
    }
    let min = Infinity;
    for (let i = 0; i < c.count; i++) {
      for (let s = 0; s <= 400; s++) {
        const p = [0, 1, 2].map(
          (k) => c.world[i * 6 + k]! + (s / 400) * (c.world[i * 6 + 3 + k]! - c.world[i * 6 + k]!),
        );
        for (const o of objects) {
          const ctr = [o.pose[3]!, o.pose[7]!, o.pose[11]!];
          const d =
            o.shape.kind === 'sphere'
              ? Math.hypot(...p.map((x, k) => x - ctr[k]!)) - o.shape.radius
              : pointBox(p, ctr, (o.shape as { size: number[] }).size[0]! / 2);
          min = Math.min(min, d - c.radius[i]!);
        }
      }
    }
    if (Math.abs(min) < 1e-3) continue; // within the sampling error
    const r = checkTrajectories([arm], [at(q)], { ...env, objects });
    if (min < 0) {
      refused++;
      assert.ok(!r.ok && r.violation.code === 'object', `trial ${trial}: ${min} but ${r.ok ? 'planned' : r.message}`);
    } else {
      clear++;
      assert.ok(r.ok, `trial ${trial}: ${min} clear but ${r.ok ? '' : r.message}`);
    }
  }
  assert.ok(refused > 20 && clear > 20, `${refused} refused, ${clear} clear`);
});
