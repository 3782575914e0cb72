import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Harness } from './harness.js';

const L = ['l1', 'l2', 'l3'];

test('follows a ramp behind by latency and first-order lag (closed form q = v(t′ − τ(1 − e^(−t′/τ))))', () => {
  const h = new Harness({ lag: 0.05, latency: 0.02, rate: 200 });
  h.run(0.2);
  const start = 0.3;
  const v = [0.5, -0.25, 0];
  h.send(
    'trajectory',
    h.trajectory(
      'left',
      L,
      [
        { t: 0, q: [0, 0, 0] },
        { t: 1, q: v },
      ],
      { start_time: start },
    ),
  );
  assert.deepEqual(h.eventNames('t0'), ['accepted']);
  h.run(1.2);
  assert.deepEqual(h.eventNames('t0'), ['accepted', 'started']);
  let checked = 0;
  for (const s of h.states()) {
    const tp = s.time - start - 0.02;
    if (tp <= 0.01 || tp >= 0.99) continue;
    const lagTerm = tp - 0.05 * (1 - Math.exp(-tp / 0.05));
    for (let j = 0; j < 3; j++) {
      assert.ok(
        Math.abs(s.arms.left!.q[j]! - v[j]! * lagTerm) < 1e-4,
        `t=${s.time} joint ${j}: q=${s.arms.left!.q[j]} expected ${v[j]! * lagTerm}`,
      );
    }
    assert.equal(s.arms.left!.mode, 'follow');
    assert.equal(s.arms.left!.trajectory, 't0');
    checked++;
  }
  assert.ok(checked > 150, `only ${checked} states checked`);
  // Steady state: the lag error of a ramp is v·τ.
  const mid = h.states().find((s) => s.time >= start + 0.02 + 0.8)!;
  const tm = mid.time - start - 0.02;
  assert.ok(Math.abs(mid.arms.left!.q[0]! - 0.5 * (tm - 0.05)) < 1e-4, `t′=${tm} q=${mid.arms.left!.q[0]}`);
  h.run(2);
  assert.deepEqual(h.eventNames('t0'), ['accepted', 'started', 'finished']);
  const fin = h.events('t0').at(-1)!;
  // finished once within 0.01 rad of the goal: 0.5·e^(−t/τ)… ≤ 0.01 after the end + latency.
  assert.ok(fin.time > start + 1.02 && fin.time < start + 1.02 + 0.3, `finished at ${fin.time}`);
  assert.equal(h.lastState().arms.left!.mode, 'hold');
});

test('zero lag reproduces the reference exactly, shifted by the latency', () => {
  const h = new Harness({ lag: 0, latency: 0.1, rate: 100 });
  h.run(0.05);
  h.send(
    'trajectory',
    h.trajectory(
      'right',
      ['r1'],
      [
        { t: 0, q: [0] },
        { t: 0.5, q: [0.4] },
        { t: 1, q: [0.2] },
      ],
      { start_time: 0.1 },
    ),
  );
  h.run(1.5);
  for (const s of h.states()) {
    const tr = s.time - 0.1 - 0.1;
    const want = tr <= 0 ? 0 : tr <= 0.5 ? 0.8 * tr : tr <= 1 ? 0.4 - 0.4 * (tr - 0.5) : 0.2;
    assert.ok(Math.abs(s.arms.right!.q[0]! - want) < 1e-9, `t=${s.time}: q=${s.arms.right!.q[0]} want ${want}`);
  }
});

test('an expired trajectory is rejected with reason expired and the arm does not move', () => {
  const h = new Harness();
  h.run(1);
  h.send(
    'trajectory',
    h.trajectory(
      'left',
      L,
      [
        { t: 0, q: [0, 0, 0] },
        { t: 1, q: [1, 1, 1] },
      ],
      { expires_at: 0.999 },
    ),
  );
  const ev = h.events('t0');
  assert.equal(ev.length, 1);
  assert.equal(ev[0]!.event, 'rejected');
  assert.equal(ev[0]!.reason, 'expired');
  assert.match(ev[0]!.detail!, /expires_at 0\.999/);
  h.run(2);
  assert.deepEqual(h.lastState().arms.left!.q, [0, 0, 0]);
});

