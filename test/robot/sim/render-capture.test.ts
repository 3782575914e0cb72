// Camera frames as the simulator would publish them: encoded images with intrinsics and
// world-from-optical extrinsics, and which cameras are due at which tick.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { fromPose } from '../../../robot/math/quaternion.js';
import { CameraSchedule, captureCamera, DEPTH_SCALE } from '../../../robot/sim/render/capture.js';
import { Rasterizer } from '../../../robot/sim/render/rasterizer.js';
import { homeArms, startStates } from '../../../robot/sim/render/scene-start.js';
import { loadScene } from '../../../robot/sim/scene/scene-config.js';
import type { SceneCamera } from '../../../robot/sim/scene/types.js';
import { camera, lookingDown } from './render-scenes.js';

test('a captured frame is the JPEG and the depth PNG with the camera intrinsics and its world pose', async () => {
  const loaded = loadScene('yam-pick-place');
  assert.ok(loaded.ok);
  const scene = loaded.value;
  const front = scene.cameras.find((c) => c.name === 'front')!;
  const images = await captureCamera(new Rasterizer(), scene, front, startStates(scene, 1), homeArms(scene));
  assert.deepEqual(
    images.map((i) => [i.camera, i.meta.kind, i.meta.encoding]),
    [
      ['front', 'color', 'jpeg'],
      ['front', 'depth', 'png'],
    ],
  );
  const [color, depth] = images;
  assert.deepEqual([color.meta.width, color.meta.height], [640, 480]);
  // fov 60° over 640 px: fx = 320 / tan(30°).
  assert.ok(Math.abs(color.meta.intrinsics.fx - 320 / Math.tan(Math.PI / 6)) < 1e-9);
  assert.deepEqual([color.meta.intrinsics.cx, color.meta.intrinsics.cy], [320, 240]);
  assert.equal(depth.meta.depth_scale, DEPTH_SCALE);
  assert.equal(color.meta.depth_scale, undefined);
  // The scene puts the camera at (0.85, 0, 0.45) looking at (0.32, 0, 0.02).
  const { pose } = color.meta.extrinsics;
  const t = fromPose(pose.slice(0, 3), pose.slice(3));
  const aim = [0.32 - 0.85, 0, 0.02 - 0.45];
  const n = Math.hypot(...aim);
  for (let i = 0; i < 3; i++) {
    assert.ok(Math.abs(pose[i] - [0.85, 0, 0.45][i]) < 1e-9);
    assert.ok(Math.abs(t[4 * i + 2] - aim[i] / n) < 1e-9, 'optical z points at the target');
  }
  assert.deepEqual(depth.meta.extrinsics, color.meta.extrinsics);
  const jpeg = await sharp(color.image).metadata();
  assert.deepEqual([jpeg.format, jpeg.width, jpeg.height], ['jpeg', 640, 480]);
  const png = await sharp(depth.image).metadata();
  assert.deepEqual([png.format, png.channels, png.depth], ['png', 1, 'ushort']);
  // A camera without depth captures one image.
  const wrist = scene.cameras.find((c) => c.name === 'wrist')!;
  assert.equal((await captureCamera(new Rasterizer(), scene, wrist, startStates(scene, 1), homeArms(scene))).length, 1);
});

const cams = (rates: number[]): SceneCamera[] =>
  rates.map((rate, i) => camera(`c${i}`, lookingDown([0, 0, 1]), { rate }));

function frameTimes(schedule: CameraSchedule, ticks: number[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const t of ticks) for (const c of schedule.due(t)) out.set(c.name, [...(out.get(c.name) ?? []), t]);
  return out;
}

test('each camera is due at its own rate; rate 0 only on request; one rate for all when given', () => {
  const ticks = Array.from({ length: 21 }, (_, k) => k * 0.05);
  const own = frameTimes(new CameraSchedule(cams([10, 4, 0])), ticks);
  assert.equal(own.get('c0')!.length, 11);
  assert.deepEqual(own.get('c1'), [0, 0.25, 0.5, 0.75, 1]);
  assert.equal(own.has('c2'), false);
  const all = frameTimes(new CameraSchedule(cams([10, 4, 0]), 2), ticks);
  for (const name of ['c0', 'c1', 'c2']) assert.deepEqual(all.get(name), [0, 0.5, 1]);
  assert.throws(() => new CameraSchedule(cams([10]), 0), /camera rate must be a positive number \(got 0\)/);
});

test('a late tick gets one frame and the missed slots are skipped, not queued', () => {
  const times = frameTimes(new CameraSchedule(cams([10])), [0, 0.37, 0.38, 0.39, 0.4, 0.45, 0.5]);
  assert.deepEqual(times.get('c0'), [0, 0.37, 0.4, 0.5]);
});
