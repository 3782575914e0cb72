// The motion planner: the one API the robot link layer calls. createPlanner compiles a robot or
// a multi-arm setup once; each plan call validates its request, plans, times, resamples to the
// controller rate and safety-checks the references it returns. Result codes, never exceptions.
import type { RobotDescription, SetupDescription } from '../../description/types.js';
import { type PlannerOptions, compileSetup } from './compiled.js';
import { planCartesian } from './cartesian.js';
import { planJoint, planStop } from './joint-space.js';
import type { Planner } from './types.js';

export type { PlannerOptions } from './compiled.js';
export type * from './types.js';

/** Throws only at set-up (more than two arms, mixed reference rates, bad options). */
export function createPlanner(description: RobotDescription | SetupDescription, options: PlannerOptions = {}): Planner {
  const setup = compileSetup(description, options);
  const mounted = setup.arms.map((a) => a.safety.held);
  return {
    name: setup.name,
    arms: setup.arms.map((a) => ({ name: a.name, joints: a.safety.chain.jointNames.slice() })),
    rate: setup.rate,
    hold: setup.hold,
    setGrasped: (grasped) =>
      setup.arms.forEach((a, i) => {
        const envelope = grasped.includes(a.name) ? a.robot.graspEnvelope : undefined;
        a.safety.held = envelope ?? mounted[i];
        a.safety.grasped = envelope !== undefined;
      }),
    planCartesian: (request) => guard(() => planCartesian(setup, request)),
    planJoint: (request) => guard(() => planJoint(setup, request)),
    planStop: (request) => guard(() => planStop(setup, request)),
  };
}

/** Last line of defence: a bug must refuse the plan, not crash the daemon or send anything. */
function guard(plan: () => ReturnType<Planner['planJoint']>): ReturnType<Planner['planJoint']> {
  try {
    return plan();
  } catch (err) {
    return { ok: false, code: 'internal-error', message: `planner error: ${(err as Error).message}` };
  }
}
