// The rasteriser against hand-computed projections: u = fx·x/z + cx, v = fy·y/z + cy in the
// optical frame, pixel (u, v) covering [u, u+1) × [v, v+1) with its centre at u + 0.5.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromXyzRpy } from '../../../robot/math/transform.js';
import type { Triple } from '../../../robot/description/types.js';
import type { Primitive } from '../../../robot/sim/render/mesh.js';
import { Rasterizer, type Frame } from '../../../robot/sim/render/rasterizer.js';
import { BACKGROUND, brightness, shadeChannel } from '../../../robot/sim/render/shading.js';
import type { Rgb } from '../../../robot/sim/scene/types.js';
import { INTRINSICS, TABLE_COLOR, lookAt, lookingDown } from './render-scenes.js';

const { fx, fy, cx, cy } = INTRINSICS;
const RED: Rgb = [220, 40, 40];
const BLUE: Rgb = [40, 60, 220];
const TOP = brightness(0, 0, 1);
const shaded = (c: Rgb, k: number): Rgb => [shadeChannel(c[0], k), shadeChannel(c[1], k), shadeChannel(c[2], k)];

function pixel(f: Frame, u: number, v: number): Rgb {
  const k = 3 * (v * f.width + u);
  return [f.rgb[k], f.rgb[k + 1], f.rgb[k + 2]];
}

function box(center: Triple, half: Triple, color: Rgb): Primitive {
  return { shape: { kind: 'box', half }, pose: fromXyzRpy(center, [0, 0, 0]), color };
}

/** A table top at z = 0 (a thin slab) under everything. */
const table = box([0, 0, -0.01], [2, 2, 0.01], TABLE_COLOR);

test('a box below a downward-looking camera has its shaded colour where its top-face centre projects, the table beside it', () => {
  const eye = lookingDown([0, 0, 1]);
  const frame = new Rasterizer().render(INTRINSICS, eye, [table, box([0.1, 0.05, 0.05], [0.05, 0.05, 0.05], RED)], {
    depth: true,
  });
  // Top-face centre (0.1, 0.05, 0.1) is (0.1, −0.05, 0.9) in the optical frame (x right, y = −world y, z down).
  const u = Math.floor((fx * 0.1) / 0.9 + cx); // 375.56 → 375
  const v = Math.floor((fy * -0.05) / 0.9 + cy); // 212.22 → 212
  assert.deepEqual([u, v], [375, 212]);
  assert.deepEqual(pixel(frame, u, v), shaded(RED, TOP));
  assert.ok(Math.abs(frame.depth![v * frame.width + u] - 0.9) < 1e-3);
  // The table 0.1 m to the left of the box, at depth 1 m, and the background past its edge at x = −2 (u < 0: none).
  const ut = Math.floor((fx * -0.1) / 1 + cx);
  assert.deepEqual(pixel(frame, ut, v), shaded(TABLE_COLOR, TOP));
  assert.ok(Math.abs(frame.depth![v * frame.width + ut] - 1) < 1e-3);
});

test('a face drawn as two triangles leaves no crack along their shared diagonal', () => {
  // The slab's top (4 m square, 1 m below) fills the view; its diagonal runs through the image.
  for (const eye of [lookingDown([0, 0, 1]), lookingDown([0.013, -0.027, 1]), lookAt([0.1, 0.1, 1], [0.3, 0.2, 0])]) {
    const frame = new Rasterizer().render(INTRINSICS, eye, [table]);
    const wood = shaded(TABLE_COLOR, TOP);
    for (let k = 0; k < frame.width * frame.height; k++)
      assert.deepEqual(pixel(frame, k % frame.width, Math.floor(k / frame.width)), wood, `pixel ${k}`);
  }
});

test('a pixel is covered when its centre is: an edge at u = 400.4 leaves pixel 400 out, one at 400.6 takes it in', () => {
  const eye = lookingDown([0, 0, 1]);
  for (const [edge, inside] of [
    [400.4, false],
    [400.6, true],
  ] as const) {
    // The top face at depth 0.9 m ends at x = (edge − cx)·0.9/fx.
    const right = ((edge - cx) * 0.9) / fx;
    const frame = new Rasterizer().render(INTRINSICS, eye, [
      table,
      box([right - 0.05, 0, 0.05], [0.05, 0.05, 0.05], RED),
    ]);
    assert.deepEqual(pixel(frame, 399, 240), shaded(RED, TOP));
    assert.deepEqual(pixel(frame, 400, 240), inside ? shaded(RED, TOP) : shaded(TABLE_COLOR, TOP), `edge at ${edge}`);
  }
});

test('depth at a pixel of a tilted view is where its centre ray meets the table, to 1 mm', () => {
  const eye = lookAt([0.9, 0.5, 0.7], [0.2, -0.1, 0]);
  const frame = new Rasterizer().render(INTRINSICS, eye, [table], { depth: true });
  for (const [u, v] of [
    [100, 400],
    [320, 240],
    [600, 300],
    [17, 470],
  ]) {
    // Ray through the pixel centre, optical frame: ((u+0.5−cx)/fx, (v+0.5−cy)/fy, 1) · z.
    const dx = (u + 0.5 - cx) / fx,
      dy = (v + 0.5 - cy) / fy;
    const wz = eye[8] * dx + eye[9] * dy + eye[10];
    const z = -eye[11] / wz; // world z of the eye plus z · wz = 0 on the table top
    assert.ok(
      Math.abs(frame.depth![v * frame.width + u] - z) < 1e-3,
      `pixel ${u},${v}: ${frame.depth![v * 640 + u]} vs ${z}`,
    );
  }
});

