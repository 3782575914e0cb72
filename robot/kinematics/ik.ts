// Inverse kinematics by damped least squares (Levenberg–Marquardt) with joint limits.
// Error e = [Δp; L·Δθ] (rotation rows scaled by a characteristic length L so all rows are metres);
// step Δq = Jᵀ(JJᵀ + λI)⁻¹e, λ = ½|e|² + μ (Sugihara's damping: large far from the goal, vanishing
// near a solution); μ adapts to step acceptance, growing where the Gauss–Newton step overshoots, as
// near singular poses, and shrinking again once steps succeed. Joints at a limit that
// the step would push further out are frozen and the step re-solved; steps are clamped; every
// iterate is projected into the limits, so no answer is ever out of limits. Cold starts retry from
// random seeds within a time budget (injected rng and clock). Result codes, no exceptions.
import type { Transform } from '../math/transform.js';
import type { IkTolerances } from '../description/types.js';
import type { KinematicChain } from './chain.js';
import { choleskySolve, choleskySolve6 } from './cholesky.js';
import { forwardKinematics, geometricJacobian } from './forward.js';
import { poseErrorVector } from './pose-error.js';

export type IkCode = 'ok' | 'not-converged' | 'out-of-reach' | 'invalid-input';

export interface IkResult {
  code: IkCode;
  /** Best joint vector found, always within the joint limits (the clamped seed on invalid input). */
  q: Float64Array;
  /** Residuals of q (m, rad). */
  positionError: number;
  rotationError: number;
  iterations: number;
  attempts: number;
  /** Why, for invalid-input and out-of-reach. */
  message?: string;
}

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
}

export interface ColdStart {
  rng: Rng;
  /** Monotonic clock in seconds. */
  clock: () => number;
  /** Seconds for all attempts; the tolerances' coldStartBudget when omitted. */
  budget?: number;
  maxAttempts?: number;
}

const MU_START = 1e-3;
const MU_MIN = 1e-7;
const MU_GIVE_UP = 1e4;
/** An attempt that has not halved its error within this many iterations is in a local minimum. */
const PROGRESS_WINDOW = 12;

export class IkSolver {
  readonly chain: KinematicChain;
  readonly tolerances: IkTolerances;
  private readonly n: number;
  private readonly m: number;
  private frames: Float64Array;
  private trialFrames: Float64Array;
  private tcp: Float64Array = new Float64Array(12);
  private trialTcp: Float64Array = new Float64Array(12);
  private e: Float64Array = new Float64Array(6);
  private trialE: Float64Array = new Float64Array(6);
  private readonly jac: Float64Array;
  private readonly a: Float64Array;
  private readonly rhs: Float64Array;
  private readonly dq: Float64Array;
  private q: Float64Array;
  private trialQ: Float64Array;
  private readonly best: Float64Array;
  private target!: Transform;
  /** Whether frames and tcp hold the FK of q (true after any descent; the iterate stays in q). */
  private fkOfQ = false;
  private energy = 0;
  private posErr = 0;
  private rotErr = 0;

  constructor(chain: KinematicChain, tolerances: IkTolerances) {
    this.chain = chain;
    this.tolerances = tolerances;
    const n = chain.dof;
    this.n = n;
    // Solve in the smaller space: 6×6 (JJᵀ) for n ≥ 6, n×n (JᵀJ) below.
    this.m = Math.min(n, 6);
    this.frames = new Float64Array((n + 1) * 12);
    this.trialFrames = new Float64Array((n + 1) * 12);
    this.jac = new Float64Array(6 * n);
    this.a = new Float64Array(this.m * this.m);
    this.rhs = new Float64Array(Math.max(6, n));
    this.dq = new Float64Array(n);
    this.q = new Float64Array(n);
    this.trialQ = new Float64Array(n);
    this.best = new Float64Array(n);
  }

