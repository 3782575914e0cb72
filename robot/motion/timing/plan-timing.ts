// Timing of a whole request for one or two arms: every segment time-scaled, dual-arm segments
// synchronised, everything resampled to the controller rate with a final hold. What is sent is
// what is checked: the resampled references are differenced again, their dq, ddq and one-tick
// differences of ddq are compared too (what a controller may enforce), and if a joint rate still
// exceeds its limit (sparse samples, spline curvature), all segments of all arms are stretched together.
import type { RateLimits } from './joint-move.js';
import { limitRatios, sentRatios, stretchFactor, worseRatios } from './limit-ratios.js';
import { type JointPath, type TcpLimits, type TimedSegment, timePath } from './path-scaling.js';
import { type SampledTrajectory, resampleSegments } from './resample.js';
import { stretchSegment, synchroniseArms } from './dual-arm.js';
import { MAX_POINTS } from '../../link/protocol-schemas.js';

export interface ArmTimingRequest {
  segments: JointPath[];
  limits: RateLimits[];
  tcp: TcpLimits;
}

export interface TimingOptions {
  /** Controller reference rate (Hz) and hold at the final position (s). */
  rate: number;
  hold: number;
}

export interface ArmTiming {
  segments: TimedSegment[];
  trajectory: SampledTrajectory;
}

export type TimingPlanResult =
  | { ok: true; arms: ArmTiming[]; duration: number; extraStretch: number }
  | {
      ok: false;
      code:
        | 'invalid_path'
        | 'invalid_limits'
        | 'invalid_options'
        | 'segment_count_mismatch'
        | 'limits_exceeded'
        | 'too_long';
      arm: number;
      segment: number;
      message: string;
    };

/** Largest number of re-stretches of the resampled references before giving up. */
const MAX_RESTRETCH = 4;
/** Consecutive segments must join: last sample of one = first of the next (rad or m). */
const JOIN_TOLERANCE = 1e-9;

export function planTiming(request: readonly ArmTimingRequest[], opts: TimingOptions): TimingPlanResult {
  if (!(opts.rate > 0 && opts.rate < Infinity) || !(opts.hold >= 0 && opts.hold < Infinity)) {
    return fail(
      'invalid_options',
      -1,
      -1,
      `rate must be finite and > 0 and hold finite and ≥ 0, got rate ${opts.rate}, hold ${opts.hold}`,
    );
  }
  if (request.length < 1 || request.length > 2)
    return fail('invalid_options', -1, -1, `need 1 or 2 arms, got ${request.length}`);
  let timed: TimedSegment[][] = [];
  for (let a = 0; a < request.length; a++) {
    const arm = request[a];
    if (arm.segments.length === 0) return fail('invalid_path', a, -1, `arm ${a} has no segments`);
    const segs: TimedSegment[] = [];
    for (let i = 0; i < arm.segments.length; i++) {
      const r = timePath(arm.segments[i], arm.limits, arm.tcp);
      if (!r.ok) return fail(r.code, a, i, `arm ${a} segment ${i}: ${r.message}`);
      if (i > 0) {
        const gap = joinGap(arm.segments[i - 1], arm.segments[i]);
        if (gap > JOIN_TOLERANCE) {
          return fail(
            'invalid_path',
            a,
            i,
            `arm ${a} segment ${i} must start where segment ${i - 1} ends (within ${JOIN_TOLERANCE}), off by ${gap}`,
          );
        }
      }
      segs.push(r.segment);
    }
    timed.push(segs);
  }
  if (timed.length === 2) {
    const sync = synchroniseArms(timed[0], timed[1]);
    if (!sync.ok) return fail(sync.code, -1, -1, sync.message);
    timed = [sync.left, sync.right];
  }
  let extra = 1;
  // Stretching keeps every segment's path and progress samples, so their splines carry over.
  const curvatures: (Float64Array | undefined)[][] = timed.map(() => []);
  for (let round = 0; ; round++) {
    // A message carries at most MAX_POINTS points: refuse before resampling (the planner's
    // finish() checks the exact count with the hold).
    const duration = timed[0].reduce((sum, seg) => sum + seg.duration, 0);
    if (!(duration * opts.rate < MAX_POINTS)) {
      const s = duration.toFixed(2);
      const points = Math.ceil(duration * opts.rate);
      return fail(
        'too_long',
        -1,
        -1,
        `the motion would last ${s} s, ${points} points at ${opts.rate} Hz, more than a trajectory's ${MAX_POINTS}`,
      );
    }
    const trajectories = timed.map((segs, a) => resampleSegments(segs, opts.rate, opts.hold, curvatures[a]));
    let worst = 1,
      worstArm = 0;
    for (let a = 0; a < trajectories.length; a++) {
      const f = stretchFactor(tickRatios(trajectories[a], request[a].limits));
      if (f > worst) {
        worst = f;
        worstArm = a;
      }
    }
    if (worst === 1) {
      const arms = timed.map((segments, a) => ({ segments, trajectory: trajectories[a] }));
      return { ok: true, arms, duration: trajectories[0].motionEnd, extraStretch: extra };
    }
    if (round === MAX_RESTRETCH) {
      const r = tickRatios(trajectories[worstArm], request[worstArm].limits);
      return fail(
        'limits_exceeded',
        worstArm,
        -1,
        `arm ${worstArm} joint ${r.joint} at tick ${r.sample}: the references' rates exceed limits ` +
          `(velocity ×${r.velocity.toPrecision(4)}, acceleration ×${r.acceleration.toPrecision(4)}, ` +
          `jerk ×${r.jerk.toPrecision(4)}) after ${MAX_RESTRETCH} stretches`,
      );
    }
    // Differences at ticks see a sharp peak only where a tick falls near it, so a re-stretch by
    // exactly the seen ratio can uncover the next one; from the second round on stretch ≥ 1% more each round.
    const f = Math.max(worst, 1 + 0.01 * round);
    extra *= f;
    timed = timed.map((segs) => segs.map((seg) => stretchSegment(seg, seg.duration * f)));
  }
}

/** Largest joint difference between the end of one segment and the start of the next. */
function joinGap(prev: JointPath, next: JointPath): number {
  if (prev.joints !== next.joints) return Infinity;
  const m = prev.joints,
    last = (prev.samples - 1) * m;
  let gap = 0;
  for (let j = 0; j < m; j++) gap = Math.max(gap, Math.abs(prev.q[last + j] - next.q[j]));
  return gap;
}

/** Tick times, reused: rewritten up to the count for every call (the rate may change). */
let ticks = new Float64Array(0);

function tickRatios(traj: SampledTrajectory, limits: readonly RateLimits[]) {
  if (ticks.length < traj.count) ticks = new Float64Array(2 * traj.count);
  for (let i = 0; i < traj.count; i++) ticks[i] = i / traj.rate;
  const differenced = limitRatios(ticks, traj.q, traj.count, traj.joints, limits);
  return worseRatios(differenced, sentRatios(traj.qd, traj.qdd, traj.count, traj.joints, traj.rate, limits));
}

function fail(
  code: Exclude<TimingPlanResult, { ok: true }>['code'],
  arm: number,
  segment: number,
  message: string,
): TimingPlanResult {
  return { ok: false, code, arm, segment, message };
}
