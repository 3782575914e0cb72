// A robot's link capsules compiled against its chain: endpoints in chain-frame coordinates,
// placed in the chain's output frame (base, or world for an arm with a base pose) per sample.
import type { CapsuleSpec } from '../description/types.js';
import { vec3 } from '../math/vec3.js';
import type { KinematicChain } from '../kinematics/chain.js';

export class LinkCapsules {
  readonly count: number;
  readonly links: string[];
  /** Chain frame of each capsule (0 = base, i = joint i). */
  readonly frame: Int32Array;
  readonly radius: Float64Array;
  /** Half the length of each capsule's axis (m); rigid motion keeps it. */
  readonly halfLength: Float64Array;
  /** count × 6: endpoints a, b in the capsule's chain frame. */
  private readonly local: Float64Array;
  /** count × 6: endpoints a, b after place(). */
  readonly world: Float64Array;

  constructor(chain: KinematicChain, specs: CapsuleSpec[]) {
    this.count = specs.length;
    this.links = specs.map((s) => s.link);
    this.frame = new Int32Array(this.count);
    this.radius = new Float64Array(this.count);
    this.halfLength = new Float64Array(this.count);
    this.local = new Float64Array(this.count * 6);
    this.world = new Float64Array(this.count * 6);
    const p = vec3();
    specs.forEach((s, i) => {
      this.frame[i] = chain.linkPoint(s.link, s.a, p);
      this.local.set(p, i * 6);
      chain.linkPoint(s.link, s.b, p);
      this.local.set(p, i * 6 + 3);
      this.radius[i] = s.radius;
      const l = this.local,
        o = i * 6;
      this.halfLength[i] = 0.5 * Math.hypot(l[o + 3] - l[o], l[o + 4] - l[o + 1], l[o + 5] - l[o + 2]);
    });
  }

  /** Places every capsule using chain frames from forwardKinematics ((dof+1)·12). */
  place(frames: Float64Array): void {
    const l = this.local,
      w = this.world;
    for (let i = 0; i < this.count; i++) {
      const f = this.frame[i] * 12;
      for (let e = i * 6; e < i * 6 + 6; e += 3) {
        const x = l[e],
          y = l[e + 1],
          z = l[e + 2];
        w[e] = frames[f] * x + frames[f + 1] * y + frames[f + 2] * z + frames[f + 3];
        w[e + 1] = frames[f + 4] * x + frames[f + 5] * y + frames[f + 6] * z + frames[f + 7];
        w[e + 2] = frames[f + 8] * x + frames[f + 9] * y + frames[f + 10] * z + frames[f + 11];
      }
    }
  }
}

/** Absorbs rounding in capsulesApart (m): placed coordinates of a few metres are off by ~1e-15. */
const APART_SLACK = 1e-9;

/**
 * Whether the surface distance of placed capsules ca[i] and cb[j] certainly exceeds `gap` (m),
 * from their centres alone: every axis point lies within its half-length of the centre, so the
 * distance is at least |c_i − c_j| − h_i − h_j − r_i − r_j. segmentDistance measures between
 * two points of the axes, never less than this bound (up to rounding, inside APART_SLACK), so a
 * check may skip the pairs this proves farther apart than its current minimum.
 */
export function capsulesApart(ca: LinkCapsules, i: number, cb: LinkCapsules, j: number, gap: number): boolean {
  const reach = gap + ca.halfLength[i] + cb.halfLength[j] + ca.radius[i] + cb.radius[j] + APART_SLACK;
  if (!(reach < Infinity)) return false;
  const a = ca.world,
    b = cb.world,
    oa = i * 6,
    ob = j * 6;
  const dx = 0.5 * (a[oa] + a[oa + 3] - b[ob] - b[ob + 3]);
  const dy = 0.5 * (a[oa + 1] + a[oa + 4] - b[ob + 1] - b[ob + 4]);
  const dz = 0.5 * (a[oa + 2] + a[oa + 5] - b[ob + 2] - b[ob + 5]);
  return dx * dx + dy * dy + dz * dz > reach * reach;
}