test('a late but unexpired trajectory starts at once, shifted', () => {
  const h = new Harness({ lag: 0, latency: 0 });
  h.run(1);
  h.send(
    'trajectory',
    h.trajectory(
      'right',
      ['r1'],
      [
        { t: 0, q: [0] },
        { t: 1, q: [0.5] },
      ],
      { start_time: 0.9, expires_at: 1.1 },
    ),
  );
  assert.deepEqual(h.eventNames('t0'), ['accepted', 'started']);
  h.run(1.5);
  const s = h.lastState();
  assert.ok(Math.abs(s.arms.right!.q[0]! - 0.5 * (s.time - 1)) < 1e-9, `t=${s.time} q=${s.arms.right!.q[0]}`);
});

test('stop mid-move: trajectory aborted, bounded deceleration to rest, stop finished', () => {
  const h = new Harness({ lag: 0.05, latency: 0.01, decel: 2, rate: 200 });
  h.run(0.1);
  h.send(
    'trajectory',
    h.trajectory('left', L, [
      { t: 0, q: [0, 0, 0] },
      { t: 2, q: [1.2, -1.2, 0.6] },
    ]),
  );
  h.run(1);
  const before = h.lastState().arms.left!;
  assert.ok(Math.abs(before.dq[0]! - 0.6) < 0.01, `moving at ${before.dq[0]}`);
  h.send('stop', { v: 1, id: 's1', arm: 'left', time: 1001 });
  assert.deepEqual(h.eventNames('t0'), ['accepted', 'started', 'aborted:stop']);
  assert.deepEqual(h.eventNames('s1'), ['accepted']);
  h.run(3);
  assert.deepEqual(h.eventNames('s1'), ['accepted', 'finished']);
  const fin = h.events('s1')[1]!;
  // Reference brakes from 0.6 rad/s at 2 rad/s² (0.3 s); the lag settles below 0.01 rad/s in ~τ·ln(0.6/0.01).
  const bound = 1 + 0.3 + 0.01 + 0.05 * Math.log(0.6 / 0.01) + 0.02;
  assert.ok(fin.time <= bound, `at rest at ${fin.time} > ${bound}`);
  const rest = h.lastState().arms.left!;
  assert.equal(rest.mode, 'hold');
  assert.ok(Math.max(...rest.dq.map(Math.abs)) < 1e-6);
  // Braking distance of the reference: v²/(2a) = 0.09 rad on joint 0 (plus what the lag still had to travel).
  assert.ok(rest.q[0]! > 0.6 && rest.q[0]! < 0.6 + 0.09 + 0.001, `stopped at ${rest.q[0]}`);
  // Stop of an arm at rest finishes without moving.
  h.send('stop', { v: 1, id: 's2', arm: null, time: 1003 });
  h.run(3.01);
  assert.deepEqual(h.eventNames('s2'), ['accepted', 'finished']);
  assert.equal(h.events('s2')[1]!.arm, null);
});

test('heartbeat loss: fault event at the timeout, trajectory aborted, arm at rest soon after', () => {
  const h = new Harness({ lag: 0.05, latency: 0.01, decel: 3, rate: 200 });
  h.hbTimeout = 0.3;
  h.run(0.1);
  h.send(
    'trajectory',
    h.trajectory('left', L, [
      { t: 0, q: [0, 0, 0] },
      { t: 3, q: [1.5, 0, 0] },
    ]),
  );
  h.run(1);
  h.hbPeriod = null;
  const last = h.lastHb;
  h.run(3);
  const fault = h.events().find((e) => e.event === 'fault')!;
  assert.equal(fault.reason, 'heartbeat_lost');
  assert.ok(Math.abs(fault.time - (last + 0.3)) <= 0.0011, `detected at ${fault.time}, last heartbeat ${last}`);
  assert.deepEqual(h.eventNames('t0'), ['accepted', 'started', 'aborted:heartbeat_lost']);
  const atRest = h.states().find((s) => s.time > fault.time && Math.max(...s.arms.left!.dq.map(Math.abs)) <= 0.01)!;
  const bound = last + 0.3 + 0.5 / 3 + 0.01 + 0.05 * Math.log(0.5 / 0.01) + 0.01;
  assert.ok(atRest.time <= bound, `at rest at ${atRest.time}, bound ${bound}`);
  assert.deepEqual(h.lastState().faults, ['no_heartbeat']);
  assert.equal(h.lastState().arms.left!.mode, 'hold');
  // Without a heartbeat new motion is refused.
  h.send(
    'trajectory',
    h.trajectory(
      'right',
      ['r1'],
      [
        { t: 0, q: [0] },
        { t: 1, q: [0.1] },
      ],
    ),
  );
  assert.deepEqual(h.eventNames('t1'), ['rejected:no_heartbeat']);
});

