import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONTACT_SLACK } from '../../../robot/sim/scene/world-collide.js';
import { identity } from '../../../robot/math/transform.js';
import { Prng } from '../../../robot/common/prng.js';
import { objectDistance, uprightPose } from '../../../robot/sim/scene/world-shapes.js';
import { BLOCK, down, object, pickScene, YamCell } from './world-fixtures.js';

/** The yam gripper capsule's radius (configs/robots/yam.yaml). */
const GRIPPER_R = 0.04;

function faults(cell: YamCell): string[] {
  return cell.h
    .events()
    .filter((e) => e.event === 'fault')
    .map((e) => `${e.reason}: ${e.detail}`);
}

test('a trajectory through a block stops the arm with a collision fault; it never gets past the block', () => {
  const cell = new YamCell();
  cell.h.run(0.1);
  cell.jointMoveTo(down(0.2, 0, 0.1));
  cell.moveTo(down(0.2, 0, 0.035));
  assert.deepEqual(faults(cell), []);
  const from = cell.h.t;
  const id = cell.moveTo(down(0.4, 0, 0.035), 1);
  const f = faults(cell);
  assert.equal(f.length, 1, f.join('; '));
  assert.match(f[0]!, /^collision: link gripper hit red_block \(\d+\.\d mm deep\)$/);
  assert.deepEqual(cell.h.eventNames(id), ['accepted', 'started', 'aborted:collision']);
  const s = cell.h.lastState().arms.arm!;
  assert.equal(s.mode, 'fault');
  assert.deepEqual(s.faults, ['collision']);
  // The gripper capsule's lower end (1.47 cm above the TCP, at z 0.0497) meets the block's top
  // edge (x 0.28, z 0.04) at TCP x = 0.28 − √(r² − 0.0097²); it stops there (contact slack, one 1 ms step).
  const face = 0.3 - BLOCK / 2 - Math.sqrt(GRIPPER_R ** 2 - (0.035 + 0.1347 - 0.12 - BLOCK) ** 2);
  for (const st of cell.h.states().filter((x) => x.time >= from)) {
    const x = cell.tcp(st.arms.arm!.q)[3]!;
    assert.ok(x <= face + CONTACT_SLACK + 0.001, `t=${st.time}: TCP x ${x} passed the block's face ${face}`);
  }
  const stopped = cell.tcp(cell.q())[3]!;
  assert.ok(stopped >= face - 0.002, `stopped at TCP x ${stopped}, short of the block's face ${face}`);
  assert.equal(cell.world.truth().objects[0]!.pose[0], 0.3, 'the block did not move');
  assert.equal(cell.world.truth().collisions.count, 1);
  assert.equal(cell.world.truth().collisions.last!.object, 'red_block');
  // Latched: refused until a stop; then the arm may back away without a new fault.
  const before = cell.h.events().length;
  cell.moveTo(down(0.2, 0, 0.035));
  assert.ok(
    cell.h
      .events()
      .slice(before)
      .some((e) => e.event === 'rejected' && e.reason === 'fault'),
  );
  cell.h.send('stop', { v: 1, id: 's1', arm: 'arm', time: 0 });
  cell.h.run(cell.h.t + 0.1);
  const back = cell.moveTo(down(0.2, 0, 0.035));
  assert.deepEqual(cell.h.eventNames(back), ['accepted', 'started', 'finished']);
  assert.equal(faults(cell).length, 1);
});

test('the table top: a capsule that dips below it faults', () => {
  const cell = new YamCell(pickScene({ objects: [] }));
  cell.h.run(0.1);
  cell.jointMoveTo(down(0.3, 0, 0.1));
  const id = cell.moveTo(down(0.3, 0, 0), 1);
  assert.deepEqual(cell.h.eventNames(id), ['accepted', 'started', 'aborted:collision']);
  assert.match(faults(cell)[0]!, /^collision: link gripper hit the table/);
  // The capsule reaches 2.53 cm past the TCP (b at 0.12 of 0.1347 m, radius 0.04).
  const z = cell.tcp(cell.q())[11]!;
  assert.ok(z >= 0.0253 - CONTACT_SLACK - 0.001, `TCP at ${z}`);
});

