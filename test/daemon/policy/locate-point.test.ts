// locate_point: pinhole back-projection of a depth reading through the camera's extrinsics, then
// into the frame of the robot's tool poses, checked against hand-computed points on synthetic
// depth PNGs; the fallback window and every failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { decodeDepth, locatePoint } from '../../../daemon/policy/locate-point.js';
import { answerLocatePoint, MAX_DEPTH_AGE_S } from '../../../daemon/policy/episode/locate.js';
import type { FrameMeta } from '../../../robot/link/camera-protocol.js';
import type { FrameSource } from '../../../daemon/policy/episode/types.js';
import { fromPose } from '../../../robot/math/quaternion.js';
import { invert, transformPoint } from '../../../robot/math/transform.js';
import { captureCamera } from '../../../robot/sim/render/capture.js';
import { Rasterizer } from '../../../robot/sim/render/rasterizer.js';
import { homeArms, startStates } from '../../../robot/sim/render/scene-start.js';
import { loadScene } from '../../../robot/sim/scene/scene-config.js';
import { loadArms } from '../../../robot/description/loader.js';
import { RobotModel } from '../../../robot/tools/robot-model.js';
import { robotFrames } from '../../../daemon/policy/episode/robot-frames.js';

const W = 64;
const H = 48;
const S = Math.SQRT1_2;
// The optical frame at (1, 2, 3), turned 90° about world x: optical (x, y, z) → world (x, −z, y) + p.
const meta: FrameMeta = {
  seq: 1,
  time: 0,
  kind: 'depth',
  encoding: 'png',
  width: W,
  height: H,
  intrinsics: { fx: 50, fy: 50, cx: 32, cy: 24 },
  extrinsics: { frame: 'world', pose: [1, 2, 3, S, 0, 0, S] },
  depth_scale: 0.001,
};

function plane(units: number, edit: (d: Uint16Array) => void = () => undefined): Uint16Array {
  const d = new Uint16Array(W * H).fill(units);
  edit(d);
  return d;
}
const png = (d: Uint16Array) =>
  sharp(d, { raw: { width: W, height: H, channels: 1 } })
    .toColourspace('grey16')
    .png()
    .toBuffer();
const near = (a: number[], b: number[], tol = 1e-3) =>
  assert.ok(
    a.every((x, i) => Math.abs(x - b[i]!) <= tol),
    `${a} ≉ ${b}`,
  );

test('a flat plane 1.5 m away back-projects through the intrinsics and a rotated extrinsic to 1 mm', async () => {
  const depth = await decodeDepth(await png(plane(1500)), 0.001);
  assert.deepEqual([depth.width, depth.height, depth.data[0]], [W, H, 1500]);
  const r = locatePoint(depth, meta, 42.5, 14.5);
  assert.ok(r.ok);
  // optical ((42.5−32)·1.5/50, (14.5−24)·1.5/50, 1.5) = (0.315, −0.285, 1.5) → world (1.315, 0.5, 2.715).
  near(r.point, [1.315, 0.5, 2.715]);
  assert.deepEqual([r.frame, r.depth_m, r.fallback], ['world', 1.5, false]);
  // The principal point lies on the optical axis: 1.5 m along world −y.
  const c = locatePoint(depth, meta, 32, 24);
  assert.ok(c.ok);
  near(c.point, [1, 0.5, 3]);
});

test('a pixel without a reading takes the median of the non-zero readings around it', async () => {
  const d = plane(1000, (d) => {
    d[10 * W + 10] = 0;
    d[10 * W + 11] = 3000; // an outlier the median ignores
    d[11 * W + 10] = 0;
  });
  const r = locatePoint(await decodeDepth(await png(d)), meta, 10.5, 10.5);
  assert.ok(r.ok && r.fallback);
  assert.equal(r.depth_m, 1);
  const hole = plane(1000, (d) => {
    for (let y = 0; y < 10; y++) for (let x = 0; x < 10; x++) d[y * W + x] = 0;
  });
  const none = locatePoint(await decodeDepth(await png(hole)), meta, 4.5, 4.5);
  assert.deepEqual(none, { ok: false, reason: 'no depth reading within 5×5 px of (4, 4)' });
});

