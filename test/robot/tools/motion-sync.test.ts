// Multi-arm motions start together or are stopped; a plan fits one trajectory message per arm
// (points and bytes), so check_path and execution agree. Loopback: simulated clock, in-memory sim.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EventMsg, TrajectoryMsg } from '../../../robot/link/protocol.js';
import { MAX_POINTS, MAX_TRAJECTORY_BYTES } from '../../../robot/link/protocol-schemas.js';
import { trajectoryBytesBound } from '../../../robot/link/trajectory-size.js';
import { startSkew } from '../../../robot/tools/motion-start.js';
import { maxPacketBytes } from '../../../daemon/mqtt/broker.js';
import { Loopback, OFFSET } from './loopback.js';

const call = (name: string, args: object) => ({ name, arguments: args });
const started = (lb: Loopback) => lb.events.filter((e) => e.event === 'started' && e.command === 'trajectory');

/** A dual-yam chunk of `n` poses, both arms going back and forth by `d` m. */
function dualChunk(lb: Loopback, n: number, d: number) {
  const at = (arm: string, k: number) => lb.poseFromHere(arm, k % 2 ? 0 : d, 0, k % 2 ? 0 : d / 2);
  return Array.from({ length: n }, (_, k) => ({ left: at('left', k), right: at('right', k) }));
}

test('dual-yam: sending that takes time by the messages size still starts both arms together (the lead grows with it)', async () => {
  const lb = new Loopback('dual-yam');
  await lb.run(0.3);
  // ~0.06 s per MiB handed over, as stringify on a loaded VM: each 1.6 MiB message takes ~0.1 s.
  lb.sendCost = (bytes) => (0.06 * bytes) / 2 ** 20;
  void lb.exec.execute(call('move_eef_chunk', { poses: dualChunk(lb, 64, 0.1) }));
  assert.ok(await lb.until(() => started(lb).length === 2, 5), 'both arms started');
  const [a, b] = started(lb);
  const sent = lb.trajectories().map((c) => c.msg as TrajectoryMsg);
  assert.ok(sent[0]!.points.length > 10_000);
  assert.equal(sent[0]!.start_time, sent[1]!.start_time);
  assert.ok(Math.abs(a!.time - b!.time) <= 0.002, `started ${a!.time} and ${b!.time}`);
  assert.ok(Math.abs(a!.time - sent[0]!.start_time) <= 0.002, 'neither start was shifted');
  assert.equal(lb.events.filter((e) => e.event === 'rejected').length, 0);
});

test('dual-yam: an arm whose trajectory arrives late starts late; the motion is stopped as start_skew naming both arms', async () => {
  const lb = new Loopback('dual-yam');
  await lb.run(0.3);
  lb.delay = (c) => (c.type === 'trajectory' && c.msg.arm === 'right' ? 0.15 : 0);
  const target = { left: lb.poseFromHere('left', 0.05, 0, 0), right: lb.poseFromHere('right', 0, -0.05, 0) };
  const o = await lb.outcome(lb.exec.execute(call('move_to', { target })));
  assert.equal(o.status, 'failed', o.message);
  assert.equal(o.reason, 'start_skew');
  assert.match(
    o.message,
    /arm right (had not started|started) \d+ ms after arm left \(tolerance 20 ms\): motion stopped/,
  );
  assert.equal(lb.sent.filter((c) => c.type === 'stop').length, 1);
  for (const arm of ['left', 'right']) assert.ok(lb.session.latest!.arms[arm]!.dq.every((v) => Math.abs(v) < 0.01));
});

test('startSkew: started times within the tolerance pass; further apart, or one arm not started in time, name the arms', () => {
  assert.equal(startSkew([{ arm: 'a', startedAt: 5 }], 9, 0.02), null);
  assert.equal(
    startSkew(
      [
        { arm: 'a', startedAt: 5 },
        { arm: 'b', startedAt: 5.01 },
      ],
      5.01,
      0.02,
    ),
    null,
  );
  assert.equal(
    startSkew(
      [
        { arm: 'a', startedAt: 5 },
        { arm: 'b', startedAt: null },
      ],
      5.015,
      0.02,
    ),
    null,
  );
  assert.equal(
    startSkew(
      [
        { arm: 'a', startedAt: 5.05 },
        { arm: 'b', startedAt: 5 },
      ],
      5.05,
      0.02,
    ),
    'arm a started 50 ms after arm b (tolerance 20 ms)',
  );
  assert.equal(
    startSkew(
      [
        { arm: 'a', startedAt: 5 },
        { arm: 'b', startedAt: null },
      ],
      5.03,
      0.02,
    ),
    'arm b had not started 30 ms after arm a (tolerance 20 ms)',
  );
});

