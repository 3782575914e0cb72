import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ControllerSession, FUTURE_LIMIT, type SessionListener } from '../../../robot/link/controller-session.js';
import type { DescriptionMsg, EventMsg, StateMsg } from '../../../robot/link/protocol.js';

const EXPECTED = { arms: [{ name: 'arm', joints: ['a', 'b'] }] };
const desc = (session = 's1', joints = ['a', 'b']): DescriptionMsg => ({
  v: 1,
  robot: 'r1',
  session,
  time: 0,
  controller: { name: 'c', version: '1' },
  arms: [{ name: 'arm', joints, gripper: true }],
  state_rate: 100,
  heartbeat_timeout: 0.5,
});
const state = (seq: number, time: number, hb: StateMsg['hb'] = null, q = [0, 0]): StateMsg => ({
  v: 1,
  seq,
  time,
  arms: { arm: { q, dq: [0, 0], gripper: 0.5, mode: 'hold', trajectory: null, faults: [] } },
  faults: [],
  hb,
});

class Recorder implements SessionListener {
  states: StateMsg[] = [];
  events: EventMsg[] = [];
  lostCodes: string[] = [];
  state(s: StateMsg) {
    this.states.push(s);
  }
  event(e: EventMsg) {
    this.events.push(e);
  }
  lost(code: string) {
    this.lostCodes.push(code);
  }
}

function online(): { s: ControllerSession; r: Recorder } {
  const s = new ControllerSession('r1', EXPECTED, 0.2);
  const r = new Recorder();
  s.listener = r;
  s.onAvailability('online', 0);
  s.onDescription(desc(), 0);
  return { s, r };
}

test('problems in order: not connected, offline, no description, mismatch, no state, stale; none when fresh', () => {
  const s = new ControllerSession('r1', EXPECTED, 0.2);
  assert.deepEqual(s.problem(0), { code: 'offline', message: 'controller r1 is not connected' });
  s.onAvailability('offline', 0);
  assert.equal(s.problem(0)!.message, 'controller r1 is offline');
  s.onAvailability('online', 0);
  assert.equal(s.problem(0)!.code, 'no_description');
  s.onDescription(desc('s1', ['a', 'c']), 0);
  assert.deepEqual(s.problem(0), {
    code: 'description_mismatch',
    message:
      'refusing to drive controller r1: its description does not match the robot config: arm "arm" joints are [a, c], the robot config says [a, b]',
  });
  s.onDescription(desc('s1'), 0);
  assert.equal(s.problem(0)!.code, 'no_state');
  s.onState(state(0, 100), 1);
  assert.equal(s.problem(1.2), null, 'exactly at the limit is still fresh');
  assert.deepEqual(s.problem(1.25), {
    code: 'stale_state',
    message: 'the newest state of controller r1 is 250 ms old (limit 200 ms)',
  });
  s.setTransportUp(false, 1.25);
  assert.equal(s.problem(1.25)!.code, 'link_down');
});

test('states: forwarded when consistent with the description; reordered ones and ones of another shape dropped', () => {
  const { s, r } = online();
  s.onState(state(5, 100), 1);
  s.onState(state(4, 99.99), 1.001);
  s.onState({ ...state(6, 100.01), arms: { arm: { ...state(6, 0).arms.arm!, q: [0, 0, 0], dq: [0, 0, 0] } } }, 1.002);
  assert.deepEqual(
    r.states.map((x) => x.seq),
    [5],
  );
  assert.equal(s.invalid, 1);
  assert.equal(s.lastInvalid, 'state.arms.arm.q: must have 2 entries (got 3)');
});

test('a state from the future of the estimated controller clock is dropped and counted; real ones keep coming', () => {
  const { s, r } = online();
  // Controller = daemon + 100; one-way estimate from the first state.
  s.onState(state(0, 101), 1);
  s.onState(state(1, 101.01), 1.01);
  // One forged state 1000 s ahead with a far larger seq: taken as the newest, it would hide
  // every real state as reordered until the controller's clock passed it.
  s.onState(state(1_000_001, 1101.02), 1.02);
  s.onState(state(2, 101.03), 1.03);
  assert.ok(Math.abs(s.controllerTime(1.035)! - 101.035) < 1e-9, 'the estimate was not skewed');
  assert.equal(s.problem(1.035), null);
  // Up to FUTURE_LIMIT ahead still counts (the estimate errs by a delay).
  s.onState(state(3, 101.04 + FUTURE_LIMIT), 1.04);
  assert.deepEqual(
    r.states.map((x) => x.seq),
    [0, 1, 2, 3],
  );
  assert.equal(s.invalid, 1);
  assert.equal(
    s.lastInvalid,
    'time: 1101.02 s is 1000.000 s ahead of the controller clock as estimated (101.020 s; limit 1 s)',
  );
});