test('a pixel outside the image, or a frame without calibration, is a reason, not a point', async () => {
  const depth = await decodeDepth(await png(plane(1000)));
  assert.match((locatePoint(depth, meta, W, 1) as { reason: string }).reason, /outside the depth image \(64×48\)/);
  assert.match((locatePoint(depth, meta, -0.1, 1) as { reason: string }).reason, /outside/);
  assert.match(
    (locatePoint(depth, { ...meta, intrinsics: undefined }, 1, 1) as { reason: string }).reason,
    /intrinsics/,
  );
  assert.match(
    (locatePoint(depth, { ...meta, extrinsics: undefined }, 1, 1) as { reason: string }).reason,
    /extrinsics/,
  );
  await assert.rejects(decodeDepth(new Uint8Array([1, 2, 3])));
});

function source(
  image: Buffer | null,
  time = 10,
  colour?: { width: number; height: number },
  frame = 'world',
): FrameSource {
  const m = { ...meta, extrinsics: { ...meta.extrinsics!, frame } };
  return {
    cameras: () => ['front'],
    latest: () => (colour ? [{ camera: 'front', mime: 'image/jpeg', bytes: new Uint8Array(), time, ...colour }] : []),
    depth: (_robot, camera) =>
      camera === 'front' && image ? { meta: m, png: new Uint8Array(image), time } : undefined,
  };
}

/** The frames of robot or setup `name` with every joint of every arm at `q`. */
function framesOf(name: string, q: number[] = [0, 0, 0, 0, 0, 0]) {
  const arms = loadArms(name);
  assert.ok(arms.ok);
  return robotFrames(new RobotModel(arms.value.setup), () => q);
}
const yam = framesOf('yam');

