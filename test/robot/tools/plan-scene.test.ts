// planScene: which object the planner treats as held. The executor's grasp can be newer than the
// simulator's ground truth (its `held_by` still null): the free object the closed jaw holds, the
// one centred at the TCP, must then be carried, not checked as an obstacle inside the gripper.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadArms } from '../../../robot/description/loader.js';
import { forwardKinematics } from '../../../robot/kinematics/forward.js';
import type { SimSceneMsg } from '../../../robot/link/sim-scene.js';
import { planScene } from '../../../robot/tools/plan-scene.js';
import { RobotModel } from '../../../robot/tools/robot-model.js';

const r = loadArms('yam');
if (!r.ok) throw new Error(JSON.stringify(r.issues));
const model = new RobotModel(r.value.setup);
const q = [0.28, 1.96, 1.45, -1.05, 0, 0.28];
const tcp = forwardKinematics(model.arm('arm').chain, q, new Float64Array(12));
const at = (dx: number, dz = 0) => [tcp[3]! + dx, tcp[7]!, tcp[11]! + dz, 0, 0, 0, 1];
const box = { kind: 'box' as const, size: [0.04, 0.04, 0.04] as [number, number, number] };

function scene(heldBy: string | null): SimSceneMsg {
  return {
    v: 1,
    scene: 't',
    seed: 0,
    time: 1,
    objects: [
      { name: 'far', pose: at(0.2), held_by: null, shape: box },
      // 15 mm below the TCP: inside the block's bounding radius (34.6 mm).
      { name: 'red', pose: at(0, -0.015), held_by: heldBy, shape: box },
      { name: 'beside', pose: at(0.03), held_by: null, shape: box },
    ],
    predicates: {},
    tasks: {},
    collisions: { count: 0, last: null },
  };
}
const names = (s: ReturnType<typeof planScene>) => s.objects.map((o) => o.name).sort();

test('the ground truth names the held object: it is carried, the others stay', () => {
  const s = planScene(model, { msg: scene('arm'), grippers: { arm: 0.5 } }, { arm: q }, ['arm']);
  assert.equal(s.arms.arm!.held?.name, 'red');
  assert.deepEqual(names(s), ['beside', 'far']);
});

test('a grasp newer than the ground truth: the object centred at the TCP is carried (nearest wins)', () => {
  const s = planScene(model, { msg: scene(null), grippers: { arm: 0.5 } }, { arm: q }, ['arm']);
  assert.equal(s.arms.arm!.held?.name, 'red');
  assert.deepEqual(names(s), ['beside', 'far']);
});

test('no grasp, or nothing within reach of the TCP: every object is checked where it is', () => {
  const open = planScene(model, { msg: scene(null), grippers: { arm: 1 } }, { arm: q }, []);
  assert.equal(open.arms.arm!.held, undefined);
  assert.deepEqual(names(open), ['beside', 'far', 'red']);
  const msg = scene(null);
  msg.objects = msg.objects.filter((o) => o.name === 'far');
  const none = planScene(model, { msg, grippers: { arm: 0.5 } }, { arm: q }, ['arm']);
  assert.equal(none.arms.arm!.held, undefined);
  assert.deepEqual(names(none), ['far']);
});

test('a grasped name that is no arm of the model (an Object prototype key included) carries nothing', () => {
  for (const bogus of ['constructor', 'toString', '__proto__', 'nope']) {
    const s = planScene(model, { msg: scene(bogus), grippers: { arm: 0.5 } }, { arm: q }, [bogus]);
    assert.equal(s.arms.arm!.held, undefined, bogus);
    assert.deepEqual(names(s), ['beside', 'far', 'red'], bogus);
  }
});
