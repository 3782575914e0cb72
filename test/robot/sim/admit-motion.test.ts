// Defence in depth: the simulated controller refuses trajectories whose motion breaks the limits
// it describes or whose timing breaks the protocol's rules, whoever sent them, and does not move.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TrajectoryMsg, TrajectoryPoint } from '../../../robot/link/protocol.js';
import { loadSimRobot } from '../../../robot/sim/robot.js';
import { Harness } from './harness.js';

const L = ['l1', 'l2', 'l3'];

/** Sends the trajectory at t = 0.2 s and returns its events; the arms must not have moved 1 s later. */
function refused(points: TrajectoryPoint[], extra: Partial<TrajectoryMsg> = {}, arm = 'right'): string[] {
  const h = new Harness({ lag: 0, latency: 0 });
  h.run(0.2);
  const m = h.trajectory(arm, arm === 'right' ? ['r1'] : L, points, extra);
  h.send('trajectory', m);
  h.run(1.2);
  const s = h.lastState();
  assert.deepEqual([...s.arms.left!.q, ...s.arms.right!.q], [0, 0, 0, 0], 'an arm moved');
  return h.events(m.id).map((e) => `${e.event}:${e.reason}: ${e.detail}`);
}

test('a client publishing 10 rad/s against a 1 rad/s limit (positions only) is refused: velocity_limit', () => {
  const ev = refused([
    { t: 0, q: [0] },
    { t: 0.05, q: [0.5] },
  ]);
  assert.equal(ev.length, 1);
  assert.match(
    ev[0]!,
    /^rejected:velocity_limit: velocity of joint r1 \(q\[0\]\) between points\[0\] and points\[1\] is 10\.0000 rad\/s, above its limit 1 rad\/s/,
  );
});

test('velocities claimed as zero do not hide positions that move too fast: the mean over each segment counts', () => {
  const ev = refused([
    { t: 0, q: [0], dq: [0] },
    { t: 0.1, q: [0.2], dq: [0] },
    { t: 0.2, q: [0.4], dq: [0] },
  ]);
  assert.match(ev[0]!, /^rejected:velocity_limit: .* between points\[0\] and points\[1\] is 2\.0000 rad\/s/);
});

test('the cubic between points is checked: 0.9 rad/s on average but up to 1.35 rad/s inside the segment is refused', () => {
  const ev = refused([
    { t: 0, q: [0], dq: [0] },
    { t: 1, q: [0.9], dq: [0] },
  ]);
  assert.match(
    ev[0]!,
    /^rejected:velocity_limit: velocity of joint r1 \(q\[0\]\) at t = 0\.\d+ s \(between points\[0\] and points\[1\]\) is 1\.\d+ rad\/s/,
  );
});

test('a cubic that leaves the joint range between two points inside it is refused: joint_limit', () => {
  const ev = refused([
    { t: 0, q: [0.9], dq: [0.9] },
    { t: 1, q: [0.9], dq: [-0.9] },
  ]);
  assert.match(
    ev[0]!,
    /^rejected:joint_limit: q\[0\] = 1\.\d+ at t = 0\.\d+ s \(between points\[0\] and points\[1\]\) is outside \[-1, 1\] \(joint r1\)/,
  );
});

test('accelerations: finite differences of positions, and given ddq, above the limit are refused', () => {
  const fd = refused(
    [
      { t: 0, q: [0, 0, 0] },
      { t: 0.1, q: [0, 0.15, 0] },
      { t: 0.2, q: [0, 0.15, 0] },
    ],
    {},
    'left',
  );
  assert.match(
    fd[0]!,
    /^rejected:acceleration_limit: acceleration of joint l2 \(q\[1\]\) at points\[1\] \(finite difference\) is -15\.0000 rad\/s²/,
  );
  const z = [0, 0, 0];
  const given = refused(
    [
      { t: 0, q: z, dq: z, ddq: [0, 0, 20] },
      { t: 0.01, q: z, dq: z, ddq: z },
    ],
    {},
    'left',
  );
  assert.match(
    given[0]!,
    /^rejected:acceleration_limit: acceleration of joint l3 \(q\[2\]\) at t = 0\.0000 s .* is 20\.0000 rad\/s²/,
  );
});

test('time rules: start too late or too far ahead, deadline too far ahead, points too dense', () => {
  const move = [
    { t: 0, q: [0] },
    { t: 1, q: [0.1] },
  ];
  assert.match(
    refused(move, { start_time: -1 })[0]!,
    /^rejected:start_late: start_time -1 is 1\.200 s before controller time 0\.2/,
  );
  assert.match(
    refused(move, { start_time: 100 })[0]!,
    /^rejected:start_too_far: start_time 100 is more than 60 s after/,
  );
  assert.match(
    refused(move, { expires_at: 100 })[0]!,
    /^rejected:expiry_too_far: expires_at 100 is more than 60 s after/,
  );
  const dense = [
    { t: 0, q: [0] },
    { t: 0.0005, q: [0] },
    { t: 1, q: [0.1] },
  ];
  assert.match(
    refused(dense)[0]!,
    /^rejected:sample_spacing: points\[1\]\.t − points\[0\]\.t = 0\.000500 s is below the minimum spacing 0\.001 s/,
  );
});

test('at the limits (within the tolerance) a trajectory is accepted and followed', () => {
  const h = new Harness({ lag: 0, latency: 0 });
  h.run(0.2);
  // 1 rad/s exactly, then braking at 10 rad/s² exactly (finite differences).
  const m = h.trajectory(
    'right',
    ['r1'],
    [
      { t: 0, q: [0] },
      { t: 0.1, q: [0.1] },
      { t: 0.3, q: [0.3] },
      { t: 0.4, q: [0.3] },
    ],
  );
  h.send('trajectory', m);
  h.run(1.5);
  assert.deepEqual(h.eventNames(m.id), ['accepted', 'started', 'finished']);
});

test('the reported attack on yam: a trajectory published straight to the command topic at 8.6 rad/s (limit 0.6) is refused', () => {
  const yam = loadSimRobot('yam');
  const h = new Harness({ lag: 0, latency: 0 }, yam);
  h.run(0.2);
  const home = h.lastState().arms.arm!.q;
  const joints = yam.arms[0]!.joints.map((j) => j.name);
  const m = h.trajectory('arm', joints, [
    { t: 0, q: home },
    { t: 0.05, q: home.map((q, j) => (j === 0 ? q + 0.43 : q)) },
  ]);
  h.send('trajectory', m);
  h.run(1);
  assert.deepEqual(h.eventNames(m.id), ['rejected:velocity_limit']);
  assert.match(h.events(m.id)[0]!.detail!, /joint joint1 .* is 8\.6000 rad\/s, above its limit 0\.6 rad\/s/);
  assert.deepEqual(h.lastState().arms.arm!.q, home);
});
