// The executor against an in-memory simulated controller on a simulated clock: moves reach and
// settle, a held arm stays put, grippers, plan-only checks, stop, busy, and every failure path.
import { test } from 'node:test';
import { loadArms } from '../../../robot/description/loader.js';
import assert from 'node:assert/strict';
import type { TrajectoryMsg } from '../../../robot/link/protocol.js';
import { stoppedBy } from '../../../robot/tools/motion.js';
import { Loopback } from './loopback.js';

const call = (name: string, args: object) => ({ name, arguments: args });

test('move_to: one trajectory, accepted → started → finished, settled at the target; the result names pose error, duration and joints', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  const target = lb.poseFromHere('arm', 0.04, 0.03, -0.03);
  const progress: string[] = [];
  const o = await lb.outcome(lb.exec.execute(call('move_to', { target }), (phase) => progress.push(phase)));
  assert.equal(o.status, 'ok', o.message);
  assert.equal(o.reached, true);
  assert.equal(lb.trajectories().length, 1);
  const arm = o.arms!.arm!;
  assert.ok(arm.pose_error!.position_m < 0.002, `position error ${arm.pose_error!.position_m} m`);
  assert.ok(arm.pose_error!.rotation_deg < 1, `rotation error ${arm.pose_error!.rotation_deg}°`);
  assert.equal(arm.settled, true);
  arm.tcp.slice(0, 3).forEach((x, i) => assert.ok(Math.abs(x - target.pose_xyzquat[i]!) < 0.002, `tcp[${i}] ${x}`));
  assert.ok(o.duration_s! > o.plan!.duration_s, `took ${o.duration_s} s for a ${o.plan!.duration_s} s plan`);
  assert.deepEqual(progress, ['validated', 'planned', 'sent', 'accepted', 'started', 'finished', 'settled']);
  assert.match(o.message, /^Reached the target \(TCP \d+\.\d mm and \d+\.\d\d° from the goal\) in \d+\.\d\d s\.$/);
  const id = (lb.trajectories()[0]!.msg as { id: string }).id;
  assert.deepEqual(
    lb.events.filter((e) => e.id === id).map((e) => e.event),
    ['accepted', 'started', 'finished'],
  );
});

test('move_eef_chunk through three poses ends at the last; the trajectory starts at the measured joints', async () => {
  const lb = new Loopback('ur5e');
  await lb.run(0.3);
  const q0 = lb.session.latest!.arms.arm!.q;
  const poses = [
    lb.poseFromHere('arm', 0.03, 0, 0),
    lb.poseFromHere('arm', 0.03, 0.03, 0),
    lb.poseFromHere('arm', 0, 0.03, -0.02),
  ];
  const o = await lb.outcome(lb.exec.execute(call('move_eef_chunk', { poses })));
  assert.equal(o.status, 'ok', o.message);
  const tcp = o.arms!.arm!.tcp;
  poses[2]!.pose_xyzquat.slice(0, 3).forEach((x, i) => assert.ok(Math.abs(tcp[i]! - x) < 0.002));
  const sent = lb.trajectories()[0]!.msg as { points: { t: number; q: number[] }[] };
  sent.points[0]!.q.forEach((q, j) =>
    assert.ok(Math.abs(q - q0[j]!) <= 5e-8, `first point joint ${j}: ${q} vs ${q0[j]}`),
  );
});

test('dual-yam: the left arm moves, the held right arm gets no trajectory and does not move', async () => {
  const lb = new Loopback('dual-yam');
  await lb.run(0.3);
  const right0 = [...lb.session.latest!.arms.right!.q];
  const target = { left: lb.poseFromHere('left', 0.03, 0.02, -0.02), right: null };
  const o = await lb.outcome(lb.exec.execute(call('move_to', { target })));
  assert.equal(o.status, 'ok', o.message);
  assert.deepEqual(
    lb.trajectories().map((c) => (c.msg as { arm: string }).arm),
    ['left'],
  );
  assert.equal(o.arms!.left!.settled, true);
  assert.equal(o.arms!.right!.pose_error, undefined);
  for (const s of lb.states)
    s.arms.right!.q.forEach((q, j) => assert.equal(q, right0[j], `right joint ${j} moved at ${s.time}`));
});

