// Violations an arm already has where a path starts. Sample 0 is the measured state: an arm
// planned onto a boundary (IK clamps onto joint limits, a plan may end touching the table) settles
// within its tolerance, maybe a hair past it, and a path from there must still be possible. So a
// check that finds a joint outside its limits, or a TCP / capsule / held object past the workspace
// box or the table plane, or two capsules closer than allowed, at sample 0 tolerates it as long as
// the path never makes it worse: its depth (how far past the boundary) never exceeds the smallest
// depth seen so far on the path, and once clear it must stay clear. A start deeper than the bound
// (a joint more than its settle tolerance outside, anything else more than START_DEPTH_LIMIT) is
// refused as before: the arm is outside its limits and needs an operator.

/** Deepest start violation of a distance check (m) a path may begin with. */
export const START_DEPTH_LIMIT = 0.01;
/** Floating-point noise allowed when comparing a depth with the one tolerated. */
const SLACK = 1e-9;

/**
 * clear: not violating. tolerated: violating no deeper than tolerated so far. worse: violating
 * deeper than tolerated (`allowed` says how deep it was allowed, -1 when not at all). beyond: at
 * sample 0, deeper than the bound.
 */
export type StartVerdict = 'clear' | 'tolerated' | 'worse' | 'beyond';

/** Per checked item (a joint, a link against the table, a capsule pair), the depth still tolerated. */
export class StartAllowance {
  /** -1: none (not violated at sample 0, or cleared since). */
  readonly allowed: Float64Array;

  constructor(count: number) {
    this.allowed = new Float64Array(count).fill(-1);
  }

  /** Item i is certainly clear at this sample. */
  clear(i: number): void {
    this.allowed[i] = -1;
  }

  /** Judges item i at sample k (samples in order, every item every sample), `depth` ≥ 0 when violating. */
  admit(i: number, k: number, violating: boolean, depth: number, bound: number): StartVerdict {
    if (!violating) {
      this.allowed[i] = -1;
      return 'clear';
    }
    if (k === 0) {
      if (depth > bound) return 'beyond';
      this.allowed[i] = depth;
      return 'tolerated';
    }
    const a = this.allowed[i];
    if (a < 0 || depth > a + SLACK) return 'worse';
    this.allowed[i] = Math.min(a, depth);
    return 'tolerated';
  }
}