  /** Solves for the TCP pose `target` (in the chain's base/world frame) starting from `seed`. */
  solve(target: Transform, seed: ArrayLike<number>, coldStart?: ColdStart): IkResult {
    const n = this.n;
    const chain = this.chain;
    const tol = this.tolerances;
    if (target.length < 12 || !allFinite(target, 12))
      return this.refuse('invalid-input', 'target pose has a non-finite entry', seed);
    if (seed.length !== n || !allFinite(seed, n))
      return this.refuse('invalid-input', `seed must be ${n} finite joint values`, seed);
    const f = chain.fixed;
    const dx = target[3] - f[3],
      dy = target[7] - f[7],
      dz = target[11] - f[11];
    const dist = Math.sqrt(dx * dx + dy * dy + dz * dz);
    if (dist > chain.reach + tol.acceptPosition) {
      return this.refuse(
        'out-of-reach',
        `target is ${dist.toFixed(4)} m from the first joint, reach is ${chain.reach.toFixed(4)} m`,
        seed,
      );
    }
    this.target = target;
    // Sequential IK seeds each solve with the previous answer, whose FK is still in frames and tcp.
    let reuse = this.fkOfQ;
    for (let i = 0; i < n; i++) {
      const x = clamp(seed[i], chain.lower[i], chain.upper[i]);
      if (!Object.is(x, this.q[i])) reuse = false;
      this.q[i] = x;
    }

    let iterations = 0;
    let attempts = 0;
    let bestEnergy = Infinity;
    let bestPos = Infinity;
    let bestRot = Infinity;
    let accepted = false;
    const deadline = coldStart ? coldStart.clock() + (coldStart.budget ?? tol.coldStartBudget) : 0;
    const maxAttempts = coldStart ? (coldStart.maxAttempts ?? Number.MAX_SAFE_INTEGER) : 1;
    for (;;) {
      attempts++;
      iterations += this.descend(reuse);
      reuse = false;
      accepted = this.posErr <= tol.acceptPosition && this.rotErr <= tol.acceptRotation;
      if (accepted || this.energy < bestEnergy) {
        bestEnergy = this.energy;
        bestPos = this.posErr;
        bestRot = this.rotErr;
        this.best.set(this.q);
      }
      if (accepted) break;
      if (!coldStart || attempts >= maxAttempts || coldStart.clock() >= deadline) break;
      this.randomSeed(coldStart.rng);
    }
    return {
      code: accepted ? 'ok' : 'not-converged',
      q: this.best.slice(),
      positionError: bestPos,
      rotationError: bestRot,
      iterations,
      attempts,
    };
  }

  /** A result without a search: the seed clamped into the limits (mid-range where it is not finite). */
  private refuse(code: IkCode, message: string, seed: ArrayLike<number>): IkResult {
    const chain = this.chain;
    const q = chain.midRange();
    for (let i = 0; i < this.n; i++)
      if (Number.isFinite(seed[i])) q[i] = clamp(seed[i], chain.lower[i], chain.upper[i]);
    return { code, q, positionError: Infinity, rotationError: Infinity, iterations: 0, attempts: 0, message };
  }

