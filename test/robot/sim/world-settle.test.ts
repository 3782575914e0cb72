import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import type { SceneObject, Shape } from '../../../robot/sim/scene/types.js';
import { dropPose, noisyPoses, settleAll, surfaceBelow, type Placed } from '../../../robot/sim/scene/world-settle.js';
import { footprintContains, halfHeight } from '../../../robot/sim/scene/geometry.js';
import { isContainer } from '../../../robot/sim/scene/scene-layout.js';
import { CONTAINER_FLOOR, uprightPose, yawOf } from '../../../robot/sim/scene/world-shapes.js';
import { SimWorld } from '../../../robot/sim/scene/world.js';
import { loadScene } from '../../../robot/sim/scene/scene-config.js';
import { loadArms } from '../../../robot/description/loader.js';
import { startStates } from '../../../robot/sim/render/scene-start.js';
import { object, pickScene, yamSetup } from './world-fixtures.js';

const TABLE = 0.75;
const GROUND = { table: TABLE, obstacles: [] };
const cube = (s: number): Shape => ({ kind: 'box', size: [s, s, s] });

test('objects settle straight down: on the table, stacked on a block, on a container floor', () => {
  const objs = [
    object('a', cube(0.04), [0, 0, 2]),
    object('b', { kind: 'cylinder', radius: 0.02, height: 0.06 }, [0.01, 0, 3]),
    object('bowl', { kind: 'cylinder', radius: 0.08, height: 0.05 }, [0.5, 0, 1], ['container']),
    object('ball', { kind: 'sphere', radius: 0.015 }, [0.52, 0.01, 1.5]),
    object('c', cube(0.02), [0.2, 0.2, TABLE]),
  ];
  const z = settleAll(
    objs,
    objs.map((o) => o.pose),
    GROUND,
  ).map((p) => p[11]);
  // a on the table; b's centre (0.01, 0) is over a: a's top 0.79 + 0.03; the ball lands on the bowl's floor.
  assert.deepEqual(z, [
    TABLE + 0.02,
    TABLE + 0.04 + 0.03,
    TABLE + 0.025,
    TABLE + CONTAINER_FLOOR + 0.015,
    TABLE + 0.01,
  ]);
});

test('settling keeps the heading, drops tilt and sorts by height: a block declared under another ends below it', () => {
  const top = object('top', cube(0.04), [0, 0, 0.5]);
  const tilted = uprightPose(0, 0, 0.1, 0.3);
  // A 0.2 rad roll on top of the 0.3 rad heading.
  const c = Math.cos(0.2),
    s = Math.sin(0.2);
  const roll = new Float64Array([1, 0, 0, 0, 0, c, -s, 0, 0, s, c, 0]);
  const pose = new Float64Array(12);
  for (let i = 0; i < 3; i++)
    for (let j = 0; j < 3; j++)
      pose[4 * i + j] = [0, 1, 2].reduce((acc, k) => acc + tilted[4 * i + k]! * roll[4 * k + j]!, 0);
  pose[11] = 0.1;
  const bottom = { ...object('bottom', cube(0.04), [0, 0, 0]), pose };
  const out = settleAll([top, bottom], [top.pose, bottom.pose], { table: 0, obstacles: [] });
  assert.equal(out[1]![11], 0.02);
  assert.ok(Math.abs(yawOf(out[1]!) - 0.3) < 1e-12);
  assert.ok(Math.abs(out[1]![10]! - 1) < 1e-12, 'upright');
  assert.equal(out[0]![11], 0.06);
});

test('seeded pose noise is deterministic for a seed, different across seeds, and within its bounds', () => {
  const objs = [0, 1, 2].map((i) => ({
    ...object(`o${i}`, cube(0.04), [0.1 * i, 0, 0]),
    noise: { xy: 0.02, yaw: 0.5 },
  }));
  const run = (seed: number) => new SimWorld(pickScene({ objects: objs }), yamSetup(), seed).truth().objects;
  assert.deepEqual(run(7), run(7));
  assert.notDeepEqual(run(7), run(8));
  for (let seed = 0; seed < 50; seed++) {
    noisyPoses(objs, seed).forEach((p, i) => {
      assert.ok(Math.abs(p[3]! - 0.1 * i) <= 0.02 && Math.abs(p[7]!) <= 0.02, `seed ${seed} o${i} xy`);
      assert.ok(Math.abs(yawOf(p)) <= 0.5, `seed ${seed} o${i} yaw`);
    });
  }
  // No noise: exactly the declared pose.
  const still = noisyPoses([object('s', cube(0.04), [0.3, 0.1, 0])], 99)[0]!;
  assert.deepEqual([still[3], still[7], yawOf(still)], [0.3, 0.1, 0]);
});

