// A robot description compiled for fast kinematics: every joint moves about (or along) its own
// z axis, all constant transforms are pre-multiplied, and everything lives in flat typed arrays.
import {
  compose,
  fromAxisAngle,
  identity,
  invert,
  rotationX,
  transformPoint,
  type Transform,
} from '../math/transform.js';
import type { Vec3, Vec3Like } from '../math/vec3.js';
import type { JointDescription, LinkFrame } from '../description/types.js';

export interface ChainInput {
  name: string;
  joints: JointDescription[];
  links: LinkFrame[];
  flange: Transform;
  tcp: Transform;
}

export interface CompileOptions {
  /** World → base pose (dual-arm setups); identity when omitted. */
  base?: Transform;
  /** Stop at the flange instead of the TCP. */
  flangeOnly?: boolean;
}

export class KinematicChain {
  readonly name: string;
  readonly dof: number;
  readonly jointNames: string[];
  /** (dof+1) × 12: fixed[i] precedes joint i's motion; fixed[dof] runs from the last joint to the TCP. */
  readonly fixed: Float64Array;
  /** 1 where the joint is prismatic (translation along z), 0 where it rotates about z. */
  readonly prismatic: Uint8Array;
  readonly lower: Float64Array;
  readonly upper: Float64Array;
  readonly base: Transform;
  /** Upper bound on the distance from joint 1's origin to the TCP (m). */
  readonly reach: number;
  /** Link name → chain frame (0 = base, i = joint i's motion frame) and offset frame → link. */
  private readonly linkFrames: Map<string, { frame: number; offset: Transform }>;

  constructor(input: ChainInput, options: CompileOptions = {}) {
    const n = input.joints.length;
    this.name = input.name;
    this.dof = n;
    this.jointNames = input.joints.map((j) => j.name);
    this.fixed = new Float64Array((n + 1) * 12);
    this.prismatic = new Uint8Array(n);
    this.lower = new Float64Array(n);
    this.upper = new Float64Array(n);
    this.base = options.base ? Float64Array.from(options.base) : identity();
    // Aligning each joint axis with z: joint frame = motion frame · A⁻¹ with A·ẑ = axis.
    const alignInv: Transform[] = [];
    let previous = this.base;
    input.joints.forEach((j, i) => {
      const a = alignZTo(j.axis);
      const aInv = invert(new Float64Array(12), a);
      const f = compose(new Float64Array(12), previous, j.origin);
      compose(f, f, a);
      this.fixed.set(f, i * 12);
      this.prismatic[i] = j.type === 'prismatic' ? 1 : 0;
      this.lower[i] = j.limits.lower;
      this.upper[i] = j.limits.upper;
      alignInv.push(aInv);
      previous = aInv;
    });
    const last = compose(new Float64Array(12), previous, input.flange);
    if (!options.flangeOnly) compose(last, last, input.tcp);
    this.fixed.set(last, n * 12);
    this.reach = chainReach(this);
    this.linkFrames = new Map(
      input.links.map((l) => [
        l.name,
        {
          frame: l.frame,
          offset: l.frame === 0 ? l.offset : compose(new Float64Array(12), alignInv[l.frame - 1], l.offset),
        },
      ]),
    );
  }

  hasLink(name: string): boolean {
    return this.linkFrames.has(name);
  }

  /** Chain frame index of a link and a point given in that link's frame, in chain-frame coordinates. */
  linkPoint(name: string, p: Vec3Like, out: Vec3): number {
    const l = this.linkFrames.get(name);
    if (!l) throw new Error(`unknown link "${name}" in chain "${this.name}"`);
    transformPoint(out, l.offset, p);
    return l.frame;
  }

  /** Chain frame index of a link; writes chain-frame-from-link into `out`. */
  linkFrame(name: string, out: Transform): number {
    const l = this.linkFrames.get(name);
    if (!l) throw new Error(`unknown link "${name}" in chain "${this.name}"`);
    out.set(l.offset);
    return l.frame;
  }

  /** Midpoint of each joint's range (0 for continuous joints). */
  midRange(out: Float64Array = new Float64Array(this.dof)): Float64Array {
    for (let i = 0; i < this.dof; i++) {
      const lo = this.lower[i],
        hi = this.upper[i];
      out[i] = Number.isFinite(lo) && Number.isFinite(hi) ? 0.5 * (lo + hi) : 0;
    }
    return out;
  }

  withinLimits(q: ArrayLike<number>, slack = 0): boolean {
    for (let i = 0; i < this.dof; i++)
      if (!(q[i] >= this.lower[i] - slack && q[i] <= this.upper[i] + slack)) return false;
    return true;
  }
}

/** A rotation taking ẑ to the unit vector `axis` (identity for +z, RotX(π) for −z). */
export function alignZTo(axis: Vec3Like): Transform {
  const [x, y, z] = [axis[0], axis[1], axis[2]];
  const s = Math.hypot(x, y);
  if (s < 1e-12) return z > 0 ? identity() : rotationX(new Float64Array(12), Math.PI);
  // Rotate about ẑ × axis = (−y, x, 0)/s by the angle between them.
  return fromAxisAngle(new Float64Array(12), [-y / s, x / s, 0], Math.atan2(s, z));
}

/** Sum of the constant link translations after joint 1, plus prismatic travel: a reach bound. */
function chainReach(c: KinematicChain): number {
  let r = 0;
  for (let i = 1; i <= c.dof; i++) {
    const o = i * 12;
    r += Math.hypot(c.fixed[o + 3], c.fixed[o + 7], c.fixed[o + 11]);
  }
  for (let i = 0; i < c.dof; i++) if (c.prismatic[i]) r += Math.max(Math.abs(c.lower[i]), Math.abs(c.upper[i]));
  return r;
}