test('the nearer object wins whatever the drawing order', () => {
  const eye = lookingDown([0, 0, 1]);
  const low = box([0, 0, 0.05], [0.1, 0.1, 0.05], BLUE);
  const high = box([0, 0, 0.2], [0.03, 0.03, 0.03], RED);
  for (const order of [
    [table, low, high],
    [high, low, table],
  ]) {
    const frame = new Rasterizer().render(INTRINSICS, eye, order, { depth: true });
    assert.deepEqual(pixel(frame, 320, 240), shaded(RED, TOP));
    assert.ok(Math.abs(frame.depth![240 * 640 + 320] - 0.77) < 1e-3);
    // 0.05 m off centre at depth 0.9: u = 320 + 500·0.05/0.9 ≈ 347.8, outside the red box, on the blue one.
    assert.deepEqual(pixel(frame, 347, 240), shaded(BLUE, TOP));
  }
});

test('an object behind the camera draws nothing', () => {
  const eye = lookingDown([0, 0, 1]);
  const frame = new Rasterizer().render(INTRINSICS, eye, [box([0, 0, 1.5], [0.3, 0.3, 0.3], RED)], { depth: true });
  assert.ok(frame.rgb.every((b, i) => b === BACKGROUND[i % 3]));
  assert.ok(frame.depth!.every((d) => d === 0));
});

test('a bar from behind the camera to in front of it draws only its front part (no wrap-around)', () => {
  const eye = lookingDown([0, 0, 1]);
  // Optical x = 0.1 m, from optical z = −1 to +2: in front it projects to u ≥ 320 + 500·0.1/2 = 345.
  const bar = box([0.1, 0, 0.5], [0.01, 0.01, 1.5], RED);
  const frame = new Rasterizer().render(INTRINSICS, eye, [bar], { depth: true });
  let drawn = 0;
  for (let v = 0; v < frame.height; v++)
    for (let u = 0; u < frame.width; u++) {
      const d = frame.depth![v * frame.width + u];
      if (d === 0) continue;
      drawn++;
      assert.ok(u >= 340, `pixel ${u},${v} drawn`);
      assert.ok(d >= 0.01 - 1e-6);
    }
  assert.ok(drawn > 1000);
});

test('rendering is deterministic: the same input gives the same bytes, with a fresh or a reused rasteriser', () => {
  const eye = lookAt([0.8, 0.6, 0.5], [0, 0, 0.05]);
  const prims: Primitive[] = [
    table,
    box([0, 0, 0.05], [0.05, 0.03, 0.05], RED),
    { shape: { kind: 'sphere', radius: 0.05 }, pose: fromXyzRpy([0.15, 0.1, 0.05], [0, 0, 0]), color: BLUE },
    {
      shape: { kind: 'cylinder', radius: 0.04, height: 0.1 },
      pose: fromXyzRpy([-0.1, 0.1, 0.05], [0.3, 0, 0]),
      color: RED,
    },
    {
      shape: { kind: 'capsule', radius: 0.02, length: 0.2 },
      pose: fromXyzRpy([0, -0.15, 0.1], [0, 1.2, 0.4]),
      color: BLUE,
    },
  ];
  const r = new Rasterizer();
  const a = r.render(INTRINSICS, eye, prims, { depth: true });
  const b = r.render(INTRINSICS, eye, prims, { depth: true });
  const c = new Rasterizer().render(INTRINSICS, eye, prims, { depth: true });
  assert.deepEqual(Buffer.from(a.rgb), Buffer.from(b.rgb));
  assert.deepEqual(Buffer.from(a.rgb), Buffer.from(c.rgb));
  assert.deepEqual(Buffer.from(a.depth!.buffer), Buffer.from(c.depth!.buffer));
  assert.notEqual(a.rgb, b.rgb, 'each frame has its own buffer');
});

test('2×2 supersampling keeps face interiors and averages edges', () => {
  const eye = lookingDown([0, 0, 1]);
  // The box's right edge at u = 400.5: half of pixel 400 is red.
  const right = ((400.5 - cx) * 0.9) / fx;
  const prims = [table, box([right - 0.05, 0, 0.05], [0.05, 0.05, 0.05], RED)];
  const frame = new Rasterizer().render(INTRINSICS, eye, prims, { supersample: true, depth: true });
  const red = shaded(RED, TOP),
    wood = shaded(TABLE_COLOR, TOP);
  assert.deepEqual(pixel(frame, 390, 240), red);
  assert.deepEqual(pixel(frame, 410, 240), wood);
  assert.deepEqual(
    pixel(frame, 400, 240),
    red.map((c, i) => (2 * c + 2 * wood[i] + 2) >> 2),
  );
  // Depth keeps the nearest of the four samples: the box top.
  assert.ok(Math.abs(frame.depth![240 * 640 + 400] - 0.9) < 1e-3);
});

test('intrinsics the rasteriser cannot use are refused by name', () => {
  const eye = lookingDown([0, 0, 1]);
  for (const [bad, message] of [
    [{ width: 0 }, /camera width must be an integer in \[1, 8192\] \(got 0\)/],
    [{ height: 2.5 }, /camera height must be an integer in \[1, 8192\] \(got 2.5\)/],
    [{ fx: -1 }, /camera fx must be a positive number \(got -1\)/],
    [{ fy: Number.NaN }, /camera fy must be a positive number \(got NaN\)/],
    [{ cy: Number.POSITIVE_INFINITY }, /camera cy must be a finite number \(got Infinity\)/],
  ] as const)
    assert.throws(() => new Rasterizer().render({ ...INTRINSICS, ...bad }, eye, [table]), message);
});
