// A plan is checked against what every gripper holds when it is made: no gripper is set while a
// motion is planned or runs, and no motion is planned while a gripper moves or waits to be set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Loopback } from './loopback.js';

const call = (name: string, args: object) => ({ name, arguments: args });

test('yam: set_gripper while move_to runs is busy, names the motion and the rule, and sends nothing', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  const { outcome } = await lb.started(call('move_to', { target: lb.poseFromHere('arm', 0.05, 0, 0) }));
  const g = await lb.exec.execute(call('set_gripper', { gripper: 0 }));
  assert.deepEqual([g.status, g.reason], ['busy', 'busy']);
  assert.match(
    g.message,
    /^Not done: arm arm is still moving or being planned \(move_to call-test-\d+\); no gripper is set while a motion runs, since its path was checked against what each gripper holds now; wait for its result or call stop\.$/,
  );
  assert.equal((await lb.outcome(outcome)).status, 'ok');
  assert.deepEqual(
    lb.sent.map((c) => c.type),
    ['trajectory'],
  );
});

test('a set_gripper waiting for a fresh state keeps a move out, and a move waiting keeps set_gripper out', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  lb.t += 0.3; // no state for 0.3 s: stale, so calls wait for the next one
  const grip = lb.exec.execute(call('set_gripper', { gripper: 0 }));
  const move = await lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.03, 0, 0) }));
  assert.deepEqual([move.status, move.reason], ['busy', 'busy']);
  assert.match(move.message, /^Not moved: the gripper of arm arm is still moving; a plan is checked against/);
  assert.equal((await lb.outcome(grip)).status, 'ok');
  assert.deepEqual(
    lb.sent.map((c) => c.type),
    ['gripper'],
  );

  const lb2 = new Loopback('yam');
  await lb2.run(0.3);
  lb2.t += 0.3;
  const moving = lb2.exec.execute(call('move_to', { target: lb2.poseFromHere('arm', 0.03, 0, 0) }));
  const g = lb2.exec.execute(call('set_gripper', { gripper: 0 }));
  const refused = await lb2.outcome(g);
  assert.deepEqual([refused.status, refused.reason], ['busy', 'busy'], refused.message);
  assert.match(refused.message, /arm arm is still moving or being planned \(move_to /);
  assert.equal((await lb2.outcome(moving)).status, 'ok');
  assert.deepEqual(
    lb2.sent.map((c) => c.type),
    ['trajectory'],
  );
});

test('dual-yam: a right gripper waiting to be set keeps a left move out (the left plan is checked against it)', async () => {
  const lb = new Loopback('dual-yam');
  await lb.run(0.3);
  const grip = lb.exec.execute(call('set_gripper', { positions: { left: null, right: 0 } }));
  await lb.run(0.01);
  const move = await lb.exec.execute(
    call('move_to', { target: { left: lb.poseFromHere('left', 0.03, 0, 0), right: null } }),
  );
  assert.deepEqual([move.status, move.reason], ['busy', 'busy']);
  assert.match(move.message, /the gripper of arm right is still moving/);
  assert.equal((await lb.outcome(grip)).status, 'ok');
});
