// One arm in the simulated workcell: its kinematic chain placed at its base pose, its link
// capsules, and its parallel jaw (robot config `gripper.jaw`) in the TCP frame.
import type { ArmPlacement, Jaw } from '../../description/types.js';
import { KinematicChain } from '../../kinematics/chain.js';
import { forwardKinematics } from '../../kinematics/forward.js';
import type { Transform } from '../../math/transform.js';
import { closingAxis, inJaw } from '../../safety/jaw.js';
import { LinkCapsules } from '../../safety/link-capsules.js';
import type { Shape } from './types.js';
import { widthAlong } from './world-shapes.js';

export class ArmBody {
  readonly name: string;
  readonly chain: KinematicChain;
  readonly capsules: LinkCapsules;
  readonly jaw: Jaw | null;
  readonly frames: Float64Array;
  readonly tcp: Transform = new Float64Array(12);
  /** Gripper position, 0 = closed … 1 = open (the protocol's scale); null without a gripper. */
  gripper: number | null = null;
  /** Whether place() has run: before, the capsules are nowhere. */
  placed = false;
  private readonly u = new Float64Array(3);

  constructor(placement: ArmPlacement) {
    const r = placement.robot;
    this.name = placement.name;
    this.chain = new KinematicChain(r, { base: placement.base });
    this.capsules = new LinkCapsules(this.chain, r.capsules);
    this.jaw = r.gripper?.jaw ?? null;
    this.frames = new Float64Array((this.chain.dof + 1) * 12);
  }

  /** Forward kinematics at q: TCP, chain frames and capsules. */
  place(q: ArrayLike<number>): void {
    forwardKinematics(this.chain, q, this.tcp, this.frames);
    this.capsules.place(this.frames);
    this.placed = true;
  }

  /** Whether capsule i rides on the last chain frame, the gripper's. */
  onGripper(i: number): boolean {
    return this.capsules.frame[i] === this.chain.dof;
  }

  /** The jaw's opening now (m). */
  opening(): number {
    return this.jaw && this.gripper !== null ? this.jaw.openWidth * Math.min(Math.max(this.gripper, 0), 1) : 0;
  }

  /** The gripper position at which the fingers are `width` (m) apart. */
  positionAt(width: number): number {
    return this.jaw ? Math.min(Math.max(width / this.jaw.openWidth, 0), 1) : 0;
  }

  /** Extent of a shape at `pose` across the jaw (along the fingers' closing axis), m. */
  widthAcross(shape: Shape, pose: Transform): number {
    return this.jaw ? widthAlong(shape, pose, closingAxis(this.jaw, this.tcp, this.u)) : 0;
  }

  /**
   * Whether a point lies in the jaw box at the current opening (tol m of slack each way); with
   * `ahead`, the box runs on without end along TCP +z (the channel the fingers sweep as they approach).
   */
  inJaw(pose: Transform, tol: number, ahead = false): boolean {
    return this.jaw !== null && inJaw(this.jaw, this.opening(), this.tcp, pose[3], pose[7], pose[11], tol, ahead);
  }
}
