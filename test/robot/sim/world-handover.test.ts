import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import { loadArms } from '../../../robot/description/loader.js';
import { KinematicChain } from '../../../robot/kinematics/chain.js';
import { IkSolver } from '../../../robot/kinematics/ik.js';
import type { Transform } from '../../../robot/math/transform.js';
import { loadScene } from '../../../robot/sim/scene/scene-config.js';
import { CONTAINER_FLOOR } from '../../../robot/sim/scene/world-shapes.js';
import { SimWorld, type WorldEvent } from '../../../robot/sim/scene/world.js';
import { down } from './world-fixtures.js';

/** TCP at xyz pointing along world +y, the jaw (TCP y) closing along world z. */
const side = (x: number, y: number, z: number): Transform => new Float64Array([1, 0, 0, x, 0, 0, 1, y, 0, -1, 0, z]);

test('a handover on dual-yam-handover: left grasps, right grasps it from the side, left opens, right drops it in the tray', () => {
  const scene = loadScene('dual-yam-handover');
  const arms = loadArms('dual-yam');
  assert.ok(scene.ok && arms.ok);
  const setup = arms.value.setup;
  const world = new SimWorld(scene.value, setup, 11);
  let clock = 0;
  const ik = (arm: string, target: Transform): number[] => {
    const a = setup.arms.find((x) => x.name === arm)!;
    const r = new IkSolver(new KinematicChain(a.robot, { base: a.base }), a.robot.ik).solve(target, a.robot.home, {
      rng: new Prng(3),
      clock: () => (clock += 1e-4),
      maxAttempts: 300,
    });
    assert.equal(r.code, 'ok', `${arm} IK to (${target[3]}, ${target[7]}, ${target[11]})`);
    return [...r.q];
  };
  const q = new Map(setup.arms.map((a) => [a.name, a.robot.home]));
  const g = new Map<string, number | null>([
    ['left', 1],
    ['right', 1],
  ]);
  const events: WorldEvent[] = [];
  const step = (): WorldEvent[] => {
    const now = world.update(0, q, g);
    events.push(...now);
    return now;
  };
  /** Moves the gripper of `arm` to `to` in steps of 0.01, as a gripper travels. */
  const grip = (arm: string, to: number) => {
    for (let v = g.get(arm)!, k = 0; Math.abs(v - to) > 1e-9 && k < 200; k++) {
      v = v > to ? Math.max(to, v - 0.01) : Math.min(to, v + 0.01);
      g.set(arm, v);
      // The controller stops the fingers where the world says they touch.
      const grasp = step().find((e) => e.kind === 'grasp' && e.arm === arm);
      if (grasp?.kind === 'grasp') {
        g.set(arm, grasp.gripper);
        return;
      }
    }
  };
  const block = () => world.truth().objects.find((o) => o.name === 'block')!;
  const [bx, by] = block().pose;
  step();
  q.set('left', ik('left', down(bx!, by!, 0.15)));
  step();
  q.set('left', ik('left', down(bx!, by!, 0.035)));
  step();
  grip('left', 0);
  assert.equal(block().held_by, 'left');
  q.set('left', ik('left', down(0.3, 0.1, 0.15)));
  step();
  const [hx, hy, hz] = block().pose;
  q.set('right', ik('right', side(hx!, hy!, hz!)));
  step();
  grip('right', 0);
  assert.equal(block().held_by, 'right', 'handed over');
  assert.equal(world.gripStop('left'), null, 'the left fingers no longer hold it');
  assert.deepEqual(world.truth().predicates, { left_holds: false, right_holds: true, on_tray: false });
  grip('left', 1);
  assert.equal(block().held_by, 'right', 'opening the left gripper drops nothing');
  // Over the tray, pointing down now: the block turns with the hand.
  q.set('right', ik('right', down(0.32, -0.24, 0.12)));
  step();
  grip('right', 1);
  const end = block();
  assert.equal(end.held_by, null);
  // Straight down onto the tray's floor: its bottom 0 + floor + half the block.
  assert.ok(Math.abs(end.pose[0]! - 0.32) < 1e-3 && Math.abs(end.pose[1]! + 0.24) < 1e-3, `${end.pose}`);
  assert.equal(end.pose[2], CONTAINER_FLOOR + 0.02);
  assert.deepEqual(world.truth().predicates, { left_holds: false, right_holds: false, on_tray: true });
  assert.deepEqual(
    events.filter((e) => e.kind !== 'collision').map((e) => `${e.kind} ${e.arm}`),
    ['grasp left', 'grasp right', 'release right'],
  );
  assert.equal(world.truth().collisions.count, 0, JSON.stringify(world.truth().collisions));
});
