// A workcell as a camera sees it: the arms' capsules and gripper placed from the joints, cameras
// fixed in the world or riding on a link, and frames encoded with sharp.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { loadArms } from '../../../robot/description/loader.js';
import { forwardKinematics } from '../../../robot/kinematics/forward.js';
import { fromXyzRpy, identity, invert, transformPoint } from '../../../robot/math/transform.js';
import { depthMillimetres, encodeDepth, encodeRgb } from '../../../robot/sim/render/encode.js';
import { Rasterizer, type Frame } from '../../../robot/sim/render/rasterizer.js';
import {
  armModels,
  cameraPose,
  FINGER_PAD,
  renderCamera,
  scenePrimitives,
  type ArmView,
} from '../../../robot/sim/render/scene-primitives.js';
import { atRest, camera, INTRINSICS, lookAt, object, scene } from './render-scenes.js';

const { fx, fy, cx, cy } = INTRINSICS;

function arms(robot: string, q?: number[][], gripper: number | null = 1): ArmView[] {
  const r = loadArms(robot);
  assert.ok(r.ok);
  return armModels(r.value.setup).map((model, i) => ({
    model,
    q: q?.[i] ?? r.value.setup.arms[i].robot.home,
    gripper,
  }));
}

/** Pixel of a world point seen from a world-from-optical pose. */
function project(pose: Float64Array, p: ArrayLike<number>): [number, number, number] {
  const c = transformPoint(new Float64Array(3), invert(new Float64Array(12), pose), p);
  return [Math.floor((fx * c[0]) / c[2] + cx), Math.floor((fy * c[1]) / c[2] + cy), c[2]];
}

const at = (f: Frame, u: number, v: number) =>
  Array.from(f.rgb.subarray(3 * (v * f.width + u), 3 * (v * f.width + u) + 3));

test('the arm is drawn from its joints: a link capsule shows grey where its axis projects, in front of the table', () => {
  const eye = lookAt([1.0, 0.6, 0.7], [0.2, 0, 0.2]);
  const s = scene([], [camera('side', eye)]);
  const view = arms('yam');
  const frame = renderCamera(new Rasterizer(), s, s.cameras[0], [], view);
  const c = view[0].model.capsules;
  // The upper arm (link_2) capsule's midpoint.
  const i = c.links.indexOf('link_2');
  const w = c.world;
  const mid = [0, 1, 2].map((k) => 0.5 * (w[6 * i + k] + w[6 * i + 3 + k]));
  const [u, v, z] = project(eye, mid);
  const [r, g, b] = at(frame, u, v);
  assert.ok(r === g && g === b, `grey at ${u},${v}: ${[r, g, b]}`);
  assert.ok(frame.depth![v * 640 + u] < z, 'the capsule surface is in front of its axis');
  assert.ok(frame.depth![v * 640 + u] > z - c.radius[i] - 1e-3);
});

test('an open gripper draws two fingers beside the TCP; an arm without a gripper draws none', () => {
  const s = scene([], []);
  const yam = arms('yam');
  const yamPrims = scenePrimitives(s, [], yam);
  assert.equal(yamPrims.length, 1 + yam[0].model.capsules.count + 2);
  const bare = yam.map((a) => ({ ...a, model: { ...a.model, fingers: null } }));
  assert.equal(scenePrimitives(s, [], bare).length, 1 + yam[0].model.capsules.count);
  // The fingers sit ±(opening/2 + pad/2) along the TCP y axis.
  const tcp = yam[0].model.tcp;
  const fingers = yamPrims.slice(-2);
  const sep = Math.hypot(...[3, 7, 11].map((k) => fingers[0].pose[k] - fingers[1].pose[k]));
  assert.ok(Math.abs(sep - (yam[0].model.fingers!.openWidth + FINGER_PAD)) < 1e-9);
  for (const k of [3, 7, 11]) assert.ok(Math.abs(fingers[0].pose[k] + fingers[1].pose[k] - 2 * tcp[k]) < 1e-9);
  // Along the TCP's y axis (its second column).
  assert.ok(Math.abs(Math.abs(fingers[1].pose[3] - fingers[0].pose[3]) - sep * Math.abs(tcp[1])) < 1e-9);
  const closed = scenePrimitives(s, [], arms('yam', undefined, 0)).slice(-2);
  assert.ok(Math.abs(Math.hypot(...[3, 7, 11].map((k) => closed[0].pose[k] - closed[1].pose[k])) - FINGER_PAD) < 1e-9);
});

test("fingers follow the robot config's gripper jaw when it has one", () => {
  const r = loadArms('yam');
  assert.ok(r.ok);
  const jaw = { openWidth: 0.1, depth: 0.03, thickness: 0.01, axis: 'x' as const };
  const setup = r.value.setup;
  const robot = { ...setup.arms[0].robot, gripper: { ...setup.arms[0].robot.gripper!, jaw } };
  const [model] = armModels({ ...setup, arms: [{ ...setup.arms[0], robot }] });
  assert.deepEqual(model.fingers, jaw);
  const fingers = scenePrimitives(scene([], []), [], [{ model, q: robot.home, gripper: 0.5 }]).slice(-2);
  assert.deepEqual(fingers[0].shape, { kind: 'box', half: [FINGER_PAD / 2, 0.005, 0.015] });
  // Half open: 0.05 m between the fingers, along the TCP's x axis (its first column).
  const tcp = model.tcp;
  for (const k of [0, 1, 2])
    assert.ok(
      Math.abs(fingers[1].pose[4 * k + 3] - fingers[0].pose[4 * k + 3] - (0.05 + FINGER_PAD) * tcp[4 * k]) < 1e-9,
    );
});

