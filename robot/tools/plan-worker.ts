// Worker thread that plans motions (plan.ts) off the daemon's event loop: a plan of a long
// chunk takes tens of milliseconds, during which heartbeats, states and API calls must flow.
// Robot models are compiled once per (configs dir, config name).
import { parentPort } from 'node:worker_threads';
import { loadArms } from '../description/loader.js';
import { formatIssue } from '../common/validation/issue.js';
import { planCartesianMotion, warmUpRequest, type PlanResult } from './plan.js';
import { RobotModel } from './robot-model.js';
import type { PlanRequest, PlanReply } from './plan-thread.js';

const models = new Map<string, RobotModel>();

function model(robot: string, dir: string): RobotModel {
  const key = `${dir}\u0000${robot}`;
  let m = models.get(key);
  if (!m) {
    const r = loadArms(robot, dir);
    if (!r.ok) throw new Error(r.issues.map((i) => formatIssue(i)).join('; '));
    m = new RobotModel(r.value.setup);
    models.set(key, m);
  }
  return m;
}

parentPort!.on('message', (req: PlanRequest) => {
  let result: PlanResult;
  try {
    const m = model(req.robot, req.dir);
    if (req.warmUp) {
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