test('daemon offline and daemon restart (new heartbeat session) stop the arm', () => {
  const h = new Harness();
  h.run(0.1);
  h.send(
    'trajectory',
    h.trajectory(
      'right',
      ['r1'],
      [
        { t: 0, q: [0] },
        { t: 2, q: [0.8] },
      ],
    ),
  );
  h.run(0.5);
  h.send('daemon_availability', 'offline');
  assert.deepEqual(h.eventNames('t0'), ['accepted', 'started', 'aborted:daemon_offline']);
  h.send('daemon_availability', 'online');
  h.run(1.5);
  h.send(
    'trajectory',
    h.trajectory(
      'right',
      ['r1'],
      [
        { t: 0, q: h.lastState().arms.right!.q },
        { t: 2, q: [0.8] },
      ],
    ),
  );
  h.run(2);
  h.hbSession = 'd2';
  h.heartbeat();
  assert.deepEqual(h.eventNames('t1'), ['accepted', 'started', 'aborted:daemon_restarted']);
});

test('gripper moves at its rate limit and reports finished on arrival', () => {
  const h = new Harness({ rate: 100 });
  h.run(0.1);
  assert.equal(h.lastState().arms.left!.gripper, 1);
  assert.equal(h.lastState().arms.right!.gripper, null);
  h.send('gripper', { v: 1, id: 'g1', arm: 'left', position: 0.25, time: 1000, expires_at: 0.2 });
  assert.deepEqual(h.eventNames('g1'), ['accepted', 'started']);
  h.run(0.5);
  // speed 0.1 m/s over a 0.1 m stroke: one full stroke per second.
  const s = h.lastState();
  assert.ok(
    Math.abs(s.arms.left!.gripper! - (1 - (s.time - 0.1))) < 1e-9,
    `t=${s.time} gripper ${s.arms.left!.gripper}`,
  );
  h.run(1);
  assert.deepEqual(h.eventNames('g1'), ['accepted', 'started', 'finished']);
  assert.ok(Math.abs(h.events('g1')[2]!.time - 0.85) < 0.0011, `finished at ${h.events('g1')[2]!.time}`);
  h.send('gripper', { v: 1, id: 'g2', arm: 'right', position: 0.5, time: 1000, expires_at: 2 });
  assert.deepEqual(h.eventNames('g2'), ['rejected:no_gripper']);
  h.send('gripper', { v: 1, id: 'g3', arm: 'left', position: 0.5, time: 1000, expires_at: 0.5 });
  assert.deepEqual(h.eventNames('g3'), ['rejected:expired']);
});

