// A simulated camera as a camera node publishes it: when each camera is due (its own rate, or one
// rate for all), and its frame as encoded images with the camera protocol's metadata (pinhole
// intrinsics, world-from-optical extrinsics, depth as a 16-bit PNG in millimetres).
import { quatFromTransform } from '../../math/quaternion.js';
import type { ObjectState, SceneCamera, SceneDescription } from '../scene/types.js';
import { encodeDepth, encodeRgb } from './encode.js';
import type { Rasterizer } from './rasterizer.js';
import { cameraPose, renderCamera, type ArmView } from './scene-primitives.js';

export interface CapturedImage {
  camera: string;
  image: Buffer;
  meta: {
    kind: 'color' | 'depth';
    encoding: 'jpeg' | 'png';
    width: number;
    height: number;
    intrinsics: { fx: number; fy: number; cx: number; cy: number };
    /** The optical frame in the world at capture: [x, y, z, qx, qy, qz, qw] (m). */
    extrinsics: { frame: 'world'; pose: number[] };
    /** Metres per depth unit (depth images only). */
    depth_scale?: number;
  };
}

/** Depth images are millimetres (encodeDepth). */
export const DEPTH_SCALE = 0.001;

/** One camera's frame: its colour image, then its depth image when the camera renders depth. */
export async function captureCamera(
  rasterizer: Rasterizer,
  scene: SceneDescription,
  camera: SceneCamera,
  objects: ObjectState[],
  arms: ArmView[],
  quality?: number,
): Promise<CapturedImage[]> {
  const pose = cameraPose(camera, arms);
  const frame = renderCamera(rasterizer, scene, camera, objects, arms);
  const q = quatFromTransform(new Float64Array(4), pose);
  const meta = {
    width: frame.width,
    height: frame.height,
    intrinsics: { fx: camera.fx, fy: camera.fy, cx: camera.cx, cy: camera.cy },
    extrinsics: { frame: 'world' as const, pose: [pose[3], pose[7], pose[11], q[0], q[1], q[2], q[3]] },
  };
  const [color, depth] = await Promise.all([
    encodeRgb(frame, { format: camera.encoding, quality }),
    frame.depth ? encodeDepth(frame) : null,
  ]);
  const images: CapturedImage[] = [
    { camera: camera.name, image: color, meta: { kind: 'color', encoding: camera.encoding, ...meta } },
  ];
  if (depth)
    images.push({
      camera: camera.name,
      image: depth,
      meta: { kind: 'depth', encoding: 'png', ...meta, depth_scale: DEPTH_SCALE },
    });
  return images;
}

/**
 * Which cameras are due at a time: each on its own grid of 1/rate periods from its first frame
 * (a camera with rate 0 never: only a still render draws one), or every camera at `rate` when one is given. A caller
 * that falls behind gets one frame, and the grid skips the missed slots rather than queueing them.
 */
export class CameraSchedule {
  private readonly next = new Map<string, number>();

  constructor(
    private readonly cameras: SceneCamera[],
    private readonly rate: number | null = null,
  ) {
    if (rate !== null && !(rate > 0 && Number.isFinite(rate)))
      throw new RangeError(`camera rate must be a positive number (got ${rate})`);
  }

  /** The cameras due at `now` (s, monotonic); each is then scheduled for its next slot after `now`. */
  due(now: number): SceneCamera[] {
    const out: SceneCamera[] = [];
    for (const c of this.cameras) {
      const rate = this.rate ?? c.rate;
      if (!(rate > 0)) continue;
      const period = 1 / rate;
      const next = this.next.get(c.name);
      // Slots are computed from a multiple of the period, so a tick landing on a slot counts despite rounding.
      if (next !== undefined && now < next - 1e-9 * period) continue;
      out.push(c);
      const start = next ?? now;
      this.next.set(c.name, start + (Math.floor((now - start) / period + 1e-9) + 1) * period);
    }
    return out;
  }
}
