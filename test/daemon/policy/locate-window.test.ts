// locate_point decodes only the window around the pixel it reads, with readings and points equal
// to a whole decode, and refuses an oversized depth frame from its header.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import sharp, { type SharpOptions } from 'sharp';
import { decodeDepth, FALLBACK_WINDOW, locatePoint, MAX_DEPTH_PIXELS } from '../../../daemon/policy/locate-point.js';
import { answerLocatePoint } from '../../../daemon/policy/episode/locate.js';
import type { FrameMeta } from '../../../robot/link/camera-protocol.js';
import type { FrameSource } from '../../../daemon/policy/episode/types.js';
import { loadArms } from '../../../robot/description/loader.js';
import { RobotModel } from '../../../robot/tools/robot-model.js';
import { robotFrames } from '../../../daemon/policy/episode/robot-frames.js';

const W = 640;
const H = 480;
const meta: Pick<FrameMeta, 'intrinsics' | 'extrinsics'> = {
  intrinsics: { fx: 500, fy: 500, cx: 320, cy: 240 },
  extrinsics: { frame: 'world', pose: [0, 0, 0, 0, 0, 0, 1] },
};

/** A depth PNG whose readings vary per pixel (above 255, so both bytes matter), with holes. */
function patterned(width: number, height: number): Promise<Buffer> {
  const d = new Uint16Array(width * height);
  for (let n = 0; n < d.length; n++) d[n] = n % 7 === 0 ? 0 : 300 + ((n * 2654435761) % 60000);
  const input = { raw: { width, height, channels: 1, depth: 'ushort' } } as SharpOptions;
  return sharp(Buffer.from(d.buffer), input).toColourspace('grey16').png().toBuffer();
}

test('a windowed decode reads as the whole image does, at corners, edges and holes', async () => {
  const png = await patterned(W, H);
  const whole = await decodeDepth(png, 0.001);
  assert.equal(whole.data.length, W * H);
  for (const [x, y] of [
    [0.5, 0.5],
    [W - 0.5, H - 0.5],
    [1.2, H - 2.5],
    [320.5, 240.5],
    [7.5, 0.5], // pixel 7 of row 0 is a hole: the fallback median
  ] as const) {
    const part = await decodeDepth(png, 0.001, [Math.floor(x), Math.floor(y)]);
    assert.deepEqual([part.width, part.height], [W, H]);
    assert.ok(part.data.length <= FALLBACK_WINDOW * FALLBACK_WINDOW, `${part.data.length} readings decoded`);
    assert.deepEqual(locatePoint(part, meta, x, y), locatePoint(whole, meta, x, y), `at (${x}, ${y})`);
  }
  // A pixel outside is still reported from the full size.
  const out = await decodeDepth(png, 0.001, [W + 10, -3]);
  assert.match(
    (locatePoint(out, meta, W + 10, -3) as { reason: string }).reason,
    /outside the depth image \(640×480\)/,
  );
});

test('a depth frame above MAX_DEPTH_PIXELS is refused from its header, not decoded', async () => {
  // A 1×1 depth PNG whose IHDR claims 16383×16383 (a 268 M pixel frame of zeros compresses to 522 KB).
  const png = Buffer.from(await patterned(1, 1));
  png.writeUInt32BE(16383, 16);
  png.writeUInt32BE(16383, 20);
  await assert.rejects(decodeDepth(png), /16383×16383 = 268402689 pixels, more than 16777216/);
  assert.equal(MAX_DEPTH_PIXELS, 4096 * 4096);
  const arms = loadArms('yam');
  assert.ok(arms.ok);
  const frames = robotFrames(new RobotModel(arms.value.setup), () => [0, 0, 0, 0, 0, 0]);
  const m = { seq: 1, time: 0, kind: 'depth', encoding: 'png', width: 16383, height: 16383, ...meta };
  const source: FrameSource = {
    cameras: () => ['front'],
    latest: () => [],
    depth: () => ({ meta: m as FrameMeta, png: new Uint8Array(png), time: 10 }),
  };
  const r = await answerLocatePoint(source, 'arm1', frames, { camera: 'front', u: 1, v: 1 }, 10, 1280);
  assert.equal(r.status, 'error');
  assert.match(r.text, /depth image cannot be decoded: depth image is 16383×16383 = 268402689 pixels/);
});
