import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromXyzRpy, transformPoint } from '../../../robot/math/transform.js';
import {
  bottomZ,
  footprint,
  footprintContains,
  footprintsOverlap,
  halfHeight,
  obstacleSolid,
  solidOf,
  solidsOverlap,
  topZ,
} from '../../../robot/sim/scene/geometry.js';
import { lookAt } from '../../../robot/sim/scene/scene-cameras.js';
import type { Shape } from '../../../robot/sim/scene/types.js';

const near = (a: number, b: number, msg?: string) => assert.ok(Math.abs(a - b) < 1e-12, msg ?? `${a} ≉ ${b}`);
const H = Math.PI / 2;
const box: Shape = { kind: 'box', size: [0.04, 0.06, 0.02] };
const can: Shape = { kind: 'cylinder', radius: 0.03, height: 0.1 };

test('halfHeight, topZ, bottomZ: boxes and cylinders standing, on their side and tilted; spheres', () => {
  near(halfHeight(box, fromXyzRpy([0, 0, 0], [0, 0, 1.2])), 0.01);
  near(halfHeight(box, fromXyzRpy([0, 0, 0], [H, 0, 0])), 0.03);
  near(halfHeight(box, fromXyzRpy([0, 0, 0], [0, H, 0])), 0.02);
  near(halfHeight(can, fromXyzRpy([0, 0, 0], [0, 0, 0])), 0.05);
  near(halfHeight(can, fromXyzRpy([0, 0, 0], [H, 0, 0])), 0.03);
  // Tilted 45°: half the axis projected (0.05·cos45°) plus the rim (0.03·sin45°).
  near(halfHeight(can, fromXyzRpy([0, 0, 0], [Math.PI / 4, 0, 0])), (0.05 + 0.03) * Math.SQRT1_2);
  const pose = fromXyzRpy([0.1, 0.2, 0.3], [0, 0, 0]);
  near(topZ({ kind: 'sphere', radius: 0.02 }, pose), 0.32);
  near(bottomZ(can, pose), 0.25);
});

test('footprints: exact for a box on any face and an upright cylinder, bounding rectangle when tilted', () => {
  // A box on its side (roll 90°) covers x ±0.02 and y ±0.01 (its local z).
  const side = fromXyzRpy([0, 0, 0], [H, 0, 0]);
  assert.ok(footprintContains(box, side, 0.019, 0.009));
  assert.ok(!footprintContains(box, side, 0.019, 0.011));
  assert.ok(footprintContains(can, fromXyzRpy([1, 1, 0], [0, 0, 0]), 1.021, 1.021));
  assert.ok(!footprintContains(can, fromXyzRpy([1, 1, 0], [0, 0, 0]), 1.022, 1.022));
  const tilted = footprint(can, fromXyzRpy([0, 0, 0], [Math.PI / 4, 0, 0]));
  assert.equal(tilted.kind, 'rect');
  assert.ok(tilted.kind === 'rect' && Math.abs(tilted.hx - 0.03) < 1e-12);
});

test('overlap: rectangles by separating axes, circles, touching is not overlapping', () => {
  const cube: Shape = { kind: 'box', size: [0.04, 0.04, 0.04] };
  const at = (x: number, y: number, yaw = 0, z = 0.02) => solidOf(cube, fromXyzRpy([x, y, z], [0, 0, yaw]));
  assert.ok(!solidsOverlap(at(0, 0), at(0.04, 0)), 'side by side, touching');
  assert.ok(solidsOverlap(at(0, 0), at(0.039, 0)));
  assert.ok(!solidsOverlap(at(0, 0), at(0, 0, 0, 0.06)), 'stacked, touching');
  // Turned 45°, a cube reaches 0.0283 m from its centre: 0.048 apart overlaps, 0.049 does not.
  assert.ok(solidsOverlap(at(0, 0), at(0.048, 0, Math.PI / 4)));
  assert.ok(!solidsOverlap(at(0, 0), at(0.049, 0, Math.PI / 4)));
  // Diagonal neighbours whose bounding boxes overlap but whose turned shapes do not.
  assert.ok(!footprintsOverlap(at(0, 0, Math.PI / 4).footprint, at(0.03, 0.03, Math.PI / 4).footprint));
  const ball = (x: number) => solidOf({ kind: 'sphere', radius: 0.02 }, fromXyzRpy([x, 0.03, 0.02], [0, 0, 0]));
  assert.ok(solidsOverlap(at(0, 0), ball(0.01)));
  assert.ok(!solidsOverlap(at(0, 0), ball(0.04)));
  const post = obstacleSolid({ name: 'p', shape: 'capsule', a: [0.045, 0, 0], b: [0.045, 0, 0.5], radius: 0.03 });
  assert.deepEqual([post.footprint.kind, post.zMin, post.zMax], ['circle', -0.03, 0.53]);
  assert.ok(solidsOverlap(at(0, 0), post));
  assert.ok(!solidsOverlap(at(-0.006, 0), post));
});

test('lookAt: optical +z at the target, +x horizontal and right, +y down; straight down has +x = −y', () => {
  const eye: [number, number, number] = [0.85, 0, 0.45];
  const target: [number, number, number] = [0.3, 0, 0.02];
  const t = lookAt(eye, target)!;
  const d = Math.hypot(0.55, 0.43);
  const p = transformPoint(new Float64Array(3), t, [0, 0, d]);
  for (let i = 0; i < 3; i++) near(p[i], target[i]);
  // Columns: optical x = world +y (to the right when looking back along −x), x has no z part, y points down.
  assert.deepEqual(
    [t[0], t[4], t[8]].map((v) => v + 0),
    [0, 1, 0],
  );
  assert.ok(t[9] < 0);
  const down = lookAt([0.3, 0, 1], [0.3, 0, 0])!;
  assert.deepEqual(
    [0, 1, 2].map((j) => [down[j], down[4 + j], down[8 + j]].map((v) => Math.round(v) + 0)),
    [
      [0, -1, 0],
      [-1, 0, 0],
      [0, 0, -1],
    ],
  );
  assert.equal(lookAt(eye, eye), undefined);
});
