// The executor holds still on doubt: a gripper command waiting for a fresh state yields to a stop,
// a plan made before a controller restart is not sent, a move waits for a closing gripper and for
// every other arm to rest, a grasp reported after its call ended still counts, and a smooth stop
// that nobody accepts gives way to the controller's own stop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TrajectoryMsg } from '../../../robot/link/protocol.js';
import { Loopback } from './loopback.js';

const call = (name: string, args: object) => ({ name, arguments: args });
// Pointing down, 3 cm above the table: only an arm holding an object is refused there.
const low = { poses: [{ pose_xyzquat: [0.3, 0, 0.03, 0, 1, 0, 0] }] };

test('a set_gripper waiting for a fresh state is cancelled by a stop that comes meanwhile', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  lb.t += 0.25; // no state for 250 ms: stale (limit 200 ms), the call waits for a fresh one
  const grip = lb.exec.execute(call('set_gripper', { gripper: 0.2 }));
  await Promise.resolve();
  const stop = lb.exec.stop('user');
  const o = await lb.outcome(grip);
  assert.deepEqual([o.status, o.reason], ['stopped', 'stop'], o.message);
  assert.equal((await lb.outcome(stop)).status, 'ok');
  assert.deepEqual(
    lb.sent.map((c) => c.type),
    ['stop'],
    'no gripper command after the stop',
  );
});

test('a plan that finishes after the controller restarted is not sent', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  const exec = lb.exec as unknown as { planner: (...a: unknown[]) => Promise<unknown> };
  const plan = exec.planner;
  exec.planner = async (...a) => (await gate, plan(...a));
  const move = lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.03, 0, 0) }));
  await lb.run(0.05);
  lb.session.onDescription({ ...lb.sim.description(lb.t + 1000), session: 'sim-2' }, lb.t);
  await lb.run(0.3); // the new session's states arrive: nothing is stale
  release();
  const o = await lb.outcome(move);
  assert.equal(o.status, 'unavailable', o.message);
  assert.equal(o.reason, 'controller_restarted');
  assert.equal(
    lb.sent.filter((c) => c.type === 'trajectory').length,
    0,
    'nothing planned for the old session was sent',
  );
});

test('a move waits for its arm’s closing gripper; a grasp reported after the call gave up still counts', async () => {
  const lb = new Loopback('yam', {}, { gripperTimeout: 0.05 });
  lb.edit = (type, p) => {
    if (type === 'events' && p.command === 'gripper' && p.event === 'finished') p.reason = 'grasped';
  };
  await lb.run(0.3);
  const grip = await lb.outcome(lb.exec.execute(call('set_gripper', { gripper: 0 })));
  assert.deepEqual([grip.status, grip.reason], ['failed', 'no_answer'], grip.message);
  await lb.run(2); // the gripper goes on closing and reports the grasp
  const holding = await lb.outcome(lb.exec.execute(call('check_path', low)));
  assert.equal(holding.status, 'infeasible', holding.message);
  assert.match(holding.message, /held object "grasped"/);

  const lb2 = new Loopback('yam');
  await lb2.run(0.3);
  const closing = lb2.exec.execute(call('set_gripper', { gripper: 0.1 }));
  await lb2.run(0.05);
  const move = await lb2.exec.execute(call('move_to', { target: lb2.poseFromHere('arm', 0.02, 0, 0) }));
  assert.deepEqual([move.status, move.reason], ['busy', 'busy']);
  assert.match(move.message, /the gripper of arm arm is still moving/);
  assert.equal((await lb2.outcome(closing)).status, 'ok');
});

test('dual-yam: a move is busy while the other arm still follows a trajectory the daemon does not watch', async () => {
  const lb = new Loopback('dual-yam');
  lb.edit = (type, p) => {
    if (type === 'state')
      Object.assign((p.arms as Record<string, object>).right!, { mode: 'follow', trajectory: 't-elsewhere' });
  };
  await lb.run(0.3);
  const o = await lb.outcome(
    lb.exec.execute(call('move_to', { target: { left: lb.poseFromHere('left', 0.02, 0, 0), right: null } })),
  );
  assert.equal(o.status, 'busy', o.message);
  assert.match(o.message, /arm right is still following a trajectory/);
  assert.equal(lb.sent.length, 0);
});

test('a smooth stop that no controller accepts gives way to the controller’s own stop', async () => {
  const lb = new Loopback('yam', {
    faults: [{ kind: 'tracking', at: 1.2, for: Infinity, joint: 1, offset: 0.2, p: 0, s: 0 }],
  });
  await lb.run(0.3);
  // Every trajectory after the first (the stop's) is lost on the way.
  const receive = lb.sim.receive.bind(lb.sim);
  let trajectories = 0;
  lb.sim.receive = (t, type, msg) => {
    if (type === 'trajectory' && trajectories++ > 0) return;
    receive(t, type, msg);
  };
  const o = await lb.outcome(lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.06, 0, 0) })));
  assert.equal(o.reason, 'tracking_error');
  assert.deepEqual(
    lb.sent.map((c) => c.type),
    ['trajectory', 'trajectory', 'stop'],
  );
  const brake = lb.sent[1]!.msg as TrajectoryMsg;
  const stopAt = lb.sent[2]!;
  assert.ok(stopAt.type === 'stop');
  assert.ok(
    lb.events.every((e) => e.id !== brake.id),
    'the controller never saw the smooth stop',
  );
  assert.ok(Math.max(...o.arms!.arm!.dq.map(Math.abs)) < 0.05, 'at rest by the controller’s stop');
});

test('a grasp counts when the controller’s event names no arm (the command id says which)', async () => {
  const lb = new Loopback('yam');
  lb.edit = (type, p) => {
    if (type === 'events' && p.command === 'gripper' && p.event === 'finished')
      Object.assign(p, { reason: 'grasped', arm: null });
  };
  await lb.run(0.3);
  const grip = await lb.outcome(lb.exec.execute(call('set_gripper', { gripper: 0 })));
  assert.equal(grip.status, 'ok', grip.message);
  const holding = await lb.outcome(lb.exec.execute(call('check_path', low)));
  assert.equal(holding.status, 'infeasible', holding.message);
});

test('dual-yam: a move right after another arm’s motion ended on its stop is not refused for a state that lags', async () => {
  const lb = new Loopback('dual-yam');
  await lb.run(0.3);
  const { outcome: left } = await lb.started(
    call('move_to', { target: { left: lb.poseFromHere('left', 0.05, 0, -0.05), right: null } }),
  );
  await lb.run(0.2);
  void lb.exec.stop('user', undefined, 'left');
  assert.equal((await lb.outcome(left)).status, 'stopped');
  const right = await lb.outcome(
    lb.exec.execute(call('move_to', { target: { left: null, right: lb.poseFromHere('right', 0, 0.02, 0) } })),
  );
  assert.equal(right.status, 'ok', right.message);
});
