// An object held at the TCP: placed per sample from the TCP pose, then checked against the
// workspace, table, obstacles and the other arm's capsules and held object, as a link would be.
import type { HeldObject } from '../description/types.js';
import type { LinkCapsules } from './link-capsules.js';
import { segmentDistance } from './segment-distance.js';

/** The link name a held object's violations carry. */
export function heldLink(held: HeldObject): string {
  return `held:${held.name}`;
}

/** Writes the held capsule's endpoints a, b (TCP frame) through the TCP pose into out[0..5]. */
export function placeHeld(held: HeldObject, tcp: Float64Array, out: Float64Array): void {
  for (const [o, p] of [
    [0, held.a],
    [3, held.b],
  ] as const) {
    for (let r = 0; r < 3; r++)
      out[o + r] = tcp[r * 4] * p[0] + tcp[r * 4 + 1] * p[1] + tcp[r * 4 + 2] * p[2] + tcp[r * 4 + 3];
  }
}

/** The closest capsule of `c` to the placed held capsule w (radius r): link and surface distance. */
export function heldNearest(w: Float64Array, r: number, c: LinkCapsules): { link: string; distance: number } {
  const best = { link: '', distance: Infinity };
  for (let i = 0; i < c.count; i++) {
    const d = segmentDistance(w, 0, 3, c.world, i * 6, i * 6 + 3) - r - c.radius[i];
    if (d < best.distance) {
      best.link = c.links[i];
      best.distance = d;
    }
  }
  return best;
}
