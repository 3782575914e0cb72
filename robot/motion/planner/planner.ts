// The motion planner: the one API the robot link layer calls. createPlanner compiles a robot or
// a multi-arm setup once; each plan call validates its request, plans, times, resamples to the
// controller rate and safety-checks the references it returns. Result codes, never exceptions.
import type { RobotDescription, SetupDescription } from '../../description/types.js';
import { type PlannerOptions, compileSetup } from './compiled.js';
import { planCartesian } from './cartesian.js';
import { planJoint, planStop } from './joint-space.js';
import type { Planner } from './types.js';
import { heldCapsule } from '../../safety/scene-bodies.js';

export type { PlannerOptions } from './compiled.js';
export type * from './types.js';

/** Throws only at set-up (more than two arms, mixed reference rates, bad options). */
export function createPlanner(description: RobotDescription | SetupDescription, options: PlannerOptions = {}): Planner {
  const setup = compileSetup(description, options);
  const mounted = setup.arms.map((a) => a.safety.held);
  const fixed = setup.envelope.obstacles ?? [];
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
        a.safety.heldBody = undefined;
      }),
    setScene: (scene) => {
      const env = setup.envelope;
      env.objects = scene?.objects;
      env.graspTolerance = scene?.graspTolerance;
      env.obstacles = scene ? [...fixed, ...scene.obstacles] : fixed;
      for (const { safety } of setup.arms) {
        const arm = scene?.arms[safety.name];
        const g = arm?.gripper ?? 0;
        safety.opening = safety.jaw ? safety.jaw.openWidth * Math.min(Math.max(g, 0), 1) : 0;
        safety.heldBody = arm?.held;
        if (arm?.held) safety.held = heldCapsule(arm.held);
      }
    },
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
