// The daemon's own trajectories keep well inside what a controller enforces: planned moves on
// each robot, far enough to reach the velocity limits, pass the simulator's motion checks with
// a tenth of its tolerance (so the controller's checks never refuse a correct plan).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TrajectoryMsg } from '../../../robot/link/protocol.js';
import { checkRates } from '../../../robot/sim/admit-motion.js';
import { Loopback } from './loopback.js';

const call = (name: string, args: object) => ({ name, arguments: args });

/** The smallest relative tolerance (to 1e-4) under which the trajectory passes checkRates. */
function needed(lb: Loopback, m: TrajectoryMsg): number {
  const arm = lb.robotSpec.arms.find((a) => a.name === m.arm)!;
  if (!checkRates(m, arm, 0)) return 0;
  let lo = 0;
  let hi = 1;
  assert.equal(checkRates(m, arm, hi), null, 'fails even with 100 % tolerance');
  while (hi - lo > 1e-4) {
    const mid = (lo + hi) / 2;
    if (checkRates(m, arm, mid)) lo = mid;
    else hi = mid;
  }
  return hi;
}

for (const [robot, arm, d] of [
  ['yam', 'arm', [0.15, 0.1, -0.1]],
  ['ur5e', 'arm', [0.3, -0.2, -0.15]],
  ['panda', 'arm', [0.2, 0.15, -0.2]],
] as const) {
  test(`${robot}: a ${Math.hypot(...d).toFixed(2)} m move's trajectory passes the controller's limit checks`, async (t) => {
    const lb = new Loopback(robot);
    await lb.run(0.3);
    const o = await lb.outcome(lb.exec.execute(call('move_to', { target: lb.poseFromHere(arm, d[0], d[1], d[2]) })));
    const sent = lb.trajectories().map((c) => c.msg as TrajectoryMsg);
    assert.ok(sent.length >= 1);
    const worst = Math.max(...sent.map((m) => needed(lb, m)));
    t.diagnostic(`${robot}: outcome ${o.status}; tolerance needed ${worst}`);
    assert.ok(worst <= 0.002, `needs a tolerance of ${worst}`);
  });
}

test("the jerk-limited stop trajectory after a tracking fault (braking at the acceleration limits) passes the controller's checks", async (t) => {
  const lb = new Loopback('yam', {
    faults: [{ kind: 'tracking', at: 1.2, for: 0.2, joint: 1, offset: 0.2, p: 0, s: 0 }],
  });
  await lb.run(0.3);
  await lb.outcome(lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.06, 0, 0) })));
  const sent = lb.trajectories().map((c) => c.msg as TrajectoryMsg);
  assert.equal(sent.length, 2, 'the move and its stop trajectory');
  const worst = Math.max(...sent.map((m) => needed(lb, m)));
  t.diagnostic(`tolerance needed ${worst}`);
  assert.ok(worst <= 0.002, `needs a tolerance of ${worst}`);
});