test('the published positions keep every joint within its jerk limit by third differences', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  const o = await lb.outcome(lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.05, 0, 0) })));
  assert.equal(o.status, 'ok', o.message);
  const arms = loadArms('yam');
  assert.ok(arms.ok);
  const joints = arms.value.setup.arms[0]!.robot.joints;
  for (const c of lb.trajectories()) {
    const { points } = c.msg as { points: { t: number; q: number[] }[] };
    for (let k = 3; k < points.length; k++) {
      const dt = points[k]!.t - points[k - 1]!.t;
      joints.forEach((jt, j) => {
        const d3 = points[k]!.q[j]! - 3 * points[k - 1]!.q[j]! + 3 * points[k - 2]!.q[j]! - points[k - 3]!.q[j]!;
        const jerk = Math.abs(d3) / dt ** 3;
        assert.ok(jerk <= jt.limits.jerk, `${jt.name} at point ${k}: ${jerk} rad/s³ > ${jt.limits.jerk}`);
      });
    }
  }
});

test('dual-yam: both arms move together, one trajectory each with the same start time', async () => {
  const lb = new Loopback('dual-yam');
  await lb.run(0.3);
  const target = { left: lb.poseFromHere('left', 0.02, 0, 0), right: lb.poseFromHere('right', 0, -0.03, 0.02) };
  const o = await lb.outcome(lb.exec.execute(call('move_to', { target })));
  assert.equal(o.status, 'ok', o.message);
  const [a, b] = lb.trajectories().map((c) => c.msg as { start_time: number; points: unknown[] });
  assert.equal(a!.start_time, b!.start_time);
  assert.equal(a!.points.length, b!.points.length);
});

test('dual-yam: a stop of one arm of a two-arm motion stops both; neither is left moving unwatched', async () => {
  const lb = new Loopback('dual-yam');
  await lb.run(0.3);
  const target = { left: lb.poseFromHere('left', 0.05, 0, -0.05), right: lb.poseFromHere('right', -0.05, 0, 0.1) };
  const moving = lb.exec.execute(call('move_to', { target }));
  await lb.until(() => lb.events.some((e) => e.event === 'started'), 2);
  await lb.run(0.3);
  const stop = await lb.outcome(lb.exec.stop('user', undefined, 'left'));
  assert.equal(stop.status, 'ok', stop.message);
  assert.equal(stop.message, 'Stopped: every arm is at rest.');
  assert.equal((lb.sent.at(-1)!.msg as { arm: string | null }).arm, null, 'one stop for both arms');
  const o = await lb.outcome(moving);
  assert.equal(o.status, 'stopped');
  for (const a of ['left', 'right']) assert.ok(Math.max(...o.arms![a]!.dq.map(Math.abs)) < 0.05, `${a} at rest`);
  // Each arm's distance from its goal, named.
  assert.match(
    o.message,
    /^Not reached: stopped by a stop call\. The TCPs are [\d.]+ mm and [\d.]+° \(arm left\), [\d.]+ mm and [\d.]+° \(arm right\) from their goals\.$/,
  );
  const rest = [...lb.session.latest!.arms.right!.q];
  await lb.run(1);
  lb.session.latest!.arms.right!.q.forEach((q, j) =>
    assert.ok(Math.abs(q - rest[j]!) < 1e-3, `right joint ${j} moved ${q - rest[j]!}`),
  );
});

