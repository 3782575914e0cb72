// The image size and pinhole intrinsics the rasteriser draws with, and the check that they are usable.
import type { SceneCamera } from '../scene/types.js';

/** Image size and pinhole intrinsics in pixels, as a scene camera has them. */
export type CameraIntrinsics = Pick<SceneCamera, 'width' | 'height' | 'fx' | 'fy' | 'cx' | 'cy'>;

/** Largest image side (pixels) the rasteriser accepts. */
export const MAX_IMAGE_SIDE = 8192;

/** Throws a RangeError naming the first field of `camera` the rasteriser cannot use. */
export function checkIntrinsics(camera: CameraIntrinsics): void {
  for (const key of ['width', 'height'] as const)
    if (!(Number.isInteger(camera[key]) && camera[key] >= 1 && camera[key] <= MAX_IMAGE_SIDE))
      throw new RangeError(`camera ${key} must be an integer in [1, ${MAX_IMAGE_SIDE}] (got ${camera[key]})`);
  for (const key of ['fx', 'fy'] as const)
    if (!(camera[key] > 0 && Number.isFinite(camera[key])))
      throw new RangeError(`camera ${key} must be a positive number (got ${camera[key]})`);
  for (const key of ['cx', 'cy'] as const)
    if (!Number.isFinite(camera[key]))
      throw new RangeError(`camera ${key} must be a finite number (got ${camera[key]})`);
}
