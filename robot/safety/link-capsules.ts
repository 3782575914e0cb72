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
  /** count × 6: endpoints a, b in the capsule's chain frame. */
  private readonly local: Float64Array;
  /** count × 6: endpoints a, b after place(). */
  readonly world: Float64Array;

  constructor(chain: KinematicChain, specs: CapsuleSpec[]) {
    this.count = specs.length;
    this.links = specs.map((s) => s.link);
    this.frame = new Int32Array(this.count);
    this.radius = new Float64Array(this.count);
    this.local = new Float64Array(this.count * 6);
    this.world = new Float64Array(this.count * 6);
    const p = vec3();
    specs.forEach((s, i) => {
      this.frame[i] = chain.linkPoint(s.link, s.a, p);
      this.local.set(p, i * 6);
      chain.linkPoint(s.link, s.b, p);
      this.local.set(p, i * 6 + 3);
      this.radius[i] = s.radius;
    });
  }

  /** Places every capsule using chain frames from forwardKinematics ((dof+1)·12). */
  place(frames: Float64Array): void {
    const l = this.local, w = this.world;
    for (let i = 0; i < this.count; i++) {
      const f = this.frame[i] * 12;
      for (let e = i * 6; e < i * 6 + 6; e += 3) {
        const x = l[e], y = l[e + 1], z = l[e + 2];
        w[e] = frames[f] * x + frames[f + 1] * y + frames[f + 2] * z + frames[f + 3];
        w[e + 1] = frames[f + 4] * x + frames[f + 5] * y + frames[f + 6] * z + frames[f + 7];
        w[e + 2] = frames[f + 8] * x + frames[f + 9] * y + frames[f + 10] * z + frames[f + 11];
      }
    }
  }
}