test('a stop says who sent it: the daemon stopping, a caller gone, an episode, or a stop call', async () => {
  assert.equal(stoppedBy('user'), 'stopped by a stop call');
  assert.equal(stoppedBy('policy_robot_stop'), 'stopped by a stop call');
  assert.equal(stoppedBy('policy_daemon_stop'), 'stopped because the daemon is stopping');
  assert.equal(stoppedBy('client_disconnected'), 'stopped because its caller disconnected');
  assert.equal(stoppedBy('policy_operator'), 'stopped as its policy episode was stopped (operator)');
  const lb = new Loopback('yam');
  await lb.run(0.3);
  const moving = lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.04, 0.03, -0.03) }));
  await lb.until(() => lb.events.some((e) => e.event === 'started'), 2);
  await lb.run(0.2);
  const stop = await lb.outcome(lb.exec.stop('daemon_stop'));
  assert.equal(stop.status, 'ok', stop.message);
  const o = await lb.outcome(moving);
  assert.equal(o.status, 'stopped', o.message);
  assert.match(o.message, /^Not reached: stopped because the daemon is stopping\. The TCP is /);
});

test('set_gripper: the gripper moves to the commanded opening; an arm without a gripper is refused', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  const o = await lb.outcome(lb.exec.execute(call('set_gripper', { gripper: 0.25 })));
  assert.equal(o.status, 'ok', o.message);
  assert.ok(Math.abs(o.arms!.arm!.gripper! - 0.25) < 1e-9, `gripper ${o.arms!.arm!.gripper}`);
  assert.deepEqual(o.gripper, { arm: 0.25 });
  const dual = new Loopback('dual-yam');
  await dual.run(0.3);
  const both = await dual.outcome(dual.exec.execute(call('set_gripper', { positions: { left: 0, right: null } })));
  assert.equal(both.status, 'ok', both.message);
  assert.equal(both.arms!.left!.gripper, 0);
  assert.equal(both.arms!.right!.gripper, 1);
});

test('dual-yam while the left arm moves: a right move and the right gripper are busy; a plan check runs; a repeated gripper command is busy', async () => {
  const lb = new Loopback('dual-yam');
  await lb.run(0.3);
  const { outcome: moving } = await lb.started(
    call('move_to', { target: { left: lb.poseFromHere('left', 0.05, 0, -0.05), right: null } }),
  );
  const move = await lb.exec.execute(
    call('move_to', { target: { left: null, right: lb.poseFromHere('right', 0, 0.02, 0) } }),
  );
  assert.equal(move.status, 'busy', move.message);
  const check = await lb.outcome(
    lb.exec.execute(call('check_path', { poses: [{ left: null, right: lb.poseFromHere('right', 0, 0.02, 0) }] })),
  );
  assert.equal(check.status, 'ok', check.message);
  // The left path was checked against what the right gripper holds now.
  const early = await lb.exec.execute(call('set_gripper', { positions: { left: null, right: 0.3 } }));
  assert.deepEqual([early.status, early.reason], ['busy', 'busy']);
  assert.match(
    early.message,
    /^Not done: arm left is still moving or being planned \(move_to call-test-\d+\); no gripper is set while a motion runs/,
  );
  assert.equal((await lb.outcome(moving)).status, 'ok');
  const grip = lb.exec.execute(call('set_gripper', { positions: { left: null, right: 0.3 } }));
  await lb.run(0.01);
  const again = await lb.exec.execute(call('set_gripper', { positions: { left: null, right: 0.6 } }));
  assert.equal(again.status, 'busy', 'the same gripper is still moving');
  assert.equal((await lb.outcome(grip)).status, 'ok');
});