test('admission: unknown arm, joint mismatch, joint limit, start mismatch, invalid, duplicate id, preemption', () => {
  const h = new Harness();
  h.run(0.2);
  const line = (q1: number[]) => [
    { t: 0, q: [0, 0, 0] },
    { t: 1, q: q1 },
  ];
  h.send('trajectory', h.trajectory('middle', L, line([0, 0, 1])));
  assert.deepEqual(h.eventNames('t0'), ['rejected:unknown_arm']);
  h.send('trajectory', h.trajectory('left', ['l1', 'l3', 'l2'], line([0, 0, 1])));
  assert.deepEqual(h.eventNames('t1'), ['rejected:joint_mismatch']);
  h.send('trajectory', h.trajectory('left', L, line([0, 2.5, 0])));
  assert.deepEqual(h.eventNames('t2'), ['rejected:joint_limit']);
  assert.match(h.events('t2')[0]!.detail!, /points\[1\]\.q\[1\] = 2\.5 is outside \[-2, 2\] \(joint l2\)/);
  h.send(
    'trajectory',
    h.trajectory('left', L, [
      { t: 0, q: [0.1, 0, 0] },
      { t: 1, q: [0, 0, 0] },
    ]),
  );
  assert.deepEqual(h.eventNames('t3'), ['rejected:start_mismatch']);
  h.send('trajectory', {
    ...h.trajectory('left', L, line([0, 0, 1])),
    points: [
      { t: 0, q: [0, 0, 0] },
      { t: 0, q: [1, 1, 1] },
    ],
  });
  assert.deepEqual(h.eventNames('t4'), ['rejected:invalid']);
  assert.match(h.events('t4')[0]!.detail!, /points\[1\]\.t: must be greater than points\[0\]\.t/);
  h.send('trajectory', { v: 1, points: 'x' });
  const f = h.events().at(-1)!;
  assert.equal(f.event, 'fault');
  assert.equal(f.reason, 'invalid');
  const ok = h.trajectory('left', L, line([0.3, 0, 0]));
  h.send('trajectory', ok);
  h.send('trajectory', ok);
  assert.deepEqual(h.eventNames(ok.id), ['accepted', 'started'], 'a redelivered id is ignored');
  h.run(0.7);
  const q = h.lastState().arms.left!.q;
  const next = h.trajectory(
    'left',
    L,
    [
      { t: 0, q },
      { t: 1, q: [0, 0, 0] },
    ],
    { start_time: h.t + 0.05 },
  );
  h.send('trajectory', next);
  assert.deepEqual(h.eventNames(ok.id), ['accepted', 'started', 'aborted:superseded']);
  assert.deepEqual(h.eventNames(next.id), ['accepted']);
  h.run(2.5);
  assert.deepEqual(h.eventNames(next.id), ['accepted', 'started', 'finished']);
});

test('fault stall: the joint freezes and the trajectory ends aborted with goal_tolerance', () => {
  const h = new Harness({
    faults: [{ kind: 'stall', arm: 'left', joint: 1, at: 0.5, for: Infinity, offset: 0, p: 0, s: 0 }],
  });
  h.run(0.2);
  h.send(
    'trajectory',
    h.trajectory('left', L, [
      { t: 0, q: [0, 0, 0] },
      { t: 1, q: [0.5, 0.5, 0.5] },
    ]),
  );
  h.run(0.6);
  const frozen = h.lastState().arms.left!.q[1]!;
  h.run(3);
  const s = h.lastState().arms.left!;
  assert.equal(s.q[1], frozen);
  assert.ok(Math.abs(s.q[0]! - 0.5) < 1e-3 && Math.abs(s.q[2]! - 0.5) < 1e-3);
  assert.deepEqual(h.eventNames('t0'), ['accepted', 'started', 'aborted:goal_tolerance']);
  assert.ok(Math.abs(h.events('t0')[2]!.time - (0.2 + 1 + 0.01 + 1)) < 0.0011);
});

test('fault tracking: steady offset on a joint; with the controller limit set it aborts, latches, and stop clears it', () => {
  const mk = (trackingLimit: number | null) =>
    new Harness({
      trackingLimit,
      lag: 0.05,
      faults: [{ kind: 'tracking', joint: 2, at: 0, for: Infinity, offset: 0.15, p: 0, s: 0 }],
    });
  const free = mk(null);
  free.run(1);
  assert.ok(Math.abs(free.lastState().arms.left!.q[2]! - 0.15) < 1e-6, `offset ${free.lastState().arms.left!.q[2]}`);

  const h = mk(0.1);
  h.run(0.05);
  h.send(
    'trajectory',
    h.trajectory('left', L, [
      { t: 0, q: [0, 0, 0] },
      { t: 1, q: [0.2, 0, 0] },
    ]),
  );
  h.run(1);
  assert.deepEqual(h.eventNames('t0'), ['accepted', 'started', 'fault:tracking_error', 'aborted:tracking_error']);
  const s = h.lastState().arms.left!;
  assert.equal(s.mode, 'fault');
  assert.deepEqual(s.faults, ['tracking_error']);
  h.send(
    'trajectory',
    h.trajectory('left', L, [
      { t: 0, q: s.q },
      { t: 1, q: [0, 0, 0] },
    ]),
  );
  assert.deepEqual(h.eventNames('t1'), ['rejected:fault']);
  h.send('stop', { v: 1, id: 'clear', arm: 'left', time: 1 });
  h.run(1.1);
  assert.deepEqual(h.eventNames('clear'), ['accepted', 'finished']);
  assert.equal(h.lastState().arms.left!.mode, 'hold');
  assert.deepEqual(h.lastState().arms.left!.faults, []);
});