test('the episode answer maps the shown pixel onto the depth image and reports every failure', async () => {
  const image = await png(plane(1500));
  const ask = (s: FrameSource, u: number, v: number, now = 10, maxSide = 1280, camera = 'front') =>
    answerLocatePoint(s, 'arm1', yam, { camera, u, v }, now, maxSide);
  const full = await ask(source(image), 42, 14);
  assert.equal(full.status, 'ok');
  const body = JSON.parse(full.text);
  // One arm: the world of the calibration is the robot's base frame.
  near(body.point_xyz, [1.315, 0.5, 2.715]);
  assert.deepEqual([body.frame, body.depth_m, body.note, body.calibration.frame], ['base', 1.5, undefined, 'world']);
  // Shown at 32×24 (max side 32): pixel (21, 7)'s centre is depth (43, 15) → optical (0.33, −0.27, 1.5).
  near(JSON.parse((await ask(source(image), 21, 7, 10, 32)).text).point_xyz, [1.33, 0.5, 2.73]);
  // A colour image twice the depth's size: pixel (85, 29) centre → depth (42.75, 14.75).
  const big = JSON.parse((await ask(source(image, 10, { width: 128, height: 96 }), 85, 29)).text);
  near(big.point_xyz, [1 + (10.75 * 1.5) / 50, 0.5, 3 + (-9.25 * 1.5) / 50]);
  // A fractional pixel inside the image past the last centre (63.9 of 64) is the last pixel's point.
  const edge = await ask(source(image), 63.9, 47.9);
  assert.equal(edge.status, 'ok', edge.text);
  assert.deepEqual(JSON.parse(edge.text).point_xyz, JSON.parse((await ask(source(image), 63, 47)).text).point_xyz);

  const fails = [
    await ask(source(null), 1, 1),
    await ask(source(image), 1, 1, 10, 1280, 'wrist'),
    await ask(source(image), 1, 1, 10 + MAX_DEPTH_AGE_S + 0.5),
    await ask(source(image), 64, 1),
    await ask(source(Buffer.from('not a png')), 1, 1),
    await ask(source(await png(plane(0))), 1, 1),
  ];
  assert.deepEqual(
    fails.map((f) => f.status),
    ['unavailable', 'unavailable', 'error', 'error', 'error', 'error'],
  );
  const texts = fails.map((f) => f.text);
  assert.match(texts[0]!, /^locate_point failed: camera front sends no depth image/);
  assert.match(texts[2]!, /2\.5 s old \(> 2 s\)/);
  assert.match(texts[3]!, /pixel \(64, 1\) is outside camera front's image \(64×48\)/);
  assert.match(texts[4]!, /cannot be decoded/);
  assert.match(texts[5]!, /no depth reading within 5×5 px/);
});

test('the point is given in the frame of tool poses: a link calibration by FK of the measured joints, several arms each in its base', async () => {
  const image = await png(plane(1500));
  const answer = (frames: ReturnType<typeof framesOf>, frame: string, u = 42, v = 14) =>
    answerLocatePoint(source(image, 10, undefined, frame), 'r', frames, { camera: 'front', u, v }, 10, 1280);
  const ask = async (frames: ReturnType<typeof framesOf>, frame: string) => {
    const a = await answer(frames, frame);
    assert.equal(a.status, 'ok', a.text);
    return JSON.parse(a.text);
  };
  // The calibration point is (1.315, 0.5, 2.715) in whatever frame the extrinsics name.
  // yam link_1 = Trans(0, 0, 0.0631)·Rz(π/2)·Rz(q1); at q1 = π/2 a half turn: (x, y, z) → (−x, −y, z + 0.0631).
  const turned = await ask(framesOf('yam', [Math.PI / 2, 0, 0, 0, 0, 0]), 'link_1');
  near(turned.point_xyz, [-1.315, -0.5, 2.7781]);
  assert.deepEqual([turned.frame, turned.calibration], ['base', { frame: 'link_1', xyz: [1.315, 0.5, 2.715] }]);
  // dual-yam: bases at y = +0.3 (left) and −0.3 (right), both facing +x.
  const dual = framesOf('dual-yam');
  const world = await ask(dual, 'world');
  near(world.point_xyz, [1.315, 0.5, 2.715]);
  assert.equal(world.frame, 'world');
  near(world.arm_base_xyz.left, [1.315, 0.2, 2.715]);
  near(world.arm_base_xyz.right, [1.315, 0.8, 2.715]);
  const onLeft = await ask(dual, 'left/base_link');
  near(onLeft.point_xyz, [1.315, 0.8, 2.715]);
  near(onLeft.arm_base_xyz.left, [1.315, 0.5, 2.715]);
  near(onLeft.arm_base_xyz.right, [1.315, 1.1, 2.715]);
  // A link of both arms must name its arm; an unknown frame is an error, not a point.
  const fail = async (frames: ReturnType<typeof framesOf>, frame: string) => (await answer(frames, frame, 1, 1)).text;
  assert.match(await fail(dual, 'link_1'), /"link_1" is a link of several arms \(left, right\): name it arm\/link/);
  assert.match(await fail(yam, 'table'), /"table" is neither world nor a link of the robot's arms \(arm\)/);
  const unmeasured = robotFrames(new RobotModel((loadArms('yam') as any).value.setup), () => undefined);
  assert.match(await fail(unmeasured, 'link_1'), /arm arm has no measured joints to place link link_1/);
});

test("the simulator's front depth image locates the green block's top-face centre to 1 mm", async () => {
  const loaded = loadScene('yam-pick-place');
  assert.ok(loaded.ok);
  const scene = loaded.value;
  const front = scene.cameras.find((c) => c.name === 'front')!;
  const images = await captureCamera(new Rasterizer(), scene, front, startStates(scene), homeArms(scene));
  const d = images.find((i) => i.meta.kind === 'depth')!;
  // The 4 cm green block rests at (0.28, 0, 0.02): its top-face centre, projected into the camera.
  const top = [0.28, 0, 0.04];
  const { pose } = d.meta.extrinsics;
  const toOptical = invert(new Float64Array(12), fromPose(pose.slice(0, 3), pose.slice(3)));
  const o = transformPoint(new Float64Array(3), toOptical, top);
  const k = d.meta.intrinsics;
  const [x, y] = [(k.fx * o[0]!) / o[2]! + k.cx, (k.fy * o[1]!) / o[2]! + k.cy];
  const r = locatePoint(await decodeDepth(d.image, d.meta.depth_scale), { ...d.meta }, x, y);
  assert.ok(r.ok && !r.fallback && r.frame === 'world');
  near(r.point, top, 0.001); // depth is whole millimetres
});