test('check_path plans without sending anything; unreachable and out-of-workspace poses are infeasible with the reason', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  const ok = await lb.outcome(lb.exec.execute(call('check_path', { poses: [lb.poseFromHere('arm', 0.02, 0, 0)] })));
  assert.equal(ok.status, 'ok', ok.message);
  assert.ok(ok.plan!.duration_s > 0);
  const down = [0, 0.7071068, 0, 0.7071068];
  const far = await lb.outcome(
    lb.exec.execute(call('check_path', { poses: [{ pose_xyzquat: [0.65, 0, 0.6, ...down] }] })),
  );
  assert.equal(far.status, 'infeasible');
  assert.equal(far.reason, 'unreachable');
  assert.match(far.message, /^Not feasible: arm "arm" target 0: no IK solution at path sample \d+/);
  const outside = await lb.outcome(
    lb.exec.execute(call('move_to', { target: { pose_xyzquat: [2, 0, 0.3, 0, 0, 0, 1] } })),
  );
  assert.equal(outside.status, 'infeasible');
  assert.equal(outside.reason, 'outside_workspace');
  assert.equal(lb.sent.length, 0);
});

test('stop mid-move wins at once: the move ends stopped, the arm comes to rest, the next move runs', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  const moving = lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.06, 0, 0) }));
  let moveOutcome: Awaited<typeof moving> | undefined;
  void moving.then((o) => (moveOutcome = o));
  await lb.until(() => lb.events.some((e) => e.event === 'started'), 2);
  await lb.run(0.3);
  const busy = await lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0, 0.02, 0) }));
  assert.equal(busy.status, 'busy');
  assert.match(busy.message, /arm arm is still moving; wait for its result or call stop/);
  const stop = await lb.outcome(lb.exec.execute(call('stop', {})));
  assert.equal(stop.status, 'ok', stop.message);
  assert.equal(stop.message, 'Stopped: the arm is at rest.');
  assert.equal(lb.sent.at(-1)!.type, 'stop', 'the stop is published immediately');
  assert.equal(moveOutcome?.status, 'stopped');
  assert.equal(moveOutcome?.reached, false);
  assert.ok(Math.max(...stop.arms!.arm!.dq.map(Math.abs)) < 0.05, 'at rest');
  const next = await lb.outcome(lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0, 0.02, 0) })));
  assert.equal(next.status, 'ok', next.message);
});

test('a stop the controller never confirms: failed with no_answer and a sentence saying so', async () => {
  const lb = new Loopback('yam', {}, { stopTimeout: 1 });
  await lb.run(0.3);
  lb.downlink = false;
  const t0 = lb.t;
  const stop = await lb.outcome(lb.exec.execute(call('stop', {})));
  assert.equal(stop.status, 'failed');
  assert.equal(stop.reason, 'no_answer');
  assert.equal(stop.message, 'Stop sent, but not confirmed: the controller did not confirm it within 1 s.');
  assert.ok(lb.t - t0 >= 1 && lb.t - t0 < 1.1, `answered after ${lb.t - t0} s`);
});

test('stale state mid-move: failed within 500 ms of the last state, a stop is sent, no motion until states are fresh again', async () => {
  const lb = new Loopback('yam', { faults: [{ kind: 'drop', at: 1.3, for: 1, offset: 0, p: 1, s: 0 }] });
  await lb.run(0.3);
  const o = await lb.outcome(lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.06, 0, 0) })));
  assert.equal(o.status, 'failed');
  assert.equal(o.reason, 'stale_state');
  const lastState = lb.session.latestAt;
  assert.ok(lb.t - lastState <= 0.5 && lb.t - lastState >= 0.19, `reported ${lb.t - lastState} s after the last state`);
  assert.equal(lb.sent.at(-1)!.type, 'stop');
  const asked = lb.t;
  const refused = await lb.outcome(lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0, 0.02, 0) })));
  assert.equal(refused.status, 'unavailable');
  assert.equal(refused.reason, 'stale_state');
  assert.ok(
    Math.abs(lb.t - asked - 0.2) < 0.015,
    `refused ${lb.t - asked} s after the call: it waits up to the staleness limit for a fresh state`,
  );
  await lb.run(1.2);
  const after = await lb.outcome(lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0, 0.02, 0) })));
  assert.equal(after.status, 'ok', after.message);
});