  /**
   * One damped least-squares descent from this.q; leaves the final iterate there (with its FK in
   * frames and tcp). fkKnown: frames and tcp already hold the FK of this.q. Returns iterations.
   */
  private descend(fkKnown: boolean): number {
    const n = this.n;
    const tol = this.tolerances;
    const chain = this.chain;
    const maxStep = tol.maxStep;
    if (fkKnown) poseErrorVector(this.target, this.tcp, this.e);
    else this.evaluate(this.q, this.frames, this.tcp, this.e);
    this.fkOfQ = true;
    this.energy = this.weightedEnergy(this.e);
    this.measure();
    let mu = MU_START;
    let checkpoint = this.energy;
    let it = 0;
    let needJacobian = true;
    while (it < tol.maxIterations) {
      if (this.posErr <= tol.stopPosition && this.rotErr <= tol.stopRotation) break;
      it++;
      if (needJacobian) this.weightedJacobian();
      const lambda = this.energy + mu;
      if (!this.step(lambda)) return it;
      // Freeze joints at a limit that the step pushes further out (zero their columns), re-solve once.
      let froze = false;
      const J = this.jac;
      for (let i = 0; i < n; i++) {
        const qi = this.q[i];
        if ((qi <= chain.lower[i] && this.dq[i] < 0) || (qi >= chain.upper[i] && this.dq[i] > 0)) {
          for (let r = 0; r < 6; r++) J[r * n + i] = 0;
          froze = true;
        }
      }
      if (froze && !this.step(lambda)) return it;
      let largest = 0;
      for (let i = 0; i < n; i++) largest = Math.max(largest, Math.abs(this.dq[i]));
      const scale = largest > maxStep ? maxStep / largest : 1;
      for (let i = 0; i < n; i++)
        this.trialQ[i] = clamp(this.q[i] + scale * this.dq[i], chain.lower[i], chain.upper[i]);
      this.evaluate(this.trialQ, this.trialFrames, this.trialTcp, this.trialE);
      const trialEnergy = this.weightedEnergy(this.trialE);
      if (trialEnergy < this.energy) {
        this.accept(trialEnergy);
        mu = Math.max(MU_MIN, mu * 0.1);
        needJacobian = true;
      } else {
        mu *= 10;
        needJacobian = false;
        if (mu > MU_GIVE_UP) break;
      }
      if (it % PROGRESS_WINDOW === 0) {
        if (this.energy > 0.5 * checkpoint) break;
        checkpoint = this.energy;
      }
    }
    return it;
  }

  /** Jacobian at the current iterate with the rotation rows scaled by L. */
  private weightedJacobian(): void {
    const n = this.n;
    const J = this.jac;
    const L = this.tolerances.characteristicLength;
    geometricJacobian(this.chain, this.frames, this.tcp, J);
    for (let i = 3 * n; i < 6 * n; i++) J[i] *= L;
  }

  /** Solves the damped normal equations of the weighted system for this.dq (frozen columns are zero). */
  private step(lambda: number): boolean {
    const n = this.n;
    const J = this.jac;
    const a = this.a;
    const rhs = this.rhs;
    const e = this.e;
    const L = this.tolerances.characteristicLength;
    if (n >= 6) {
      // Δq = Jᵀ(JJᵀ + λI)⁻¹e: a 6×6 system whatever the joint count. JJᵀ (lower triangle) as the
      // sum of the columns' outer products in locals: the same sums as row-by-row dot products
      // (same order), at a third of the cost.
      let a00 = 0,
        a10 = 0,
        a11 = 0,
        a20 = 0,
        a21 = 0,
        a22 = 0,
        a30 = 0,
        a31 = 0,
        a32 = 0,
        a33 = 0,
        a40 = 0;
      let a41 = 0,
        a42 = 0,
        a43 = 0,
        a44 = 0,
        a50 = 0,
        a51 = 0,
        a52 = 0,
        a53 = 0,
        a54 = 0,
        a55 = 0;
      for (let i = 0; i < n; i++) {
        const j0 = J[i],
          j1 = J[n + i],
          j2 = J[2 * n + i],
          j3 = J[3 * n + i],
          j4 = J[4 * n + i],
          j5 = J[5 * n + i];
        a00 += j0 * j0;
        a10 += j1 * j0;
        a11 += j1 * j1;
        a20 += j2 * j0;
        a21 += j2 * j1;
        a22 += j2 * j2;
        a30 += j3 * j0;
        a31 += j3 * j1;
        a32 += j3 * j2;
        a33 += j3 * j3;
        a40 += j4 * j0;
        a41 += j4 * j1;
        a42 += j4 * j2;
        a43 += j4 * j3;
        a44 += j4 * j4;
        a50 += j5 * j0;
        a51 += j5 * j1;
        a52 += j5 * j2;
        a53 += j5 * j3;
        a54 += j5 * j4;
        a55 += j5 * j5;
      }
      a[0] = a00 + lambda;
      a[6] = a10;
      a[7] = a11 + lambda;
      a[12] = a20;
      a[13] = a21;
      a[14] = a22 + lambda;
      a[18] = a30;
      a[19] = a31;
      a[20] = a32;
      a[21] = a33 + lambda;
      a[24] = a40;
      a[25] = a41;
      a[26] = a42;
      a[27] = a43;
      a[28] = a44 + lambda;
      a[30] = a50;
      a[31] = a51;
      a[32] = a52;
      a[33] = a53;
      a[34] = a54;
      a[35] = a55 + lambda;
      for (let r = 0; r < 6; r++) rhs[r] = r < 3 ? e[r] : L * e[r];
      if (!choleskySolve6(a, rhs)) return false;
      const y0 = rhs[0],
        y1 = rhs[1],
        y2 = rhs[2],
        y3 = rhs[3],
        y4 = rhs[4],
        y5 = rhs[5];
      for (let i = 0; i < n; i++)
        this.dq[i] =
          0 + J[i] * y0 + J[n + i] * y1 + J[2 * n + i] * y2 + J[3 * n + i] * y3 + J[4 * n + i] * y4 + J[5 * n + i] * y5;
      return true;
    }
    // n < 6: (JᵀJ + λI)Δq = Jᵀe.
    for (let i = 0; i < n; i++) {
      for (let k = 0; k <= i; k++) {
        let s = 0;
        for (let r = 0; r < 6; r++) s += J[r * n + i] * J[r * n + k];
        a[i * n + k] = s;
      }
      a[i * n + i] += lambda;
      let g = 0;
      for (let r = 0; r < 6; r++) g += J[r * n + i] * (r < 3 ? e[r] : L * e[r]);
      rhs[i] = g;
    }
    if (!choleskySolve(a, rhs, n)) return false;
    for (let i = 0; i < n; i++) this.dq[i] = rhs[i];
    return true;
  }