test('controller: a trajectory admitted after its start_time starts then, and its started event says when', async () => {
  const lb = new Loopback('yam');
  await lb.run(0.3);
  lb.delay = (c) => (c.type === 'trajectory' ? 0.3 : 0);
  const o = lb.exec.execute(call('move_to', { target: lb.poseFromHere('arm', 0.03, 0, 0) }));
  assert.ok(await lb.until(() => started(lb).length === 1, 2));
  const msg = lb.trajectories()[0]!.msg as TrajectoryMsg;
  const accepted = lb.events.find((e) => e.event === 'accepted') as EventMsg;
  const s = started(lb)[0]!;
  assert.ok(accepted.time > msg.start_time + 0.2, 'admitted late');
  assert.ok(
    s.time >= accepted.time && s.time - accepted.time <= 0.002,
    `started at ${s.time}, accepted ${accepted.time}`,
  );
  assert.equal((await lb.outcome(o)).status, 'ok');
  assert.ok(s.time - OFFSET > 0);
});

/** ur5e chunk of 64 poses alternating between here and +d m in x. */
async function ur5eChunk(d: number) {
  const lb = new Loopback('ur5e');
  await lb.run(0.3);
  const home = lb.poseFromHere('arm', 0, 0, 0),
    far = lb.poseFromHere('arm', d, 0, 0);
  return { lb, poses: Array.from({ length: 64 }, (_, i) => (i % 2 ? home : far)) };
}

test('ur5e: a chunk longer than a trajectory message may carry is infeasible for check_path and move_eef_chunk alike', async () => {
  const { lb, poses } = await ur5eChunk(0.8);
  for (const tool of ['check_path', 'move_eef_chunk']) {
    const o = await lb.outcome(lb.exec.execute(call(tool, { poses })));
    assert.equal(o.status, 'infeasible', o.message);
    assert.equal(o.reason, 'too_long');
    assert.match(
      o.message,
      new RegExp(
        `${tool}: the motion would last \\d+\\.\\d+ s, \\d+ points at 100 Hz, more than a trajectory's ${MAX_POINTS}`,
      ),
    );
  }
  assert.equal(lb.sent.length, 0);
});

test('ur5e: a chunk whose trajectory could exceed the message bytes is infeasible (too_large), with size and limit', async () => {
  const { lb, poses } = await ur5eChunk(0.45);
  const o = await lb.outcome(lb.exec.execute(call('check_path', { poses })));
  assert.equal(o.reason, 'too_large', o.message);
  assert.match(
    o.message,
    /check_path: the motion would last [\d.]+ s, \d+ points: arm arm's trajectory could take [\d.]+ MiB, more than a message's 8 MiB/,
  );
  // The packet limit of the broker takes the largest trajectory even with small camera frames.
  assert.ok(maxPacketBytes(1024) >= MAX_TRAJECTORY_BYTES + (64 << 10));
});

test('the size bound is never below the JSON the daemon sends', async () => {
  const lb = new Loopback('dual-yam');
  await lb.run(0.3);
  const o = await lb.outcome(lb.exec.execute(call('move_eef_chunk', { poses: dualChunk(lb, 4, 0.05) })));
  assert.equal(o.status, 'ok', o.message);
  for (const c of lb.trajectories()) {
    const m = c.msg as TrajectoryMsg;
    const n = m.joints.length;
    const flat = (k: 'q' | 'dq' | 'ddq') => m.points.flatMap((p) => p[k]!);
    const bound = trajectoryBytesBound(m.points.length, n, 100, flat('q'), flat('dq'), flat('ddq'));
    const bytes = JSON.stringify(m).length;
    assert.ok(bound >= bytes && bound < 2 * bytes, `bound ${bound}, sent ${bytes}`);
  }
});
