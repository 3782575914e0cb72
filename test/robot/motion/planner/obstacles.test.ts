import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSetup } from '../../../../robot/description/loader.js';
import type { SetupDescription } from '../../../../robot/description/types.js';
import { forwardKinematics } from '../../../../robot/kinematics/forward.js';
import { quat, quatFromTransform } from '../../../../robot/math/quaternion.js';
import { createPlanner, type PoseTarget } from '../../../../robot/motion/planner/planner.js';
import { planCartesianMotion } from '../../../../robot/tools/plan.js';
import { RobotModel } from '../../../../robot/tools/robot-model.js';
import { models, ok } from './checks.js';

/** dual-yam with a 2 cm ball 13 cm below the left TCP at READY, 1 cm clearance. */
function withBall(): SetupDescription {
  const r = loadSetup('dual-yam');
  assert.ok(r.ok);
  return {
    ...r.value,
    obstacles: [{ name: 'ball', shape: 'sphere', center: [0.39, 0.3, 0.26], radius: 0.02 }],
    obstacleClearance: 0.01,
  };
}

const READY = [0, 1, 1, 0, 0, 0];

test('planner and tools: a move into a declared obstacle is refused with code obstacle; one beside it is planned', () => {
  const setup = withBall();
  const T = forwardKinematics(models(setup).arms[0].chain, READY, new Float64Array(12));
  const Q = Array.from(quatFromTransform(quat(), T));
  const at = (x: number, y: number, z: number): PoseTarget => ({ position: [x, y, z], orientation: Q });
  const planner = createPlanner(setup);
  const measured = { left: READY, right: READY };
  // First a step to (0.39, 0.3, 0.39), then down through the ball.
  const down = planner.planCartesian({ measured, targets: { left: [at(0.39, 0.3, 0.39), at(0.39, 0.3, 0.22)] } });
  assert.ok(!down.ok && down.code === 'obstacle', JSON.stringify(down));
  assert.equal(down.arm, 'left');
  assert.equal(down.obstacle, 'ball');
  assert.equal(down.limit, 0.01);
  assert.ok(down.sample! > 0 && down.distance! < 0.01, JSON.stringify(down));
  assert.match(
    down.message,
    /^safety check of the references refused the plan: arm "left" (TCP|link "\w+") at sample \d+ is -?\d+\.\d mm from obstacle "ball", below the clearance 10\.0 mm$/,
  );
  // As far down, 15 cm to the side of the ball.
  ok(
    planner.planCartesian({ measured, targets: { left: [at(0.39, 0.15, 0.39), at(0.39, 0.15, 0.22)] } }),
    'beside the ball',
  );
  const tool = planCartesianMotion(new RobotModel(setup), measured, [
    { left: at(0.39, 0.3, 0.39), right: null },
    { left: at(0.39, 0.3, 0.22), right: null },
  ]);
  assert.ok(!tool.ok && tool.code === 'obstacle' && tool.arm === 'left', JSON.stringify(tool));
  assert.match(tool.message, /from obstacle "ball", below the clearance 10\.0 mm$/);
});
