// The renderer's fixed lighting and colours: Lambert shading of flat faces under one directional
// light that does not move with the camera, so a face has the same colour in every view.
import type { Triple } from '../../description/types.js';
import type { Rgb } from '../scene/types.js';

/** Unit vector towards the light, world frame: from above, a little towards +x and +y. */
export const LIGHT_DIRECTION: Triple = [0.48, 0.36, 0.8];
/** A face's brightness is AMBIENT + DIFFUSE · max(0, n·l) for its unit outward normal n. */
export const AMBIENT = 0.35;
export const DIFFUSE = 0.65;
/** Where no surface is hit. */
export const BACKGROUND: Rgb = [46, 52, 64];

/** Brightness factor of a face with unit world normal (nx, ny, nz). */
export function brightness(nx: number, ny: number, nz: number): number {
  const d = nx * LIGHT_DIRECTION[0] + ny * LIGHT_DIRECTION[1] + nz * LIGHT_DIRECTION[2];
  return AMBIENT + DIFFUSE * Math.max(0, d);
}

/** A channel 0–255 scaled by a brightness in [0, 1], rounded to the nearest integer. */
export function shadeChannel(channel: number, k: number): number {
  return Math.round(channel * k);
}