test('tracking error above the limit: the motion is stopped and reported with the joint and error', async () => {
  const lb = new Loopback('yam', {
    faults: [{ kind: 'tracking', at: 1.2, for: Infinity, joint: 1, offset: 0.2, p: 0, s: 0 }],
  });
  await lb.run(0.3);
  const o = await lb.outcome(lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.06, 0, 0) })));
  assert.equal(o.status, 'failed');
  assert.equal(o.reason, 'tracking_error');
  assert.match(
    o.message,
    /arm arm joint joint2 was 0\.1\d\d rad off its reference \(limit 0\.12 rad\): motion stopped/,
  );
  // First a jerk-limited stop trajectory that starts on the running reference; the controller
  // cannot finish it (its joint stays 0.2 rad off), so after its goal time the plain stop follows.
  assert.deepEqual(
    lb.sent.map((c) => c.type),
    ['trajectory', 'trajectory', 'stop'],
  );
  const [move, brake] = lb.sent.map((c) => c.msg as TrajectoryMsg);
  const k = Math.round((brake!.start_time - move!.start_time) * 100);
  assert.ok(
    k > 0 && Math.abs(brake!.start_time - move!.start_time - k / 100) < 0.002,
    `stop starts on tick ${k} of the move`,
  );
  const started = lb.events.find((e) => e.id === move!.id && e.event === 'started')!.time;
  const onTick = move!.points[Math.round((brake!.start_time - started) * 100)]!;
  brake!.points[0]!.q.forEach((q, j) =>
    assert.ok(Math.abs(q - onTick.q[j]!) < 1e-6, `stop starts at the reference, joint ${j}`),
  );
  assert.ok(
    brake!.points[0]!.dq!.some((v) => Math.abs(v) > 1e-3),
    'it starts moving',
  );
  assert.ok(
    brake!.points.at(-1)!.dq!.every((v) => v === 0) && brake!.points.at(-1)!.ddq!.every((v) => v === 0),
    'it ends at rest',
  );
  assert.deepEqual(
    lb.events.filter((e) => e.id === move!.id).map((e) => e.event + (e.reason ? `:${e.reason}` : '')),
    ['accepted', 'started', 'aborted:superseded'],
  );
  assert.ok(Math.max(...o.arms!.arm!.dq.map(Math.abs)) < 0.05, 'reported once at rest');
});

test('a brief tracking fault: the jerk-limited stop trajectory runs to its end and no plain stop is needed', async () => {
  const lb = new Loopback('yam', {
    faults: [{ kind: 'tracking', at: 1.2, for: 0.2, joint: 1, offset: 0.2, p: 0, s: 0 }],
  });
  await lb.run(0.3);
  const progress: string[] = [];
  const o = await lb.outcome(
    lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.06, 0, 0) }), (phase, d) =>
      progress.push(d?.smooth ? `${phase}:smooth` : phase),
    ),
  );
  assert.equal(o.reason, 'tracking_error');
  assert.deepEqual(
    lb.sent.map((c) => c.type),
    ['trajectory', 'trajectory'],
  );
  const brake = lb.sent[1]!.msg as TrajectoryMsg;
  assert.deepEqual(
    lb.events.filter((e) => e.id === brake.id).map((e) => e.event),
    ['accepted', 'started', 'finished'],
  );
  assert.ok(progress.includes('stopping:smooth'), progress.join());
  assert.ok(Math.max(...o.arms!.arm!.dq.map(Math.abs)) < 0.05, 'reported at rest');
});

