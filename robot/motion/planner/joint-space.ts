// Joint-space plans: a synchronised move to joint goals (every joint of every arm starts and
// stops together, at the slowest joint's minimum time) and a smooth stop or re-target from a
// moving state (each joint on its own time-optimal moving-start profile, so each stops as fast
// as it can; the arms' references then hold). Both are sampled at the controller rate and
// safety-checked like Cartesian moves.
import { JerkProfile, type TimingCode } from '../timing/profile.js';
import { type JointMove, planJointMove, sampleJointMove } from '../timing/joint-move.js';
import { movingToRest, stopFrom } from '../timing/moving-start.js';
import type { CompiledSetup } from './compiled.js';
import { type ArmSamples, finish, tickCount } from './references.js';
import { everyArm, failure, isFailure, jointGoals, jointVector } from './validate.js';
import type { ArmMotionState, JointRequest, PlanResult, PlanSummary, StopRequest } from './types.js';

export function planJoint(setup: CompiledSetup, request: JointRequest): PlanResult {
  if (typeof request !== 'object' || request === null)
    return failure('invalid-request', 'request must be an object with measured and goal');
  const q0 = everyArm(setup, request.measured, 'measured');
  if (isFailure(q0)) return q0;
  const goals = jointGoals(setup, request.goal, q0);
  if (isFailure(goals)) return goals;
  // All joints of all arms as one synchronised move: one common duration for everything.
  const start = concat(q0),
    end = concat(goals as Float64Array[]);
  const limits = setup.arms.flatMap((a) => a.rateLimits);
  const move = planJointMove(start, end, limits);
  if (!move.ok) return failure('timing', `joint move: ${move.message}`);
  return finish(setup, sampleMove(setup, move.move), move.move.duration, summary('joint'));
}

export function planStop(setup: CompiledSetup, request: StopRequest): PlanResult {
  if (typeof request !== 'object' || request === null)
    return failure('invalid-request', 'request must be an object with state');
  const state = request.state as Readonly<Record<string, ArmMotionState | undefined>> | undefined;
  const q0 = everyArm(setup, state, 'state', (s) => (s as ArmMotionState | null)?.q);
  if (isFailure(q0)) return q0;
  const v0: Float64Array[] = [],
    a0: Float64Array[] = [];
  for (const arm of setup.arms) {
    const s = state?.[arm.name] as ArmMotionState;
    const v = jointVector(arm, s.dq, 'state.dq');
    if (isFailure(v)) return v;
    const a = s.ddq === undefined ? new Float64Array(arm.dof) : jointVector(arm, s.ddq, 'state.ddq');
    if (isFailure(a)) return a;
    v0.push(v);
    a0.push(a);
  }
  const goals = jointGoals(
    setup,
    request.goal,
    setup.arms.map(() => null),
  );
  if (isFailure(goals)) return goals;
  const start = concat(q0);
  const end = new Float64Array(start.length);
  const profiles: JerkProfile[] = [];
  let duration = 0,
    off = 0;
  for (const [a, arm] of setup.arms.entries()) {
    for (let j = 0; j < arm.dof; j++, off++) {
      const prof = new JerkProfile();
      const { velocity: V, acceleration: A, jerk: J } = arm.rateLimits[j];
      const goal = goals[a];
      const code: TimingCode = goal
        ? movingToRest(goal[j] - start[off], v0[a][j], a0[a][j], V, A, J, prof)
        : stopFrom(v0[a][j], a0[a][j], V, A, J, prof);
      if (code !== 'ok')
        return failure('timing', `stop: arm "${arm.name}" joint "${arm.safety.chain.jointNames[j]}": ${code}`, {
          arm: arm.name,
          joint: arm.safety.chain.jointNames[j],
        });
      end[off] = goal ? goal[j] : start[off] + prof.p[prof.count];
      profiles.push(prof);
      duration = Math.max(duration, prof.duration);
    }
  }
  return finish(setup, sampleMove(setup, { duration, q0: start, q1: end, profiles }), duration, summary('stop'));
}

function summary(kind: PlanSummary['kind']): Omit<PlanSummary, 'samples' | 'minSelfDistance' | 'minArmDistance'> {
  return { kind, steps: 0, stepEnds: [], pathSamples: 0, extraStretch: 1, finalError: [] };
}

function concat(parts: readonly Float64Array[]): Float64Array {
  const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** All joints of all arms (concatenated) at ticks i / rate, split per arm; the last round(hold·rate) ticks hold. */
function sampleMove(setup: CompiledSetup, move: JointMove): ArmSamples[] {
  const count = tickCount(move.duration, setup.rate, setup.hold);
  const m = move.profiles.length;
  const q = new Float64Array(count * m),
    qd = new Float64Array(count * m),
    qdd = new Float64Array(count * m);
  for (let i = 0; i < count; i++) sampleJointMove(move, i / setup.rate, q, qd, qdd, i * m);
  let off = 0;
  return setup.arms.map((arm) => {
    const pick = (all: Float64Array): Float64Array => {
      const out = new Float64Array(count * arm.dof);
      for (let i = 0; i < count; i++) out.set(all.subarray(i * m + off, i * m + off + arm.dof), i * arm.dof);
      return out;
    };
    const samples = { count, q: pick(q), qd: pick(qd), qdd: pick(qdd) };
    off += arm.dof;
    return samples;
  });
}
