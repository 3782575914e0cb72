// Worker thread that plans motions (plan.ts) off the daemon's event loop: a plan of a long
// chunk takes tens of milliseconds, during which heartbeats, states and API calls must flow.
// Robot models are compiled once per robot, from the setup the daemon sends with a robot's first
// request (plan-thread.ts): the worker never reads config files, so it plans with exactly the
// limits the daemon's own model (stops, FK, settling, the controller check) has.
import { parentPort } from 'node:worker_threads';
import { planCartesianMotion, warmUpRequest, type PlanResult } from './plan.js';
import { RobotModel } from './robot-model.js';
import type { PlanRequest, PlanReply } from './plan-thread.js';

const models = new Map<string, RobotModel>();

function model(req: PlanRequest): RobotModel | null {
  if (req.setup && !models.has(req.robot)) models.set(req.robot, new RobotModel(req.setup));
  return models.get(req.robot) ?? null;
}

parentPort!.on('message', (req: PlanRequest) => {
  let result: PlanResult;
  try {
    const m = model(req);
    if (!m)
      result = {
        ok: false,
        code: 'planner_error',
        arm: null,
        message: `the planner has no setup for robot ${req.robot} (it is sent with the robot's first request)`,
      };
    else if (req.warmUp) {
      const w = warmUpRequest(m);
      for (let i = 0; i < 3; i++) planCartesianMotion(m, w.start, w.targets);
      result = { ok: false, code: 'invalid_target', arm: null, message: 'warm-up' };
    } else result = planCartesianMotion(m, req.start, req.targets, req.grasped, req.scene);
  } catch (err) {
    result = { ok: false, code: 'planner_error', arm: null, message: (err as Error).message };
  }
  const reply: PlanReply = { id: req.id, result };
  parentPort!.postMessage(reply, result.ok ? result.plan.arms.map((a) => a.q.buffer as ArrayBuffer) : []);
});