test('controller offline mid-move: failed at once; restart (new session) likewise; no motion while offline', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  const p = lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.06, 0, 0) }));
  await lb.run(0.5);
  lb.session.onAvailability('offline', lb.t);
  const o = await lb.outcome(p, 0.001);
  assert.equal(o.status, 'failed');
  assert.equal(o.reason, 'offline');
  const refused = await lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0, 0.02, 0) }));
  assert.equal(refused.reason, 'offline');
  lb.session.onAvailability('online', lb.t);
  await lb.until(() => lb.session.latest!.arms.arm!.mode === 'hold', 3);
  const q = lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.02, 0, 0) }));
  await lb.run(0.3);
  const last = lb.session.latest!;
  lb.session.onDescription({ ...lb.sim.description(lb.t), session: 'sim-2' }, lb.t);
  const r = await lb.outcome(q, 0.001);
  assert.equal(r.reason, 'controller_restarted');
  // Answered from the old session's last state: where the arm was, and how far from the goal.
  assert.deepEqual(r.arms!.arm!.q, [...last.arms.arm!.q]);
  const gap = r.arms!.arm!.pose_error!.position_m;
  assert.ok(gap > 0.001 && gap < 0.02, `pose error ${gap} m`);
  assert.match(r.message, new RegExp(`The TCP is ${(gap * 1000).toFixed(1)} mm and`));
});

test('a description that differs from the robot config: refused with the difference named', async () => {
  const lb = new Loopback('yam');
  const d = lb.sim.description(0);
  lb.session.onDescription({ ...d, arms: [{ ...d.arms[0]!, joints: ['j1', 'j2', 'j3', 'j4', 'j5', 'j6'] }] }, 0);
  await lb.run(0.3);
  const o = await lb.exec.execute(call('move_to', { target: { pose_xyzquat: [0.3, 0, 0.3, 0, 0.707, 0, 0.707] } }));
  assert.equal(o.status, 'unavailable');
  assert.equal(o.reason, 'description_mismatch');
  assert.match(
    o.message,
    /refusing to drive controller yam: its description does not match the robot config: arm "arm" joints are \[j1, j2, j3, j4, j5, j6\], the robot config says \[joint1, joint2, joint3, joint4, joint5, joint6\]/,
  );
});

test('an expired trajectory is refused by the controller and reported as such', async () => {
  const lb = new Loopback('yam', { faults: [{ kind: 'late', at: 0, for: Infinity, offset: 0, p: 0, s: 0.8 }] });
  await lb.run(0.3);
  const o = await lb.outcome(lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.03, 0, 0) })));
  assert.equal(o.status, 'failed');
  assert.equal(o.reason, 'expired');
  assert.match(o.message, /the controller refused the trajectory of arm arm \(expired: processed at controller time/);
});

test('a controller that never answers: no_answer after the expiry, and a stop', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  lb.downlink = false;
  const o = await lb.outcome(lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.03, 0, 0) })));
  assert.equal(o.reason, 'no_answer');
});

test('get_state and done report measured joints, TCP and gripper', async () => {
  const lb = new Loopback('dual-yam');
  await lb.run(0.3);
  const s = await lb.exec.execute(call('get_state', {}));
  assert.equal(s.status, 'ok');
  assert.deepEqual(Object.keys(s.arms!), ['left', 'right']);
  assert.deepEqual(s.arms!.left!.q, [0, 1, 1, 0, 0, 0]);
  assert.equal(s.arms!.left!.tcp.length, 7);
  const d = await lb.exec.execute(call('done', { summary: 'nothing to do' }));
  assert.equal(d.summary, 'nothing to do');
  assert.equal(d.status, 'ok');
});

