// The last step of every plan: per-arm references on one time grid, then the safety check on
// exactly those samples (what is sent is what is checked). A violation becomes the plan's code.
import { type SafetyViolation, checkTrajectories } from '../../safety/trajectory-check.js';
import type { CompiledSetup } from './compiled.js';
import { failure } from './validate.js';
import { MAX_POINTS, MAX_TRAJECTORY_BYTES } from '../../link/protocol-schemas.js';
import { trajectoryBytesBound } from '../../link/trajectory-size.js';
import type { ArmReferences, PlanFailure, PlanResult, PlanSummary } from './types.js';

/** Positions, velocities, accelerations of one arm at ticks i / rate (count × dof). */
export interface ArmSamples {
  count: number;
  q: Float64Array;
  qd: Float64Array;
  qdd: Float64Array;
}

/** Ticks for a motion ending at `motionEnd` (the first at or past it carries the goal) plus the hold. */
export function tickCount(motionEnd: number, rate: number, hold: number): number {
  // 1e-9 absorbs rounding of motionEnd·rate (as resampleSegments).
  return Math.ceil(motionEnd * rate - 1e-9) + 1 + Math.round(hold * rate);
}

export function finish(
  setup: CompiledSetup,
  samples: ArmSamples[],
  duration: number,
  summary: Omit<PlanSummary, 'samples' | 'minSelfDistance' | 'minArmDistance'>,
): PlanResult {
  const count = samples[0].count;
  const size = sizeProblem(setup, samples, duration);
  if (size) return size;
  const t = new Float64Array(count);
  for (let i = 0; i < count; i++) t[i] = i / setup.rate;
  const arms: ArmReferences[] = setup.arms.map((arm, a) => ({
    arm: arm.name,
    joints: arm.safety.chain.jointNames.slice(),
    rate: setup.rate,
    count,
    t,
    q: samples[a].q,
    dq: samples[a].qd,
    ddq: samples[a].qdd,
  }));
  const check = checkTrajectories(
    setup.arms.map((a) => a.safety),
    arms.map((r) => ({ times: t, q: r.q, dq: r.dq, ddq: r.ddq })),
    setup.envelope,
  );
  if (!check.ok) return fromViolation(check.violation, check.message);
  return {
    ok: true,
    code: 'ok',
    duration,
    arms,
    summary: {
      ...summary,
      samples: count,
      minSelfDistance: check.minSelfDistance,
      minArmDistance: check.minArmDistance,
    },
  };
}

function fromViolation(v: SafetyViolation, message: string): PlanFailure {
  const msg = `safety check of the references refused the plan: ${message}`;
  switch (v.code) {
    case 'invalid-trajectory':
      return failure(v.code, msg, { arm: v.arm });
    case 'joint-position':
    case 'joint-velocity':
    case 'joint-acceleration':
    case 'joint-jerk':
      return failure(v.code, msg, { arm: v.arm, joint: v.joint, sample: v.sample, value: v.value, limit: v.limit });
    case 'workspace':
    case 'table':
      return failure(v.code, msg, { arm: v.arm, link: v.link, sample: v.sample, distance: v.distance });
    case 'obstacle':
      return failure(v.code, msg, {
        arm: v.arm,
        link: v.link,
        obstacle: v.obstacle,
        sample: v.sample,
        distance: v.distance,
        limit: v.clearance,
      });
    case 'object':
      return failure(v.code, msg, {
        arm: v.arm,
        link: v.link,
        object: v.object,
        sample: v.sample,
        distance: v.distance,
        limit: v.clearance,
      });
    case 'self-collision':
      return failure(v.code, msg, { arm: v.arm, links: v.links, sample: v.sample, distance: v.distance });
    case 'arm-collision':
      return failure(v.code, msg, {
        arm: v.arms[0],
        arms: v.arms,
        links: v.links,
        sample: v.sample,
        distance: v.distance,
        limit: v.clearance,
      });
  }
}

/** What is planned must fit one trajectory message per arm: points (the schema) and bytes (the broker's packet). */
function sizeProblem(setup: CompiledSetup, samples: ArmSamples[], duration: number): PlanFailure | null {
  const count = samples[0].count;
  const lasts = `the motion would last ${duration.toFixed(2)} s`;
  if (count > MAX_POINTS)
    return failure('too-long', `${lasts}, ${count} points at ${setup.rate} Hz, more than a trajectory's ${MAX_POINTS}`);
  for (const [a, arm] of setup.arms.entries()) {
    const s = samples[a];
    const bytes = trajectoryBytesBound(count, arm.dof, setup.rate, s.q, s.qd, s.qdd);
    if (bytes > MAX_TRAJECTORY_BYTES)
      return failure(
        'too-large',
        `${lasts}, ${count} points: arm ${arm.name}'s trajectory could take ${(bytes / 2 ** 20).toFixed(2)} MiB, more than a message's ${MAX_TRAJECTORY_BYTES / 2 ** 20} MiB`,
        { arm: arm.name, value: bytes, limit: MAX_TRAJECTORY_BYTES },
      );
  }
  return null;
}
