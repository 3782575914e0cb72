import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePredicate } from '../../../robot/sim/scene/predicate-text.js';
import type { NamedPredicate } from '../../../robot/sim/scene/types.js';
import { CONTAINER_FLOOR } from '../../../robot/sim/scene/world-shapes.js';
import { BLOCK, down, pickScene, YamCell } from './world-fixtures.js';

function predicates(texts: Record<string, string>): NamedPredicate[] {
  return Object.entries(texts).map(([name, text]) => {
    const p = parsePredicate(text);
    assert.ok(p.ok);
    return { name, text, predicate: p.predicate };
  });
}

const near = (a: number, b: number, tol: number, what: string) =>
  assert.ok(Math.abs(a - b) <= tol, `${what}: ${a} is not within ${tol} of ${b}`);

function pose(cell: YamCell, name: string): number[] {
  return cell.world.truth().objects.find((o) => o.name === name)!.pose;
}

test('grasp and release: over the block, close, lift, over the bowl, open — the block lands on the bowl floor', () => {
  const cell = new YamCell(
    pickScene({
      predicates: predicates({
        in_bowl: 'inside(red_block, bowl)',
        up: 'lifted(red_block, 0.05)',
        held: 'held_by(red_block, arm)',
      }),
    }),
  );
  cell.h.run(0.1);
  // Settled at start: the block on the table, the bowl too.
  near(pose(cell, 'red_block')[2]!, BLOCK / 2, 1e-12, 'block resting height');
  near(pose(cell, 'bowl')[2]!, 0.025, 1e-12, 'bowl resting height');
  assert.deepEqual(cell.world.truth().predicates, { in_bowl: false, up: false, held: false });
  // TCP 1.5 cm above the block's centre: the fingers (5 cm deep) reach 1 cm down its sides.
  cell.jointMoveTo(down(0.3, 0, 0.15));
  cell.moveTo(down(0.3, 0, 0.035));
  assert.deepEqual(cell.h.lastState().arms.arm!.faults, [], 'no collision on the way down');
  // Ends where the fingers meet the block, as a real gripper reports a grasp.
  assert.deepEqual(cell.grip(0), ['accepted', 'started', 'finished:grasped']);
  const truth = cell.world.truth();
  assert.equal(truth.objects[0]!.held_by, 'arm');
  // The fingers stop on the block: 4 cm of the 9.5 cm stroke.
  near(cell.gripper(), BLOCK / 0.095, 1e-9, 'gripper position on the block');
  cell.moveTo(down(0.3, 0, 0.15));
  // Carried rigidly: still 1.5 cm below the TCP.
  const lifted = pose(cell, 'red_block');
  const tcp = cell.tcp(cell.q());
  near(lifted[2]!, tcp[11]! - 0.015, 2e-4, 'held block height');
  near(lifted[0]!, tcp[3]!, 2e-4, 'held block x');
  // Its bottom 0.135 − 0.02 = 0.115 m up, from a rest height of 0.
  assert.deepEqual(cell.world.truth().predicates, { in_bowl: false, up: true, held: true });
  cell.moveTo(down(0.3, 0.15, 0.15));
  assert.deepEqual(cell.grip(1), ['accepted', 'started', 'finished'], 'opening ends without grasped');
  const end = cell.world.truth().objects[0]!;
  assert.equal(end.held_by, null);
  // Straight down onto the bowl's floor: bottom + floor + half the block.
  near(end.pose[0]!, 0.3, 1e-3, 'block x');
  near(end.pose[1]!, 0.15, 1e-3, 'block y');
  near(end.pose[2]!, 0 + CONTAINER_FLOOR + BLOCK / 2, 1e-12, 'block z');
  // Upright, the heading kept (the block was grasped square to the fingers).
  assert.ok(Math.abs(Math.abs(end.pose[6]!) - 1) < 1e-6, `upright quaternion ${end.pose.slice(3)}`);
  assert.equal(cell.world.truth().collisions.count, 0);
  assert.deepEqual(cell.world.truth().predicates, { in_bowl: true, up: false, held: false });
});

test('closing beside a block grasps nothing: the fingers close fully', () => {
  const cell = new YamCell();
  cell.h.run(0.1);
  cell.jointMoveTo(down(0.3, -0.08, 0.15));
  cell.moveTo(down(0.3, -0.08, 0.035));
  assert.deepEqual(cell.grip(0), ['accepted', 'started', 'finished']);
  assert.equal(cell.gripper(), 0);
  assert.equal(cell.world.truth().objects[0]!.held_by, null);
  cell.moveTo(down(0.3, -0.08, 0.15));
  near(pose(cell, 'red_block')[2]!, BLOCK / 2, 1e-12, 'the block stays on the table');
});

test('a gripper commanded to close further while holding stays on the object; opening releases it', () => {
  const cell = new YamCell();
  cell.h.run(0.1);
  cell.jointMoveTo(down(0.3, 0, 0.15));
  cell.moveTo(down(0.3, 0, 0.035));
  cell.grip(0);
  assert.deepEqual(cell.grip(0.2), ['accepted', 'started', 'finished:grasped']);
  near(cell.gripper(), BLOCK / 0.095, 1e-9, 'still on the block');
  assert.equal(cell.world.truth().objects[0]!.held_by, 'arm');
  cell.grip(1);
  assert.equal(cell.world.truth().objects[0]!.held_by, null);
  assert.equal(cell.gripper(), 1);
});