test('fault disconnect: nothing in or out while down, arm brought to rest by the heartbeat timeout', () => {
  const h = new Harness({ faults: [{ kind: 'disconnect', at: 1, for: 1, offset: 0, p: 0, s: 0 }] });
  h.run(0.1);
  h.send(
    'trajectory',
    h.trajectory('left', L, [
      { t: 0, q: [0, 0, 0] },
      { t: 3, q: [1, 0, 0] },
    ]),
  );
  h.run(2.5);
  assert.equal(h.sim.linkUp(1.5), false);
  assert.equal(h.sim.linkUp(2.5), true);
  const times = h.states().map((s) => s.time);
  assert.ok(!times.some((t) => t >= 1 && t < 2), 'a state leaked out while disconnected');
  assert.ok(
    times.some((t) => t >= 2),
    'no state after reconnection',
  );
  // Heartbeats sent while down were ignored, so the arm stopped; the abort event was lost with the link.
  assert.equal(h.lastState().arms.left!.mode, 'hold');
  assert.equal(h.lastState().arms.left!.trajectory, null);
  assert.deepEqual(h.eventNames('t0'), ['accepted', 'started']);
});

test('fault drop: about p of the states vanish (seeded), commands too', () => {
  const h = new Harness({ rate: 100, seed: 7, faults: [{ kind: 'drop', at: 1, for: 10, offset: 0, p: 0.3, s: 0 }] });
  h.run(1);
  const before = h.states().length;
  h.run(11);
  const got = h.states().length - before;
  // 1000 states at p = 0.3: mean 700, sd 14.5; 5 sd either side.
  assert.ok(got > 627 && got < 773, `${got} of 1000 states arrived (seed 7)`);
});

test('fault delay: state messages leave s seconds after they were sampled', () => {
  const h = new Harness({ rate: 50, faults: [{ kind: 'delay', at: 0.5, for: Infinity, offset: 0, p: 0, s: 0.25 }] });
  h.run(2);
  const last = h.lastState();
  assert.ok(Math.abs(last.time - (2 - 0.25)) < 0.021, `newest state sampled at ${last.time} at t=2`);
  assert.ok(h.states().every((s, i, a) => i === 0 || s.seq > a[i - 1]!.seq));
});

test('description lists arms, joints, grippers, rate and timeout', () => {
  const h = new Harness({ rate: 250, heartbeatTimeout: 0.4 });
  const d = h.sim.description(5);
  const l = { lower: -2, upper: 2, velocity: 3, acceleration: 10 };
  assert.deepEqual(d.arms, [
    { name: 'left', joints: ['l1', 'l2', 'l3'], gripper: true, limits: [l, l, l] },
    { name: 'right', joints: ['r1'], gripper: false, limits: [{ lower: -1, upper: 1, velocity: 1, acceleration: 10 }] },
  ]);
  assert.equal(d.robot, 'tbot');
  assert.equal(d.state_rate, 250);
  assert.equal(d.heartbeat_timeout, 0.4);
  assert.equal(d.time, 5);
});

test('state echoes the last heartbeat for clock estimation', () => {
  const h = new Harness();
  h.run(0.32);
  const s = h.lastState();
  assert.deepEqual(s.hb, { seq: 3, daemon_time: 1000 + h.lastHb, rx_time: h.lastHb });
  assert.deepEqual(s.faults, []);
});

/** The right arm 0.2 s into a 1 s move 0 → 0.5 rad (started), on a harness stalling after `stallAfter`. */
function moving(stallAfter: number): Harness {
  const h = new Harness({ rate: 100, stallAfter });
  h.run(0.2);
  h.send(
    'trajectory',
    h.trajectory(
      'right',
      ['r1'],
      [
        { t: 0, q: [0] },
        { t: 1, q: [0.5] },
      ],
    ),
  );
  h.run(0.4);
  assert.deepEqual(h.eventNames('t0'), ['accepted', 'started']);
  return h;
}