/** A random upright object near the origin. */
function randomObject(rng: Prng, i: number): SceneObject {
  const k = rng.int(3);
  const shape: Shape =
    k === 0
      ? { kind: 'box', size: [rng.uniform(0.02, 0.1), rng.uniform(0.02, 0.1), rng.uniform(0.02, 0.1)] }
      : k === 1
        ? { kind: 'cylinder', radius: rng.uniform(0.01, 0.08), height: rng.uniform(0.02, 0.1) }
        : { kind: 'sphere', radius: rng.uniform(0.01, 0.05) };
  const o = object(`o${i}`, shape, [rng.uniform(-0.1, 0.1), rng.uniform(-0.1, 0.1), rng.uniform(0, 0.3)]);
  o.pose = uprightPose(o.pose[3]!, o.pose[7]!, o.pose[11]!, rng.uniform(-Math.PI, Math.PI));
  if (k === 1 && rng.next() < 0.3) o.tags = ['container'];
  return o;
}

test('property: a released object always ends resting on a surface under its centre, the highest one below it', () => {
  const rng = new Prng(20261203);
  for (let c = 0; c < 300; c++) {
    const n = 1 + rng.int(5);
    const objs = Array.from({ length: n }, (_, i) => randomObject(rng, i));
    const poses = settleAll(
      objs,
      objs.map((o) => o.pose),
      GROUND,
    );
    const others: Placed[] = objs.map((o, i) => ({ object: o, pose: poses[i]! }));
    const held = randomObject(rng, n);
    const lift = TABLE + halfHeight(held.shape, held.pose) + rng.uniform(0, 0.5);
    const from = uprightPose(rng.uniform(-0.1, 0.1), rng.uniform(-0.1, 0.1), lift, rng.uniform(-Math.PI, Math.PI));
    const end = dropPose(held, from, GROUND, others);
    const input = JSON.stringify({
      case: c,
      objs: others.map((p) => [p.object.shape, p.object.tags, [...p.pose]]),
      held: held.shape,
      from: [...from],
    });
    const bottom = end[11]! - halfHeight(held.shape, from);
    const surfaces = [
      TABLE,
      ...others
        .filter((p) => footprintContains(p.object.shape, p.pose, end[3]!, end[7]!))
        .map((p) =>
          isContainer(p.object)
            ? p.pose[11]! - halfHeight(p.object.shape, p.pose) + CONTAINER_FLOOR
            : p.pose[11]! + halfHeight(p.object.shape, p.pose),
        ),
    ];
    assert.ok(
      surfaces.some((s) => Math.abs(s - bottom) < 1e-12),
      `not resting on a surface: ${input}`,
    );
    assert.ok(bottom <= from[11]! - halfHeight(held.shape, from) + 0.005 + 1e-12, `moved up: ${input}`);
    assert.deepEqual([end[3], end[7]], [from[3], from[7]], `moved sideways: ${input}`);
    assert.equal(
      bottom,
      surfaceBelow(end[3]!, end[7]!, from[11]! - halfHeight(held.shape, from) + 0.005, GROUND, others),
      input,
    );
  }
});

test('an obstacle is a surface too: a block over a shelf rests on its top', () => {
  const shelf = {
    name: 'shelf',
    shape: 'box' as const,
    pose: uprightPose(0, 0, TABLE + 0.1, 0),
    half: [0.1, 0.1, 0.01] as [number, number, number],
  };
  const z = settleAll([object('a', cube(0.04), [0.05, 0, TABLE + 0.3])], [uprightPose(0.05, 0, TABLE + 0.3, 0)], {
    table: TABLE,
    obstacles: [shelf],
  });
  assert.equal(z[0]![11], TABLE + 0.11 + 0.02);
});

test('the shipped scenes start at rest, without a collision at the home pose, rest heights as loaded', () => {
  for (const name of ['yam-pick-place', 'dual-yam-handover', 'ur5e-stack']) {
    const s = loadScene(name);
    assert.ok(s.ok, name);
    const arms = loadArms(s.value.robot);
    assert.ok(arms.ok, name);
    const world = new SimWorld(s.value, arms.value.setup, 1);
    const homes = new Map(arms.value.setup.arms.map((a) => [a.name, a.robot.home]));
    const open = new Map(arms.value.setup.arms.map((a) => [a.name, 1]));
    assert.deepEqual(world.update(0, homes, open), [], name);
    assert.deepEqual(
      world.scene.objects.map((o) => o.restZ),
      s.value.objects.map((o) => o.restZ),
      name,
    );
    assert.ok(
      Object.values(world.truth().predicates).every((v) => !v),
      `${name}: no success at start`,
    );
  }
});

test("the still-image start (sim render's startStates) is the simulator's start for the shipped scenes and seeds", () => {
  for (const name of ['yam-pick-place', 'dual-yam-handover', 'ur5e-stack']) {
    const s = loadScene(name);
    assert.ok(s.ok, name);
    const arms = loadArms(s.value.robot);
    assert.ok(arms.ok, name);
    for (const seed of [1, 5, 99]) {
      const sim = new SimWorld(s.value, arms.value.setup, seed).objects;
      startStates(s.value, seed).forEach((r, i) =>
        r.pose.forEach((v, k) =>
          assert.ok(Math.abs(v - sim[i]!.pose[k]!) < 1e-12, `${name} seed ${seed} ${r.name}[${k}]`),
        ),
      );
    }
  }
});
