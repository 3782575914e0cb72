// The episode's answer to locate_point {camera, u, v}: the pixel of the image as the model was
// shown it, mapped onto the camera's latest depth frame, back-projected (../locate-point.ts) into
// the camera's calibration frame and carried into the frame of the robot's tool poses.
import { decodeDepth, depthSize, locatePoint } from '../locate-point.js';
import { shownSize } from './observation.js';
import { invert, transformPoint } from '../../../robot/math/transform.js';
import type { RobotFrames } from './robot-frames.js';
import type { FrameSource } from './types.js';

/** A depth frame older than this (s, daemon clock) is not trusted to describe the scene now. */
export const MAX_DEPTH_AGE_S = 2;

export interface LocateAnswer {
  status: 'ok' | 'unavailable' | 'error';
  text: string;
}

const r4 = (x: number) => Math.round(x * 1e4) / 1e4;

/**
 * u, v: pixel indices (fractions allowed) of the camera's image as shown, width × height of the
 * observation; the point is at that pixel's centre. Every failure is an answer, never a throw.
 */
export async function answerLocatePoint(
  frames: FrameSource,
  robot: string,
  robotFrames: RobotFrames,
  args: { camera: string; u: number; v: number },
  now: number,
  maxSide: number,
): Promise<LocateAnswer> {
  const { camera, u, v } = args;
  const fail = (status: LocateAnswer['status'], why: string): LocateAnswer => ({
    status,
    text: `locate_point failed: ${why}`,
  });
  const d = frames.depth?.(robot, camera);
  if (!d) return fail('unavailable', `camera ${camera} sends no depth image (only depth cameras can locate a pixel).`);
  const age = now - d.time;
  if (age > MAX_DEPTH_AGE_S)
    return fail('error', `camera ${camera}'s latest depth image is ${age.toFixed(1)} s old (> ${MAX_DEPTH_AGE_S} s).`);
  // The model points into the colour image as shown to it; the depth image may differ in size.
  const colour = frames.latest(robot).find((f) => f.camera === camera);
  const shown = shownSize(colour?.width ?? d.meta.width, colour?.height ?? d.meta.height, maxSide);
  if (u >= shown.width || v >= shown.height)
    return fail('error', `pixel (${u}, ${v}) is outside camera ${camera}'s image (${shown.width}×${shown.height}).`);
  let depth: Awaited<ReturnType<typeof decodeDepth>>;
  let x: number;
  let y: number;
  try {
    const size = await depthSize(d.png);
    // Pixel u's centre, scaled to the depth image; a fractional u past the last centre (639.9 of
    // 640) stays in the last pixel.
    x = Math.min(((u + 0.5) * size.width) / shown.width, size.width - 0.5);
    y = Math.min(((v + 0.5) * size.height) / shown.height, size.height - 0.5);
    depth = await decodeDepth(d.png, d.meta.depth_scale, [Math.floor(x), Math.floor(y)]);
  } catch (e) {
    return fail('error', `camera ${camera}'s depth image cannot be decoded: ${(e as Error).message}.`);
  }
  const r = locatePoint(depth, d.meta, x, y);
  if (!r.ok) return fail('error', `${r.reason}.`);
  const toTool = robotFrames.toolFrom(r.frame);
  if (typeof toTool === 'string') return fail('error', `${toTool}.`);
  const point = transformPoint(new Float64Array(3), toTool, r.point);
  const arms = robotFrames.arms;
  const body = {
    camera,
    pixel: [u, v],
    frame: arms.length > 1 ? 'world' : 'base',
    point_xyz: [...point].map(r4),
    // With several arms, also in each arm's own base frame.
    ...(arms.length > 1
      ? {
          arm_base_xyz: Object.fromEntries(
            arms.map((a) => [
              a.name,
              [...transformPoint(new Float64Array(3), invert(new Float64Array(12), a.base), point)].map(r4),
            ]),
          ),
        }
      : {}),
    calibration: { frame: r.frame, xyz: r.point.map(r4) },
    depth_m: r4(r.depth_m),
    ...(r.fallback ? { note: 'no reading at the pixel: the median depth of the 5×5 px around it' } : {}),
  };
  return { status: 'ok', text: JSON.stringify(body) };
}