test('dead man: the client of a call going away mid-move stops the arm short of the target; after the outcome, nothing', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  const target = lb.poseFromHere('arm', 0.06, 0, 0);
  const client = new AbortController();
  const moving = lb.outcome(lb.exec.execute(call('move_to', { target }), undefined, undefined, client.signal));
  await lb.until(() => lb.events.some((e) => e.event === 'started'), 2);
  await lb.run(0.2);
  client.abort();
  const stop = lb.sent.at(-1)!;
  assert.equal(stop.type, 'stop', 'the stop is published at once');
  assert.deepEqual(
    [(stop.msg as { arm: unknown }).arm, (stop.msg as { reason: string }).reason],
    ['arm', 'client_disconnected'],
  );
  const o = await moving;
  assert.equal(o.status, 'stopped', o.message);
  assert.equal(o.reached, false);
  await lb.run(1);
  const s = lb.session.latest!.arms.arm!;
  assert.equal(s.mode, 'hold');
  assert.ok(Math.max(...s.dq.map(Math.abs)) < 1e-6, 'at rest');
  const tcp = lb.model.tcpPose('arm', s.q);
  assert.ok(Math.abs(tcp[0]! - target.pose_xyzquat[0]!) > 0.01, `stopped ${tcp[0]! - target.pose_xyzquat[0]!} m short`);
  // A finished call, and calls that move nothing, leave the arm alone when their client goes.
  const done = new AbortController();
  const small = await lb.outcome(
    lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0, 0.02, 0) }), undefined, undefined, done.signal),
  );
  assert.equal(small.status, 'ok', small.message);
  const state = new AbortController();
  await lb.exec.execute(call('get_state', {}), undefined, undefined, state.signal);
  const sent = lb.sent.length;
  done.abort();
  state.abort();
  assert.equal(lb.sent.length, sent, 'no stop sent');
});

test('dead man on dual-yam: a one-arm call stops only that arm; a call whose client is already gone does not move', async () => {
  const lb = new Loopback('dual-yam');
  await lb.run(0.3);
  const client = new AbortController();
  const moving = lb.outcome(
    lb.exec.execute(
      call('move_to', { target: { left: lb.poseFromHere('left', 0.06, 0, 0), right: null } }),
      undefined,
      undefined,
      client.signal,
    ),
  );
  await lb.until(() => lb.events.some((e) => e.event === 'started'), 2);
  client.abort();
  assert.deepEqual(lb.sent.at(-1)!.msg, {
    ...(lb.sent.at(-1)!.msg as object),
    arm: 'left',
    reason: 'client_disconnected',
  });
  assert.equal((await moving).status, 'stopped');
  const gone = AbortSignal.abort();
  const before = lb.trajectories().length;
  const o = await lb.outcome(
    lb.exec.execute(
      call('move_to', { target: { left: null, right: lb.poseFromHere('right', 0, 0.02, 0) } }),
      undefined,
      undefined,
      gone,
    ),
  );
  assert.equal(o.status, 'stopped', o.message);
  assert.equal(lb.trajectories().length, before, 'no trajectory sent');
});

test('a gripper that finishes on an object (reason grasped) adds the grasp envelope to every plan until it opens', async () => {
  const lb = new Loopback('yam');
  let grasp = true;
  lb.edit = (type, p) => {
    if (type === 'events' && p.command === 'gripper' && p.event === 'finished' && grasp) p.reason = 'grasped';
  };
  await lb.run(0.3);
  // Pointing down, 3 cm above the table: the links clear it, a 3.5 cm envelope around the grasp site does not.
  const low = { poses: [{ pose_xyzquat: [0.3, 0, 0.03, 0, 1, 0, 0] }] };
  const before = await lb.outcome(lb.exec.execute(call('check_path', low)));
  assert.equal(before.status, 'ok', before.message);

  const closed = await lb.outcome(lb.exec.execute(call('set_gripper', { gripper: 0 })));
  assert.equal(closed.status, 'ok', closed.message);
  assert.deepEqual(closed.grasped, { arm: true });
  assert.equal(closed.message, 'Gripper set; closed on an object (arm arm).');
  const holding = await lb.outcome(lb.exec.execute(call('check_path', low)));
  assert.equal(holding.status, 'infeasible', holding.message);
  assert.match(holding.message, /held object "grasped".*below the table plane/);

  grasp = false;
  const opened = await lb.outcome(lb.exec.execute(call('set_gripper', { gripper: 1 })));
  assert.deepEqual(opened.grasped, { arm: false });
  assert.equal(opened.message, 'Gripper set.');
  const after = await lb.outcome(lb.exec.execute(call('check_path', low)));
  assert.equal(after.status, 'ok', `released: ${after.message}`);
});
