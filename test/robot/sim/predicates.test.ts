import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import { fromXyzRpy } from '../../../robot/math/transform.js';
import { evaluateAll, evaluatePredicate } from '../../../robot/sim/scene/predicates.js';
import { loadScene } from '../../../robot/sim/scene/scene-config.js';
import type { ObjectState, Predicate, SceneDescription } from '../../../robot/sim/scene/types.js';
import { block, bowl, validScene } from './scene-fixtures.js';

const scene = (objects: object[]): SceneDescription => validScene({ objects }, 's');
const s = scene([block('red', [0.3, 0, 0.02]), block('green', [0.5, 0, 0.02]), bowl]);

/** States: every object at its scene pose, with `moved` placed at xyz/rpy (and held by `heldBy`). */
function at(moved: Record<string, { xyz: number[]; rpy?: number[]; heldBy?: string }>): ObjectState[] {
  return s.objects.map((o) => {
    const m = moved[o.name];
    return {
      name: o.name,
      pose: m ? fromXyzRpy(m.xyz, m.rpy ?? [0, 0, 0]) : o.pose,
      heldBy: m?.heldBy ?? null,
    };
  });
}

const holds = (p: Predicate, cases: [moved: Parameters<typeof at>[0], expected: boolean][]) => {
  for (const [moved, expected] of cases)
    assert.equal(evaluatePredicate(s, at(moved), p), expected, `${JSON.stringify(p)} with ${JSON.stringify(moved)}`);
};

test('inside: centre within the container radius, bottom between its bottom and its top', () => {
  holds({ kind: 'inside', object: 'red', container: 'bowl' }, [
    [{}, false],
    [{ red: { xyz: [0.3, -0.2, 0.02] } }, true],
    // 0.06 m from the axis (radius 0.07): inside; 0.08 m: not.
    [{ red: { xyz: [0.36, -0.2, 0.02] } }, true],
    [{ red: { xyz: [0.38, -0.2, 0.02] } }, false],
    // Bottom exactly at the rim (z = 0.05 + 0.02): still inside; 0.1 mm higher: out.
    [{ red: { xyz: [0.3, -0.2, 0.07] } }, true],
    [{ red: { xyz: [0.3, -0.2, 0.0701] } }, false],
    // Sunk 0.5 mm below the bowl's bottom: not inside.
    [{ red: { xyz: [0.3, -0.2, 0.0195] } }, false],
    // The bowl moved under the block.
    [{ red: { xyz: [0.6, 0.3, 0.02] }, bowl: { xyz: [0.6, 0.3, 0.025] } }, true],
  ]);
});

test('on_top: bottom within 5 mm of the top below, centre over its footprint (rotation counts)', () => {
  holds({ kind: 'on_top', object: 'green', below: 'red' }, [
    [{}, false],
    [{ green: { xyz: [0.31, 0.01, 0.06] } }, true],
    [{ green: { xyz: [0.31, 0.01, 0.0649] } }, true],
    [{ green: { xyz: [0.31, 0.01, 0.0651] } }, false],
    [{ green: { xyz: [0.31, 0.01, 0.0351] } }, false],
    // 0.025 m off-centre along x: outside the 0.02 m half size…
    [{ green: { xyz: [0.325, 0, 0.06] } }, false],
    // …but inside once the block below is turned 45° (|local x| = |local y| = 0.0177 m).
    [{ green: { xyz: [0.325, 0, 0.06] }, red: { xyz: [0.3, 0, 0.02], rpy: [0, 0, Math.PI / 4] } }, true],
    // Red on its side is still 0.04 m tall (a cube), so green's bottom is at its top.
    [{ green: { xyz: [0.3, 0, 0.06] }, red: { xyz: [0.3, 0, 0.02], rpy: [Math.PI / 2, 0, 0] } }, true],
  ]);
});

test('near: centre within the tolerance of the point (3-D distance)', () => {
  holds({ kind: 'near', object: 'red', xyz: [0.31, 0.01, 0.02], tolerance: 0.015 }, [[{}, true]]);
  holds({ kind: 'near', object: 'red', xyz: [0.31, 0.01, 0.02], tolerance: 0.014 }, [[{}, false]]);
  holds({ kind: 'near', object: 'red', xyz: [0.3, 0, 0.049], tolerance: 0.03 }, [[{}, true]]);
});

