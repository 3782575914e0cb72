// Cartesian moves end to end: validate → per arm, straight-line segments (lerp + short-arc
// SLERP) solved by sequential IK from the measured joints → time scaling of every segment
// (jerk-limited progress profile, α stretch), step i of all arms synchronised to the slowest,
// resampled to the controller rate with a final hold → safety check of those references.
import { apart } from '../../common/format.js';
import { forwardKinematics } from '../../kinematics/forward.js';
import { poseDistance } from '../../kinematics/pose-error.js';
import { fromPose } from '../../math/quaternion.js';
import { type PathResult, type PoseTarget, sampleCartesianPath } from '../cartesian-path.js';
import type { JointPath } from '../timing/path-scaling.js';
import { planTiming } from '../timing/plan-timing.js';
import type { CompiledArm, CompiledSetup } from './compiled.js';
import { finish } from './references.js';
import { cartesianTargets, everyArm, failure, isFailure } from './validate.js';
import type { CartesianRequest, PlanFailure, PlanResult } from './types.js';

export function planCartesian(setup: CompiledSetup, request: CartesianRequest): PlanResult {
  if (typeof request !== 'object' || request === null)
    return failure('invalid-request', 'request must be an object with measured and targets');
  const measured = everyArm(setup, request.measured, 'measured');
  if (isFailure(measured)) return measured;
  const targets = cartesianTargets(setup, request.targets);
  if (isFailure(targets)) return targets;
  const paths: JointPath[][] = [];
  let pathSamples = 0;
  for (const [a, arm] of setup.arms.entries()) {
    const r = armSegments(arm, measured[a], targets.perArm[a]);
    if (isFailure(r)) return r;
    paths.push(r);
    pathSamples += r.reduce((sum, p) => sum + (p.samples - 1), 0);
  }
  const timing = planTiming(
    setup.arms.map((arm, a) => ({ segments: paths[a], limits: arm.rateLimits, tcp: arm.robot.tcpSpeed })),
    { rate: setup.rate, hold: setup.hold },
  );
  if (!timing.ok && timing.code === 'too_long') return failure('too-long', timing.message);
  if (!timing.ok) {
    const arm = setup.arms[timing.arm]?.name;
    return failure('timing', `time scaling failed (${timing.code}): ${timing.message}`, {
      arm,
      target: timing.segment >= 0 ? timing.segment : undefined,
    });
  }
  const finalError = setup.arms.flatMap((arm, a) => {
    const last = targets.perArm[a].findLast((t) => t !== null);
    if (!last) return [];
    const traj = timing.arms[a].trajectory;
    const tcp = forwardKinematics(
      arm.safety.chain,
      traj.q.subarray((traj.count - 1) * arm.dof, traj.count * arm.dof),
      new Float64Array(12),
    );
    return [{ arm: arm.name, ...poseDistance(fromPose(last.position, last.orientation), tcp) }];
  });
  let end = 0;
  const stepEnds = timing.arms[0].segments.map((seg) => (end += seg.duration));
  return finish(
    setup,
    timing.arms.map((t) => t.trajectory),
    timing.duration,
    { kind: 'cartesian', steps: targets.steps, stepEnds, pathSamples, extraStretch: timing.extraStretch, finalError },
  );
}

/** One joint path per step: the IK-solved segment to the step's target, or a hold. */
function armSegments(
  arm: CompiledArm,
  measured: Float64Array,
  targets: (PoseTarget | null)[],
): JointPath[] | PlanFailure {
  const steps = targets.map((t, k) => (t ? k : -1)).filter((k) => k >= 0);
  let path: PathResult | undefined;
  if (steps.length > 0) {
    path = sampleCartesianPath(
      arm.solver,
      measured,
      steps.map((k) => targets[k] as PoseTarget),
      { sampling: arm.robot.path, tcpSpeed: arm.robot.tcpSpeed },
    );
    if (path.code !== 'ok') return pathFailure(arm, path, steps);
  }
  const out: JointPath[] = [];
  let last = measured;
  let next = 0;
  for (const t of targets) {
    if (t === null || path?.code !== 'ok') {
      out.push(hold(last));
      continue;
    }
    const seg = path.segments[next++];
    out.push({ joints: arm.dof, samples: seg.points, q: seg.q, length: seg.length, rotation: seg.angle });
    last = seg.q.subarray((seg.points - 1) * arm.dof);
  }
  return out;
}

function hold(q: Float64Array): JointPath {
  const twice = new Float64Array(2 * q.length);
  twice.set(q, 0);
  twice.set(q, q.length);
  return { joints: q.length, samples: 2, q: twice, length: 0, rotation: 0 };
}

function pathFailure(arm: CompiledArm, r: Exclude<PathResult, { code: 'ok' }>, steps: number[]): PlanFailure {
  const name = arm.name;
  switch (r.code) {
    case 'unreachable': {
      const target = steps[r.target];
      const [pos, posLimit] = apart(r.positionError, arm.robot.ik.acceptPosition, 1000, ' mm', 1);
      const [rot, rotLimit] = apart(r.rotationError, arm.robot.ik.acceptRotation, 180 / Math.PI, '°', 2);
      return failure(
        'unreachable',
        `arm "${name}" target ${target}: no IK solution at path sample ${r.sample} (IK ${r.ik}; residual ${pos}, ` +
          `${rot}; accepted within ${posLimit}, ${rotLimit})`,
        { arm: name, target, sample: r.sample, distance: r.positionError },
      );
    }
    case 'joint-jump': {
      const target = steps[r.target];
      return failure(
        'joint-jump',
        `arm "${name}" target ${target}: joint "${r.joint}" jumps ${r.step.toFixed(3)} between path samples ${r.sample - 1} and ${r.sample} (IK branch switch)`,
        {
          arm: name,
          target,
          sample: r.sample,
          joint: r.joint,
          value: r.step,
        },
      );
    }
    case 'invalid-target':
      return failure('invalid-request', `arm "${name}" target ${steps[r.target] ?? r.target}: ${r.message}`, {
        arm: name,
        target: steps[r.target],
      });
    case 'invalid-start':
      return failure('invalid-request', `arm "${name}": ${r.message}`, { arm: name });
  }
}