test('a scene obstacle stops the arm', () => {
  const wall = {
    name: 'wall',
    shape: 'box' as const,
    pose: identity(),
    half: [0.01, 0.2, 0.2] as [number, number, number],
    color: [0, 0, 0] as [number, number, number],
  };
  wall.pose[3] = 0.45;
  const cell = new YamCell(pickScene({ objects: [], obstacles: [wall] }));
  cell.h.run(0.1);
  cell.jointMoveTo(down(0.3, 0, 0.1));
  cell.moveTo(down(0.45, 0, 0.1), 1);
  assert.match(faults(cell)[0]!, /^collision: link gripper hit wall/);
});

test('a container is hollow: the gripper reaches into the bowl, but not through its wall', () => {
  const bowl = object('bowl', { kind: 'cylinder', radius: 0.07, height: 0.05 }, [0.3, 0.15, 0], ['container']);
  const cell = new YamCell(pickScene({ objects: [bowl] }));
  cell.h.run(0.1);
  cell.jointMoveTo(down(0.3, 0.15, 0.15));
  // Gripper capsule bottom 2.53 cm below the TCP: 0.5 cm above the bowl's floor top (0.5 cm).
  cell.moveTo(down(0.3, 0.15, 0.036));
  assert.deepEqual(faults(cell), []);
  cell.moveTo(down(0.3, 0.15, 0.15));
  cell.jointMoveTo(down(0.3, 0.15 - 0.2, 0.04));
  cell.moveTo(down(0.3, 0.15, 0.04), 1);
  assert.match(faults(cell)[0]!, /^collision: link gripper hit bowl/);
  assert.ok(cell.tcp(cell.q())[7]! < 0.15 - 0.07 - 0.03, 'stopped outside the wall');
});

test('a capsule touching a container floor or wall: the distance is how far it reaches into the material', () => {
  // Bowl of radius 7 cm and height 5 cm centred at z = 2.5 cm: floor top at 0.5 cm, wall 5 mm.
  const shape = { kind: 'cylinder', radius: 0.07, height: 0.05 } as const;
  const pose = uprightPose(0.3, 0.15, 0.025, 0);
  const bowl = { shape, tags: ['container'] };
  const r = 0.01;
  const vertical = (bottom: number) => Float64Array.from([0.3, 0.15, bottom + r, 0.3, 0.15, 0.1]);
  assert.equal(objectDistance(vertical(0.0055), r, bowl, pose), 0, 'wholly in the cavity');
  near(objectDistance(vertical(0.0045), r, bowl, pose), -0.0005, 1e-9, '0.5 mm into the floor');
  near(objectDistance(vertical(0.002), r, bowl, pose), -0.003, 1e-9, '3 mm into the floor');
  // Horizontal at mid-height, its end 2 mm past the wall's inner face (6.5 cm from the axis).
  const side = Float64Array.from([0.3, 0.15, 0.03, 0.3 + 0.065 + 0.002 - r, 0.15, 0.03]);
  near(objectDistance(side, r, bowl, pose), -0.002, 1e-9, '2 mm into the wall');
  // Never deeper than the solid cylinder, never clear where the solid one overlaps and the capsule
  // leaves the cavity (seeded property).
  const rng = new Prng(7);
  for (let i = 0; i < 2000; i++) {
    const p = () => [0.3 + (rng.next() - 0.5) * 0.2, 0.15 + (rng.next() - 0.5) * 0.2, rng.next() * 0.08] as const;
    const e = Float64Array.from([...p(), ...p()]);
    const rr = rng.next() * 0.02;
    const solid = objectDistance(e, rr, { shape, tags: [] }, pose);
    const d = objectDistance(e, rr, bowl, pose);
    const input = `capsule ${[...e].map((v) => v.toFixed(4))} r ${rr.toFixed(4)}`;
    if (solid >= 0) assert.equal(d, solid, input);
    else assert.ok(d >= solid && d <= 0, `${input}: ${d} against the solid ${solid}`);
  }
});

function near(got: number, want: number, tol: number, what: string): void {
  assert.ok(Math.abs(got - want) <= tol, `${what}: ${got} m, expected ${want} m`);
}
