import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSetup } from '../../../robot/description/loader.js';
import type { HeldObject, Triple } from '../../../robot/description/types.js';
import { forwardKinematics } from '../../../robot/kinematics/forward.js';
import {
  ArmSafetyModel,
  checkTrajectories,
  robotSafety,
  setupSafety,
  type JointTrajectory,
} from '../../../robot/safety/trajectory-check.js';
import { robot } from '../kinematics/robots.js';

const READY = [0, -0.785, 0, -2.356, 0, 1.571, 0.785];
const still = (q: number[], count = 3): JointTrajectory => ({
  times: Array.from({ length: count }, (_, k) => k / 100),
  q: Array.from({ length: count }, () => q).flat(),
});
const tcpAt = (arm: ArmSafetyModel, q: number[]): Float64Array => {
  const T = new Float64Array(12);
  forwardKinematics(arm.chain, q, T, new Float64Array((arm.chain.dof + 1) * 12));
  return T;
};

test('a held stick moves with the TCP: reaching below the table is refused by how far, a short one passes', () => {
  const { envelope } = robotSafety(robot('panda'));
  const bare = new ArmSafetyModel('panda', robot('panda'));
  const T = tcpAt(bare, READY);
  // The stick runs along the tool z axis; its far end is at z = T_z + L·R_zz.
  const stick = (L: number): HeldObject => ({ name: 'stick', a: [0, 0, 0], b: [0, 0, L], radius: 0.02 });
  // Far end 1 cm below the table: the 2 cm ball there reaches 3 cm below.
  const L = (-0.01 - T[11]) / T[10];
  const long = new ArmSafetyModel('panda', robot('panda'), undefined, stick(L));
  const r = checkTrajectories([long], [still(READY)], envelope);
  assert.ok(!r.ok && r.violation.code === 'table', r.ok ? 'passed' : r.message);
  const v = r.violation as { link: string; sample: number; distance: number };
  assert.deepEqual([v.link, v.sample], ['held:stick', 0]);
  assert.ok(Math.abs(v.distance - 0.03) < 1e-12, `${v.distance}`);
  assert.equal(r.message, 'arm "panda" held object "stick" at sample 0: 30.0 mm below the table plane');
  const short = new ArmSafetyModel('panda', robot('panda'), undefined, stick(L / 2));
  const ok = checkTrajectories([short], [still(READY)], envelope);
  assert.ok(ok.ok, ok.ok ? '' : ok.message);
});

test('a held object is checked against obstacles and the other arm (names the held object and the link)', () => {
  const setup = loadSetup('dual-yam');
  assert.ok(setup.ok);
  const plain = setupSafety(setup.value);
  const rest = still([0, 0, 0, 0, 0, 0]);
  assert.ok(checkTrajectories(plain.arms, [rest, rest], plain.envelope).ok);
  const [left, right] = plain.arms;
  const frames = new Float64Array(7 * 12);
  forwardKinematics(right.chain, [0, 0, 0, 0, 0, 0], new Float64Array(12), frames);
  right.capsules.place(frames);
  const g = right.capsules.links.indexOf('gripper');
  const target: Triple = [0, 1, 2].map((i) => right.capsules.world[g * 6 + i]) as Triple;
  // A ball held by the left arm, placed (in its TCP frame) on the right gripper's axis end: Rᵀ(p − t).
  const T = tcpAt(left, [0, 0, 0, 0, 0, 0]);
  const d = [target[0] - T[3], target[1] - T[7], target[2] - T[11]];
  const local = [0, 1, 2].map((i) => T[i] * d[0] + T[4 + i] * d[1] + T[8 + i] * d[2]) as Triple;
  const ball: HeldObject = { name: 'ball', a: local, b: local, radius: 0.01 };
  const arms = [new ArmSafetyModel('left', setup.value.arms[0].robot, setup.value.arms[0].base, ball), right];
  const hit = checkTrajectories(arms, [rest, rest], plain.envelope);
  assert.ok(!hit.ok && hit.violation.code === 'arm-collision', hit.ok ? 'passed' : hit.message);
  const v = hit.violation as { links: string[]; sample: number; distance: number };
  assert.deepEqual([v.links, v.sample], [['held:ball', 'gripper'], 0]);
  assert.ok(Math.abs(v.distance + 0.05) < 1e-9, `${v.distance}: the ball's and the gripper's radii overlap`);
  assert.match(hit.message, /^arm "left" held object "ball" and arm "right" link "gripper" are -50\.0 mm apart/);
  // The same ball against an obstacle around it instead (right arm far away).
  const env = {
    ...plain.envelope,
    obstacles: [{ name: 'bin', shape: 'sphere' as const, center: target, radius: 0.005 }],
    obstacleClearance: 0,
  };
  const alone = checkTrajectories([arms[0]], [rest], env);
  assert.ok(!alone.ok && alone.violation.code === 'obstacle', alone.ok ? 'passed' : alone.message);
  assert.deepEqual(alone.violation, {
    code: 'obstacle',
    arm: 'left',
    link: 'held:ball',
    obstacle: 'bin',
    sample: 0,
    distance: (alone.violation as { distance: number }).distance,
    clearance: 0,
  });
  assert.ok(Math.abs((alone.violation as { distance: number }).distance + 0.015) < 1e-9);
});

test('a grasped envelope may start inside the table (the object rested there) but not go deeper; a mounted tool may not', () => {
  const { envelope } = robotSafety(robot('panda'));
  const bare = new ArmSafetyModel('panda', robot('panda'));
  const T = tcpAt(bare, READY);
  // A stick along the tool z axis whose far end's 2 cm ball reaches 1 cm into the table at READY.
  const ball: HeldObject = { name: 'grasped', a: [0, 0, 0], b: [0, 0, (0.01 - T[11]!) / T[10]!], radius: 0.02 };
  const lower = [0.2, -0.2]
    .map((d) => READY.map((q, j) => (j === 3 ? q + d : q)))
    .sort((a, b) => tcpAt(bare, a)[11]! - tcpAt(bare, b)[11]!);
  const [deeper, higher] = [lower[0]!, lower[1]!];
  assert.ok(
    tcpAt(bare, deeper)[11]! < T[11]! && tcpAt(bare, higher)[11]! > T[11]!,
    'one move lowers the TCP, one raises it',
  );
  const path = (to: number[]): JointTrajectory => ({
    times: [0, 0.5, 1],
    q: [...READY, ...READY.map((q, j) => (q + to[j]!) / 2), ...to],
  });
  const grasped = new ArmSafetyModel('panda', robot('panda'), undefined, ball, true);
  assert.ok(checkTrajectories([grasped], [still(READY)], envelope).ok, 'resting where it was grasped');
  const up = checkTrajectories([grasped], [path(higher)], envelope);
  assert.ok(up.ok, up.ok ? '' : up.message);
  const down = checkTrajectories([grasped], [path(deeper)], envelope);
  assert.ok(
    !down.ok && down.violation.code === 'table' && down.violation.sample === 1,
    down.ok ? 'passed' : down.message,
  );
  const mounted = new ArmSafetyModel('panda', robot('panda'), undefined, ball);
  const r = checkTrajectories([mounted], [still(READY)], envelope);
  assert.ok(!r.ok && r.violation.code === 'table', 'a mounted tool starting in the table is refused');
});