  private evaluate(q: Float64Array, frames: Float64Array, tcp: Float64Array, e: Float64Array): void {
    forwardKinematics(this.chain, q, tcp, frames);
    poseErrorVector(this.target, tcp, e);
  }

  private weightedEnergy(e: Float64Array): number {
    const L = this.tolerances.characteristicLength;
    return 0.5 * (e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + L * L * (e[3] * e[3] + e[4] * e[4] + e[5] * e[5]));
  }

  private accept(energy: number): void {
    let t: Float64Array = this.q;
    this.q = this.trialQ;
    this.trialQ = t;
    t = this.frames;
    this.frames = this.trialFrames;
    this.trialFrames = t;
    t = this.tcp;
    this.tcp = this.trialTcp;
    this.trialTcp = t;
    t = this.e;
    this.e = this.trialE;
    this.trialE = t;
    this.energy = energy;
    this.measure();
  }

  /** Unweighted position and rotation residuals of the current iterate. */
  private measure(): void {
    const e = this.e;
    this.posErr = Math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
    this.rotErr = Math.sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5]);
  }

  /** Uniform within limits; a revolute range wider than 2π is sampled over one turn inside it. */
  private randomSeed(rng: Rng): void {
    const c = this.chain;
    this.fkOfQ = false;
    for (let i = 0; i < this.n; i++) {
      let lo = c.lower[i],
        hi = c.upper[i];
      if (!c.prismatic[i] && !(hi - lo <= 2 * Math.PI)) {
        const centre = clamp(0, lo + Math.PI, hi - Math.PI);
        lo = centre - Math.PI;
        hi = centre + Math.PI;
      }
      this.q[i] = lo + (hi - lo) * rng.next();
    }
  }
}

function clamp(x: number, lo: number, hi: number): number {
  return Math.min(Math.max(x, lo), hi);
}

function allFinite(a: ArrayLike<number>, count: number): boolean {
  for (let i = 0; i < count; i++) if (!Number.isFinite(a[i])) return false;
  return true;
}