test('clock: the heartbeat echo gives a round-trip estimate; the state age counts from its sampling time', () => {
  const { s } = online();
  // Controller = daemon + 500. Heartbeat sent at daemon 10, received at controller 510.004,
  // state sampled at controller 510.005, received at daemon 10.009: offset 500, delay 8 ms.
  s.onState(state(0, 510.005, { seq: 3, daemon_time: 10, rx_time: 510.004 }), 10.009);
  const e = s.clockEstimate(10.009)!;
  assert.equal(e.source, 'round_trip');
  assert.ok(Math.abs(e.offset - 500) < 1e-9);
  assert.ok(Math.abs(s.controllerTime(10.1)! - 510.1) < 1e-9);
  // A state that arrives on time but was sampled 0.3 s earlier (delayed on the way) is stale.
  s.onState(state(1, 510.2, { seq: 3, daemon_time: 10, rx_time: 510.004 }), 10.5);
  assert.ok(Math.abs(s.stateAge(10.5) - 0.3) < 1e-9);
  assert.equal(s.problem(10.5)!.code, 'stale_state');
});

test('going offline, a restart (new session) and a mismatching description are reported to the listener once', () => {
  const { s, r } = online();
  s.onState(state(0, 100), 1);
  s.onAvailability('offline', 2);
  s.onAvailability('offline', 2.1);
  s.onAvailability('online', 3);
  s.onDescription(desc('s1'), 3);
  assert.deepEqual(r.lostCodes, ['offline']);
  assert.notEqual(s.latest, null, 'the same session keeps its state');
  s.onDescription(desc('s2'), 4);
  assert.deepEqual(r.lostCodes, ['offline', 'controller_restarted']);
  assert.equal(s.latest, null, 'a restarted controller starts without state or clock');
  assert.equal(s.clockEstimate(4), null);
  s.onDescription(desc('s2', ['x', 'y']), 5);
  assert.deepEqual(r.lostCodes, ['offline', 'controller_restarted', 'description_mismatch']);
  s.onState(state(0, 200), 5);
  assert.equal(r.states.length, 1, 'no state is used while the description differs');
});

test('a state whose time stopped is not new: a hung driver republishing its last sample goes stale', () => {
  const { s, r } = online();
  s.onState(state(0, 100), 1);
  // 5 s of states every 10 ms with seq rising and the same time, no heartbeat echo (one-way clock).
  for (let i = 1; i <= 500; i++) s.onState(state(i, 100), 1 + i * 0.01);
  assert.deepEqual(
    r.states.map((x) => x.seq),
    [0],
  );
  assert.ok(Math.abs(s.stateAge(6) - 5) < 1e-9, `age ${s.stateAge(6)}`);
  assert.equal(s.problem(6)!.code, 'stale_state');
  assert.equal(s.invalid, 500);
  assert.equal(
    s.lastInvalid,
    "time: 100 s repeats the newest state's time with seq rising (0 → 500): the controller's samples stopped",
  );
  // Samples that move on again (the controller's clock ran on meanwhile) count at once.
  s.onState(state(501, 105.01), 6.01);
  assert.equal(s.problem(6.01), null);
});

test('one-way clock: a state delayed on the way is as old as its sampling time says', () => {
  const { s } = online();
  // Controller = daemon + 100; the first state arrives at once, the second 0.45 s late.
  s.onState(state(0, 101), 1);
  s.onState(state(1, 101.05), 1.5);
  assert.equal(s.clockEstimate(1.5)!.source, 'one_way');
  assert.ok(Math.abs(s.stateAge(1.5) - 0.45) < 1e-9, `age ${s.stateAge(1.5)}`);
  assert.equal(s.problem(1.5)!.code, 'stale_state');
});

test('a state time going back with seq rising drops the state and the clock estimate and reports clock_jump', () => {
  const { s, r } = online();
  s.onState(state(0, 100), 1);
  s.onState(state(1, 100.01), 1.01);
  s.onState(state(2, 40), 1.02);
  assert.deepEqual(r.lostCodes, ['clock_jump']);
  assert.equal(s.latest, null);
  assert.equal(s.clockEstimate(1.02), null);
  assert.equal(s.problem(1.02)!.code, 'no_state');
  assert.equal(
    s.lastInvalid,
    "time: 40 s is before the newest state's 100.01 s with seq rising (1 → 2): the controller's clock is not monotonic",
  );
  // The states after it build a new estimate on the new clock.
  s.onState(state(3, 40.01), 1.03);
  assert.ok(Math.abs(s.controllerTime(1.03)! - 40.01) < 1e-9);
  assert.equal(s.problem(1.03), null);
  assert.deepEqual(
    r.states.map((x) => x.seq),
    [0, 1, 3],
  );
});
