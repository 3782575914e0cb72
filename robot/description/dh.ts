// Denavit–Hartenberg tables → URDF-style chains (joint origin in the parent link frame, motion
// about/along the joint's z axis).
//   standard (Spong):  T_i = RotZ(θ_i + q_i)·TransZ(d_i)·TransX(a_i)·RotX(α_i)
//   modified (Craig):  T_i = RotX(α_{i−1})·TransX(a_{i−1})·RotZ(θ_i + q_i)·TransZ(d_i)
// (prismatic joints add q_i to d_i instead). For the modified table, row i holds a_{i−1}, α_{i−1}.
import { compose, identity, rotationX, rotationZ, translation, type Transform } from '../math/transform.js';
import type { KinematicChainSpec, KinematicJoint, LinkFrame } from './types.js';

export type DhConvention = 'standard' | 'modified';

export interface DhRow {
  name: string;
  link: string;
  type: 'revolute' | 'prismatic';
  a: number;
  d: number;
  alpha: number;
  /** Joint offset θ (rad), added to q for revolute joints. */
  theta: number;
}

/** Fixed part of a row after the joint's motion is removed: RotZ(θ)·TransZ(d)·TransX(a)·RotX(α). */
function standardParts(row: Pick<DhRow, 'a' | 'd' | 'alpha' | 'theta'>): { before: Transform; after: Transform } {
  const before = rotationZ(new Float64Array(12), row.theta);
  const after = compose(
    new Float64Array(12),
    translation(new Float64Array(12), row.a, 0, row.d),
    rotationX(new Float64Array(12), row.alpha),
  );
  return { before, after };
}

function modifiedTransform(row: Pick<DhRow, 'a' | 'd' | 'alpha' | 'theta'>): Transform {
  const t = compose(
    new Float64Array(12),
    rotationX(new Float64Array(12), row.alpha),
    translation(new Float64Array(12), row.a, 0, 0),
  );
  compose(t, t, rotationZ(new Float64Array(12), row.theta));
  return compose(t, t, translation(new Float64Array(12), 0, 0, row.d));
}

/**
 * Builds the chain. `flange` is one more row in the same convention (no joint), appended after the
 * last joint; omit it for a flange at DH frame n (standard) or at the last joint frame (modified).
 */
export function dhChain(
  convention: DhConvention,
  baseLink: string,
  rows: DhRow[],
  flange?: Pick<DhRow, 'a' | 'd' | 'alpha' | 'theta'>,
): KinematicChainSpec {
  const joints: KinematicJoint[] = [];
  const links: LinkFrame[] = [{ name: baseLink, frame: 0, offset: identity() }];
  // Standard DH: the fixed part after joint i's motion becomes the start of joint i+1's origin.
  let carry = identity();
  let parent = baseLink;
  rows.forEach((row, i) => {
    let origin: Transform;
    if (convention === 'modified') {
      origin = modifiedTransform(row);
    } else {
      const { before, after } = standardParts(row);
      origin = compose(new Float64Array(12), carry, before);
      if (row.type === 'prismatic') {
        // d is the prismatic offset: TransZ(d) happens before the motion, TransX·RotX after it.
        compose(origin, origin, translation(new Float64Array(12), 0, 0, row.d));
        carry = compose(
          new Float64Array(12),
          translation(new Float64Array(12), row.a, 0, 0),
          rotationX(new Float64Array(12), row.alpha),
        );
      } else {
        carry = after;
      }
    }
    joints.push({ name: row.name, type: row.type, parent, child: row.link, origin, axis: [0, 0, 1] });
    links.push({ name: row.link, frame: i + 1, offset: identity() });
    parent = row.link;
  });
  let flangeT: Transform;
  if (convention === 'modified') {
    flangeT = flange ? modifiedTransform(flange) : identity();
  } else if (flange) {
    const { before, after } = standardParts(flange);
    flangeT = compose(new Float64Array(12), compose(new Float64Array(12), carry, before), after);
  } else {
    flangeT = carry;
  }
  return { baseLink, joints, links, flange: flangeT };
}
