// A held object in the simulated workcell collides like a link: carried into an object, an
// obstacle or the table it stops the arm with a collision fault naming it (`held:<name>`);
// set down on top of something it rests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BLOCK, down, object, pickScene, YamCell } from './world-fixtures.js';

function faults(cell: YamCell): string[] {
  return cell.h
    .events()
    .filter((e) => e.event === 'fault')
    .map((e) => `${e.reason}: ${e.detail}`);
}

/** Grasps the block at (0.3, 0) and lifts it to TCP height z (its exact bottom at z − 0.035). */
function holdAt(cell: YamCell, z: number): void {
  cell.h.run(0.1);
  cell.jointMoveTo(down(0.3, 0, 0.15));
  cell.moveTo(down(0.3, 0, 0.035));
  assert.deepEqual(cell.grip(0), ['accepted', 'started', 'finished:grasped']);
  cell.moveTo(down(0.3, 0, z));
  assert.deepEqual(faults(cell), []);
}

// A 12 mm tile: the gripper's capsule (lowest 2 cm above a TCP at 4.5 cm) passes over it, the held block not.
const tile = object('tile', { kind: 'box', size: [0.06, 0.06, 0.012] }, [0.3, -0.12, 0.1]);

test('a held block carried into a low tile stops the arm: collision held:red_block hit tile; the tile stays', () => {
  const cell = new YamCell(pickScene({ objects: [...pickScene().objects, tile] }));
  holdAt(cell, 0.045);
  const id = cell.moveTo(down(0.3, -0.12, 0.045), 1);
  const f = faults(cell);
  assert.equal(f.length, 1, f.join('; '));
  assert.match(f[0]!, /^collision: link held:red_block hit tile \(\d+\.\d mm deep\)$/);
  assert.deepEqual(cell.h.eventNames(id), ['accepted', 'started', 'aborted:collision']);
  const truth = cell.world.truth();
  assert.equal(truth.collisions.last!.link, 'held:red_block');
  // Stopped before its bounding capsule (2.83 cm about the block's axis) got past the tile's near edge.
  const held = truth.objects.find((o) => o.name === 'red_block')!;
  assert.ok(held.pose[1]! > -0.12 + 0.03 - 0.001, `held block at y ${held.pose[1]}`);
  assert.deepEqual(truth.objects.find((o) => o.name === 'tile')!.pose.slice(0, 3), [0.3, -0.12, 0.006]);
});

test('a held block pushed 5 mm into the table stops the arm (collision with table); resting on it does not', () => {
  const cell = new YamCell();
  holdAt(cell, 0.05);
  cell.moveTo(down(0.3, 0, 0.035));
  assert.deepEqual(faults(cell), [], 'its bottom back on the table: resting contact');
  cell.moveTo(down(0.3, 0, 0.03), 1);
  const f = faults(cell);
  assert.equal(f.length, 1, f.join('; '));
  assert.match(f[0]!, /^collision: link held:red_block hit the table \(\d\.\d mm deep\)$/);
});

test('a held block set down on top of another block rests there: no collision', () => {
  const blue = object('blue_block', { kind: 'box', size: [BLOCK, BLOCK, BLOCK] }, [0.3, -0.12, 0.1]);
  const cell = new YamCell(pickScene({ objects: [...pickScene().objects, blue] }));
  holdAt(cell, 0.15);
  cell.moveTo(down(0.3, -0.12, 0.15));
  // The held block's bottom exactly on the blue block's top (z 0.04): TCP at 0.04 + 0.035.
  cell.moveTo(down(0.3, -0.12, 0.075));
  assert.deepEqual(faults(cell), []);
  assert.deepEqual(cell.grip(1), ['accepted', 'started', 'finished']);
  assert.equal(cell.world.truth().collisions.count, 0);
  const red = cell.world.truth().objects.find((o) => o.name === 'red_block')!;
  assert.ok(Math.abs(red.pose[2]! - (BLOCK + BLOCK / 2)) < 1e-9, `on top: z ${red.pose[2]}`);
});