test('lifted: bottom at least h above where the object rested at the start', () => {
  holds({ kind: 'lifted', object: 'red', height: 0.05 }, [
    [{}, false],
    [{ red: { xyz: [0.3, 0, 0.07] } }, true],
    [{ red: { xyz: [0.3, 0, 0.069] } }, false],
    [{ red: { xyz: [0.1, 0.2, 0.2], heldBy: 'arm' } }, true],
  ]);
  // A block stacked at the start rests on the one below: lifted counts from its top.
  const stacked = scene([block('a', [0.3, 0, 0.02]), block('b', [0.3, 0, 0.1])]);
  assert.deepEqual(
    stacked.objects.map((o) => o.restZ),
    [0, 0.04],
  );
  const b = (z: number): ObjectState[] => [
    { name: 'a', pose: stacked.objects[0].pose, heldBy: null },
    { name: 'b', pose: fromXyzRpy([0.3, 0, z], [0, 0, 0]), heldBy: null },
  ];
  assert.equal(evaluatePredicate(stacked, b(0.06), { kind: 'lifted', object: 'b', height: 0.01 }), false);
  assert.equal(evaluatePredicate(stacked, b(0.07), { kind: 'lifted', object: 'b', height: 0.01 }), true);
});

test('held_by: the state names the arm; an object without a state makes every predicate false', () => {
  holds({ kind: 'held_by', object: 'red', arm: 'arm' }, [
    [{}, false],
    [{ red: { xyz: [0.3, 0, 0.2], heldBy: 'arm' } }, true],
    [{ red: { xyz: [0.3, 0, 0.2], heldBy: 'left' } }, false],
  ]);
  const none: ObjectState[] = [];
  assert.equal(evaluatePredicate(s, none, { kind: 'near', object: 'red', xyz: [0.3, 0, 0.02], tolerance: 1 }), false);
});

test('evaluateAll: the yam-pick-place predicates at the start and with the red block in the bowl', () => {
  const r = loadScene('yam-pick-place');
  assert.ok(r.ok);
  const start: ObjectState[] = r.value.objects.map((o) => ({ name: o.name, pose: o.pose, heldBy: null }));
  assert.deepEqual(evaluateAll(r.value, start), { red_in_bowl: false, red_lifted: false, red_held: false });
  const bowl = r.value.objects.find((o) => o.name === 'bowl')!.pose;
  const done = start.map((st) =>
    st.name === 'red_block' ? { ...st, pose: fromXyzRpy([bowl[3], bowl[7], 0.02], [0, 0, 0.3]) } : st,
  );
  assert.deepEqual(evaluateAll(r.value, done), { red_in_bowl: true, red_lifted: false, red_held: false });
});

test('inside, randomised (seed 20261203): a point in the footprint is inside, one beyond it is not', () => {
  const rng = new Prng(20261203);
  for (let i = 0; i < 500; i++) {
    const cylinder = rng.next() < 0.5;
    const [sx, sy, h] = [rng.uniform(0.05, 0.3), rng.uniform(0.05, 0.3), rng.uniform(0.02, 0.1)];
    const yaw = rng.uniform(-Math.PI, Math.PI);
    const [cx, cy] = [rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5)];
    const container = cylinder
      ? {
          name: 'c',
          shape: 'cylinder',
          radius_m: sx / 2,
          height_m: h,
          mass_kg: 1,
          xyz: [cx, cy, h / 2],
          rpy: [0, 0, yaw],
          tags: ['container'],
        }
      : {
          name: 'c',
          shape: 'box',
          size_m: [sx, sy, h],
          mass_kg: 1,
          xyz: [cx, cy, h / 2],
          rpy: [0, 0, yaw],
          tags: ['container'],
        };
    const sc = scene([container, { name: 'p', shape: 'sphere', radius_m: 0.005, mass_kg: 0.01, xyz: [2, 2, 0.005] }]);
    // A point in the container's own frame: strictly inside (scale < 1) or strictly beyond (> 1).
    const inside = rng.next() < 0.5;
    const scale = inside ? rng.uniform(0, 0.999) : rng.uniform(1.001, 2);
    const angle = rng.uniform(-Math.PI, Math.PI);
    const [lx, ly] = cylinder
      ? [(scale * sx * Math.cos(angle)) / 2, (scale * sx * Math.sin(angle)) / 2]
      : rng.next() < 0.5
        ? [(scale * sx) / 2, rng.uniform(-sy / 2, sy / 2) * (inside ? 1 : rng.uniform(0, 1))]
        : [rng.uniform(-sx / 2, sx / 2) * (inside ? 1 : rng.uniform(0, 1)), (scale * sy) / 2];
    const x = cx + lx * Math.cos(yaw) - ly * Math.sin(yaw);
    const y = cy + lx * Math.sin(yaw) + ly * Math.cos(yaw);
    const z = 0.005 + rng.uniform(0, h);
    const states: ObjectState[] = [
      { name: 'c', pose: sc.objects[0].pose, heldBy: null },
      { name: 'p', pose: fromXyzRpy([x, y, z], [0, 0, 0]), heldBy: null },
    ];
    const got = evaluatePredicate(sc, states, { kind: 'inside', object: 'p', container: 'c' });
    assert.equal(got, inside, `case ${i}: ${JSON.stringify({ container, point: [x, y, z], local: [lx, ly], scale })}`);
  }
});