test('a link-mounted camera moves with the joints: its pose is the link frame from FK times its mount pose', () => {
  const mount = fromXyzRpy([0.02, 0, 0.05], [0, 0, Math.PI / 2]);
  const wrist = camera('wrist', mount, { mount: { kind: 'link', arm: 'arm', link: 'link_6' } });
  const s = scene([object('red', { kind: 'box', size: [0.04, 0.04, 0.04] }, [220, 40, 40], [0.35, 0, 0.02])], [wrist]);
  const home = [0, 1, 1, 0, 0, 0];
  const turned = [0.5, 1, 1, 0, 0, 0];
  const a = cameraPose(wrist, arms('yam', [home]));
  const b = cameraPose(wrist, arms('yam', [turned]));
  // Joint 1 turns about the base's z axis (the world's, for a lone yam): the camera turns with it.
  const c = Math.cos(0.5),
    sn = Math.sin(0.5);
  assert.ok(Math.abs(b[3] - (c * a[3] - sn * a[7])) < 1e-9);
  assert.ok(Math.abs(b[7] - (sn * a[3] + c * a[7])) < 1e-9);
  assert.ok(Math.abs(b[11] - a[11]) < 1e-9);
  // The camera's origin is the mount offset in link_6's frame, found independently through linkPoint.
  const view = arms('yam', [home]);
  const m = view[0].model;
  forwardKinematics(m.chain, home, m.tcp, m.frames);
  const p = new Float64Array(3);
  const frame = m.chain.linkPoint('link_6', [0.02, 0, 0.05], p);
  const world = transformPoint(new Float64Array(3), m.frames.subarray(12 * frame, 12 * frame + 12), p);
  assert.ok(Math.abs(world[0] - a[3]) + Math.abs(world[1] - a[7]) + Math.abs(world[2] - a[11]) < 1e-9);
  const r = new Rasterizer();
  const fa = renderCamera(r, s, wrist, atRest(s), arms('yam', [home]));
  const fb = renderCamera(r, s, wrist, atRest(s), arms('yam', [turned]));
  assert.notDeepEqual(Buffer.from(fa.rgb), Buffer.from(fb.rgb));
});

test('a camera on an arm the scene does not have, or joints of the wrong length, are refused by name', () => {
  const bad = camera('wrist', identity(), { mount: { kind: 'link', arm: 'left', link: 'link_6' } });
  assert.throws(() => cameraPose(bad, arms('yam')), /camera "wrist": mount.arm "left"/);
  assert.throws(
    () => scenePrimitives(scene([], []), [], arms('yam', [[0, 1]])),
    /arm "arm": 2 joint positions given, the arm has 6/,
  );
  assert.throws(
    () => scenePrimitives(scene([], []), [{ name: 'ghost', pose: identity(), heldBy: null }], []),
    /object "ghost"/,
  );
});

test('encoding round trip: PNG and JPEG keep the size and three channels; depth is a 16-bit PNG in millimetres', async () => {
  const s = scene([object('red', { kind: 'box', size: [0.1, 0.1, 0.1] }, [220, 40, 40], [0.3, 0, 0.05])], []);
  const cam = camera('top', fromXyzRpy([0.3, 0, 1], [Math.PI, 0, 0]), {
    width: 64,
    height: 48,
    fx: 50,
    fy: 50,
    cx: 32,
    cy: 24,
  });
  const frame = renderCamera(new Rasterizer(), s, cam, atRest(s), [], { depth: true });
  const png = await encodeRgb(frame, { format: 'png' });
  const meta = await sharp(png).metadata();
  assert.deepEqual([meta.format, meta.width, meta.height, meta.channels], ['png', 64, 48, 3]);
  const { data } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  assert.deepEqual(Buffer.from(data), Buffer.from(frame.rgb), 'PNG is lossless');
  const jpeg = await encodeRgb(frame, { format: 'jpeg', quality: 90 });
  const jmeta = await sharp(jpeg).metadata();
  assert.deepEqual([jmeta.format, jmeta.width, jmeta.height, jmeta.channels], ['jpeg', 64, 48, 3]);
  assert.throws(
    () => encodeRgb(frame, { format: 'jpeg', quality: 0 }),
    /quality must be an integer in \[1, 100\] \(got 0\)/,
  );
  const depth = await encodeDepth(frame);
  const dmeta = await sharp(depth).metadata();
  assert.deepEqual([dmeta.format, dmeta.channels, dmeta.depth], ['png', 1, 'ushort']);
  const raw = await sharp(depth).toColourspace('grey16').raw({ depth: 'ushort' }).toBuffer();
  const mm = new Uint16Array(raw.buffer, raw.byteOffset, raw.length / 2);
  assert.deepEqual(Array.from(mm), Array.from(depthMillimetres(frame.depth!)));
  // The box top at 0.9 m below the camera, in the middle of the image.
  assert.equal(mm[24 * 64 + 32], 900);
  assert.deepEqual(Array.from(depthMillimetres(Float32Array.of(0, 0.0004, 1.2345, 70))), [0, 0, 1235, 65535]);
});
