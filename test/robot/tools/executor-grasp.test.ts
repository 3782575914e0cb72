// What the executor believes a gripper holds comes from its own gripper commands: an event for
// an id it never sent is counted and ignored, a late `finished` of an older command does not undo
// a newer grasp, and a restarted controller starts with nothing held.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EventMsg, GripperMsg } from '../../../robot/link/protocol.js';
import { Loopback } from './loopback.js';

const call = (name: string, args: object) => ({ name, arguments: args });
// Pointing down, 3 cm above the table: only an arm holding an object is refused there.
const low = { poses: [{ pose_xyzquat: [0.3, 0, 0.03, 0, 1, 0, 0] }] };
const finished = (id: string, arm: string | null, reason?: string): EventMsg => ({
  v: 1,
  seq: 9999,
  time: 0,
  id,
  arm,
  command: 'gripper',
  event: 'finished',
  ...(reason ? { reason } : {}),
});

/** A Loopback whose controller reports every gripper `finished` as a grasp while `grasp()` says so. */
function grasping(grasp: () => boolean): Loopback {
  const lb = new Loopback('yam');
  lb.edit = (type, p) => {
    if (type === 'events' && p.command === 'gripper' && p.event === 'finished' && grasp()) p.reason = 'grasped';
  };
  return lb;
}

test('a gripper event for an id the daemon never sent is counted and changes nothing', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  const before = lb.session.invalid;
  lb.session.onEvent(finished('anything', 'arm', 'grasped'), lb.t);
  lb.session.onEvent(finished('g-forged', 'constructor', 'grasped'), lb.t);
  assert.equal(lb.session.invalid, before + 2);
  assert.equal(
    lb.session.lastInvalid,
    'event.id: must name a gripper command this daemon sent (the newest 256), got "g-forged"',
  );
  const o = await lb.outcome(lb.exec.execute(call('check_path', low)));
  assert.equal(o.status, 'ok', o.message);
  const moved = await lb.outcome(lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.02, 0, 0) })));
  assert.equal(moved.status, 'ok', moved.message);
});

test('a late finished of an older gripper command does not clear the grasp of a newer one', async () => {
  let grasp = false;
  const lb = grasping(() => grasp);
  await lb.run(0.3);
  assert.equal((await lb.outcome(lb.exec.execute(call('set_gripper', { gripper: 0.6 })))).status, 'ok');
  grasp = true;
  const closed = await lb.outcome(lb.exec.execute(call('set_gripper', { gripper: 0 })));
  assert.deepEqual(closed.grasped, { arm: true });
  const [older] = lb.sent.filter((c) => c.type === 'gripper').map((c) => (c.msg as GripperMsg).id);
  lb.session.onEvent(finished(older!, 'arm'), lb.t); // repeated late, without `grasped`
  const o = await lb.outcome(lb.exec.execute(call('check_path', low)));
  assert.equal(o.status, 'infeasible', o.message);
  assert.match(o.message, /held object "grasped"/);
});

test('a restarted controller starts with nothing held', async () => {
  const lb = grasping(() => true);
  await lb.run(0.3);
  const closed = await lb.outcome(lb.exec.execute(call('set_gripper', { gripper: 0 })));
  assert.deepEqual(closed.grasped, { arm: true });
  lb.session.onDescription({ ...lb.sim.description(lb.t + 1000), session: 'sim-2' }, lb.t);
  await lb.run(0.3);
  const o = await lb.outcome(lb.exec.execute(call('check_path', low)));
  assert.equal(o.status, 'ok', o.message);
});