test('a stall (the clock jumps 1000 s): the arm holds where it was, the heartbeat loss and a pending stop come first, the trajectory is not finished', () => {
  const h = moving(0.25);
  const q = h.lastState().arms.right!.q[0]!;
  // The process was stopped: its timer fires first, then the messages queued meanwhile.
  h.hbPeriod = null;
  h.t = 1000.4;
  h.sim.tick(h.t);
  h.heartbeat();
  h.send('stop', { v: 1, id: 's1', arm: null, time: 1000, reason: 'daemon stop' });
  assert.deepEqual(h.eventNames('t0'), ['accepted', 'started', 'aborted:heartbeat_lost']);
  const faults = h.events().filter((e) => e.event === 'fault');
  assert.deepEqual(
    faults.map((e) => e.reason),
    ['heartbeat_lost', 'controller_stall'],
  );
  assert.match(faults[1]!.detail!, /no tick for 1000\.0 s/);
  h.hbPeriod = 0.1;
  h.run(1002);
  assert.deepEqual(h.eventNames('s1'), ['accepted', 'finished']);
  const s = h.lastState().arms.right!;
  assert.equal(s.mode, 'hold');
  assert.ok(Math.abs(s.q[0]! - q) < 1e-6, `moved from ${q} to ${s.q[0]}`);
  assert.ok(!h.states().some((x) => x.time > 0.41 && x.time < 1000.4), 'no state for the stalled time');
});

test('a short stall with the heartbeat still live aborts the trajectory (controller_stall) and holds', () => {
  const h = moving(0.1);
  const q = h.lastState().arms.right!.q[0]!;
  h.t += 0.15;
  h.sim.tick(h.t);
  h.heartbeat();
  assert.deepEqual(h.eventNames('t0'), ['accepted', 'started', 'aborted:controller_stall']);
  assert.deepEqual(
    h
      .events()
      .filter((e) => e.event === 'fault')
      .map((e) => e.reason),
    ['controller_stall'],
  );
  h.run(2);
  const s = h.lastState().arms.right!;
  assert.equal(s.mode, 'hold');
  assert.ok(Math.abs(s.q[0]! - q) < 1e-6, `moved from ${q} to ${s.q[0]}`);
  assert.deepEqual(h.lastState().faults, []);
});

test('a late tick within the stall bound is simulated step by step: the trajectory finishes', () => {
  const h = moving(0.1);
  h.t += 0.09;
  h.sim.tick(h.t);
  h.run(2);
  assert.deepEqual(h.eventNames('t0'), ['accepted', 'started', 'finished']);
  assert.ok(!h.events().some((e) => e.event === 'fault'));
});

test('fault late: a trajectory is handled s seconds after it arrives, so a short expiry rejects it', () => {
  const h = new Harness({ rate: 100, faults: [{ kind: 'late', at: 0, for: Infinity, offset: 0, p: 0, s: 0.2 }] });
  h.run(0.2);
  const ok = h.trajectory(
    'right',
    ['r1'],
    [
      { t: 0, q: [0] },
      { t: 0.5, q: [0.2] },
    ],
    { expires_at: 0.2 + 0.3 },
  );
  h.send('trajectory', ok);
  assert.deepEqual(h.eventNames(ok.id), [], 'nothing before the delay has passed');
  h.run(0.395);
  assert.deepEqual(h.eventNames(ok.id), []);
  h.run(0.41);
  assert.deepEqual(h.eventNames(ok.id), ['accepted', 'started'], 'handled at 0.4 s, inside its expiry');
  h.run(1.5);
  const late = h.trajectory(
    'right',
    ['r1'],
    [
      { t: 0, q: [0.2] },
      { t: 0.5, q: [0] },
    ],
    { expires_at: 1.5 + 0.1 },
  );
  h.send('trajectory', late);
  h.run(1.8);
  assert.deepEqual(h.eventNames(late.id), ['rejected:expired']);
  assert.match(h.events(late.id)[0]!.detail!, /after expires_at 1\.6/);
});
