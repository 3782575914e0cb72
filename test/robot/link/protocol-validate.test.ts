import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  compareDescription,
  compareState,
  decodeMessage,
  validateMessage,
  type MessageBySuffix,
} from '../../../robot/link/protocol-validate.js';
import type {
  DescriptionMsg,
  EventMsg,
  GripperMsg,
  HeartbeatMsg,
  StateMsg,
  StopMsg,
  TrajectoryMsg,
} from '../../../robot/link/protocol.js';

const description = (): DescriptionMsg => ({
  v: 1,
  robot: 'arm1',
  session: 'c-1',
  time: 12.5,
  controller: { name: 'acme', version: '2.1' },
  arms: [{ name: 'main', joints: ['j1', 'j2'], gripper: true }],
  state_rate: 200,
  heartbeat_timeout: 0.5,
});
const state = (): StateMsg => ({
  v: 1,
  seq: 3,
  time: 12.6,
  arms: { main: { q: [0.1, 0.2], dq: [0, 0], gripper: 0.5, mode: 'follow', trajectory: 't1', faults: [] } },
  faults: [],
  hb: { seq: 9, daemon_time: 1000.1, rx_time: 12.55 },
});
const trajectory = (): TrajectoryMsg => ({
  v: 1,
  id: 't1',
  arm: 'main',
  joints: ['j1', 'j2'],
  time: 1000.2,
  start_time: 12.7,
  expires_at: 12.65,
  points: [
    { t: 0, q: [0, 0] },
    { t: 0.5, q: [0.1, 0.1] },
  ],
});
const gripper = (): GripperMsg => ({ v: 1, id: 'g1', arm: 'main', position: 0.3, time: 1000, expires_at: 13 });
const stop = (): StopMsg => ({ v: 1, id: 's1', arm: null, time: 1000 });
const event = (): EventMsg => ({
  v: 1,
  seq: 0,
  time: 12.7,
  id: 't1',
  arm: 'main',
  command: 'trajectory',
  event: 'accepted',
});
const heartbeat = (): HeartbeatMsg => ({ v: 1, session: 'd-1', seq: 4, time: 1000, period: 0.1, timeout: 0.5 });

const valid: { [K in keyof MessageBySuffix]: () => unknown } = {
  availability: () => 'online',
  description,
  state,
  trajectory,
  gripper,
  stop,
  events: event,
  heartbeat,
  sim_scene: () => ({
    v: 1,
    scene: 'yam-pick-place',
    seed: 3,
    time: 3.5,
    objects: [{ name: 'red_block', pose: [0.3, 0, 0.02, 0, 0, 0, 1], held_by: null }],
    predicates: { in_bowl: false },
    tasks: { block_in_bowl: ['in_bowl'] },
    collisions: { count: 1, last: { arm: 'arm', link: 'gripper', object: 'table', depth: 0.002, time: 3.1 } },
  }),
};

type Case = [kind: keyof MessageBySuffix, label: string, mutate: (m: any) => unknown, field: string, rule: RegExp];

// One case per rule: the message must name the field, the rule and the value.
const cases: Case[] = [
  ['description', 'wrong version', (m) => ({ ...m, v: 2 }), 'description.v', /must be 1, got 2/],
  ['description', 'missing field', (m) => (delete m.session, m), 'description.session', /is required, got nothing/],
  [
    'description',
    'unknown field',
    (m) => ({ ...m, sesion: 'x' }),
    'description.sesion',
    /is not a known field \(allowed: v, robot/,
  ],
  ['description', 'robot id with a slash', (m) => ({ ...m, robot: 'a/b' }), 'description.robot', /must match/],
  ['description', 'no arms', (m) => ({ ...m, arms: [] }), 'description.arms', /must have at least 1 item/],
  [
    'description',
    'repeated joint',
    (m) => ((m.arms[0].joints = ['j1', 'j1']), m),
    'description.arms[0].joints[1]',
    /must not repeat an earlier item/,
  ],
  [
    'description',
    'repeated arm',
    (m) => ((m.arms = [m.arms[0], m.arms[0]]), m),
    'description.arms[1].name',
    /must be unique among arms/,
  ],
  [
    'description',
    'gripper not boolean',
    (m) => ((m.arms[0].gripper = 'yes'), m),
    'description.arms[0].gripper',
    /must be a boolean, not a string/,
  ],
  ['description', 'rate too high', (m) => ({ ...m, state_rate: 20000 }), 'description.state_rate', /must be ≤ 10000/],
  [
    'description',
    'timeout zero',
    (m) => ({ ...m, heartbeat_timeout: 0 }),
    'description.heartbeat_timeout',
    /must be > 0/,
  ],
  [
    'description',
    'empty controller name',
    (m) => ((m.controller.name = ''), m),
    'description.controller.name',
    /must not be empty/,
  ],
  ['state', 'seq negative', (m) => ({ ...m, seq: -1 }), 'state.seq', /must be ≥ 0/],
  ['state', 'seq fractional', (m) => ({ ...m, seq: 1.5 }), 'state.seq', /must be an integer, not a number/],
  ['state', 'time as string', (m) => ({ ...m, time: '12.6' }), 'state.time', /must be a finite number, not a string/],
  ['state', 'no arms', (m) => ({ ...m, arms: {} }), 'state.arms', /must have at least 1 field/],
  [
    'state',
    'more arms than a description lists',
    (m) => ({ ...m, arms: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`a${i}`, m.arms.main])) }),
    'state.arms',
    /must have at most 16 fields/,
  ],
  [
    'state',
    'bad arm name',
    (m) => ({ ...m, arms: { 'a b': m.arms.main } }),
    'state.arms["a b"]',
    /field name must match/,
  ],
  [
    'state',
    'q entry not a number',
    (m) => ((m.arms.main.q[1] = null), m),
    'state.arms.main.q[1]',
    /must be a finite number, not null/,
  ],
  [
    'state',
    'dq length',
    (m) => ((m.arms.main.dq = [0]), m),
    'state.arms.main.dq',
    /must have as many entries as q \(2\)/,
  ],
  [
    'state',
    'gripper above 1',
    (m) => ((m.arms.main.gripper = 1.2), m),
    'state.arms.main.gripper',
    /must be ≤ 1, got 1\.2/,
  ],
  [
    'state',
    'unknown mode',
    (m) => ((m.arms.main.mode = 'run'), m),
    'state.arms.main.mode',
    /must be one of "hold", "follow", "stop", "fault"/,
  ],
  [
    'state',
    'follow without id',
    (m) => ((m.arms.main.trajectory = null), m),
    'state.arms.main.trajectory',
    /exactly when mode is "follow"/,
  ],
  [
    'state',
    'id without follow',
    (m) => ((m.arms.main.mode = 'hold'), m),
    'state.arms.main.trajectory',
    /exactly when mode is "follow"/,
  ],
  ['state', 'fault flag format', (m) => ({ ...m, faults: ['Bad Flag'] }), 'state.faults[0]', /must match \^\[a-z\]/],
  ['state', 'hb incomplete', (m) => (delete m.hb.rx_time, m), 'state.hb.rx_time', /is required/],
  ['state', 'hb after time', (m) => ((m.hb.rx_time = 13), m), 'state.hb.rx_time', /must not be after time \(12\.6\)/],
  ['state', 'hb missing', (m) => (delete m.hb, m), 'state.hb', /is required/],
  [
    'trajectory',
    'one point',
    (m) => ((m.points = [m.points[0]]), m),
    'trajectory.points',
    /must have at least 2 items/,
  ],
  [
    'trajectory',
    'first t not 0',
    (m) => ((m.points[0].t = 0.1), m),
    'trajectory.points[0].t',
    /must be 0 \(times are relative to start_time\)/,
  ],
  [
    'trajectory',
    't not increasing',
    (m) => ((m.points[1].t = 0), m),
    'trajectory.points[1].t',
    /must be greater than points\[0\]\.t = 0/,
  ],
  ['trajectory', 'negative t', (m) => ((m.points[0].t = -1), m), 'trajectory.points[0].t', /must be ≥ 0/],
  [
    'trajectory',
    'q length',
    (m) => ((m.points[1].q = [1]), m),
    'trajectory.points[1].q',
    /must have one entry per joint \(2\)/,
  ],
  [
    'trajectory',
    'dq on some points only',
    (m) => ((m.points[1].dq = [0, 0]), m),
    'trajectory.points[1].dq',
    /on every point or on none/,
  ],
  [
    'trajectory',
    'dq length',
    (m) => ((m.points[0].dq = [0]), (m.points[1].dq = [0]), m),
    'trajectory.points[0].dq',
    /must have one entry per joint/,
  ],
  [
    'trajectory',
    'ddq without dq',
    (m) => ((m.points[0].ddq = [0, 0]), (m.points[1].ddq = [0, 0]), m),
    'trajectory.points[0].dq',
    /is required when ddq is given/,
  ],
  ['trajectory', 'empty id', (m) => ({ ...m, id: '' }), 'trajectory.id', /must not be empty/],
  ['trajectory', 'id with space', (m) => ({ ...m, id: 'a b' }), 'trajectory.id', /must match/],
  ['trajectory', 'id too long', (m) => ({ ...m, id: 'x'.repeat(129) }), 'trajectory.id', /at most 128 characters/],
  ['trajectory', 'repeated joint', (m) => ({ ...m, joints: ['j1', 'j1'] }), 'trajectory.joints[1]', /must not repeat/],
  ['trajectory', 'missing expiry', (m) => (delete m.expires_at, m), 'trajectory.expires_at', /is required/],
  [
    'trajectory',
    'point field typo',
    (m) => ((m.points[0].qd = [0, 0]), m),
    'trajectory.points[0].qd',
    /is not a known field/,
  ],
  [
    'sim_scene',
    'box without a size',
    (m) => ((m.objects[0].shape = { kind: 'box' }), m),
    'sim_scene.objects[0].shape.size',
    /is required for box, got nothing/,
  ],
  [
    'sim_scene',
    'capsule obstacle without an end',
    (m) => ((m.obstacles = [{ name: 'post', shape: 'capsule', a: [0, 0, 0], radius: 0.03 }]), m),
    'sim_scene.obstacles[0].b',
    /is required for capsule, got nothing/,
  ],
  ['sim_scene', 'short pose', (m) => ((m.objects[0].pose = [0, 0, 0]), m), 'sim_scene.objects[0].pose', /at least 7/],
  [
    'sim_scene',
    'predicate not boolean',
    (m) => ((m.predicates.in_bowl = 'yes'), m),
    'sim_scene.predicates.in_bowl',
    /must be a boolean/,
  ],
  ['gripper', 'position above 1', (m) => ({ ...m, position: 1.5 }), 'gripper.position', /must be ≤ 1/],
  ['gripper', 'position below 0', (m) => ({ ...m, position: -0.1 }), 'gripper.position', /must be ≥ 0/],
  ['gripper', 'arm missing', (m) => (delete m.arm, m), 'gripper.arm', /is required/],
  ['stop', 'arm empty', (m) => ({ ...m, arm: '' }), 'stop.arm', /must not be empty/],
  ['stop', 'reason not string', (m) => ({ ...m, reason: 3 }), 'stop.reason', /must be a string, not a number/],
  ['events', 'unknown event', (m) => ({ ...m, event: 'done' }), 'events.event', /must be one of "accepted"/],
  [
    'events',
    'rejected without reason',
    (m) => ({ ...m, event: 'rejected' }),
    'events.reason',
    /is required for event "rejected"/,
  ],
  [
    'events',
    'null id on non-fault',
    (m) => ({ ...m, id: null, command: null }),
    'events.id',
    /only fault may have id null/,
  ],
  [
    'events',
    'command without id',
    (m) => ({ ...m, id: null, event: 'fault', reason: 'estop' }),
    'events.command',
    /exactly when id is given/,
  ],
  ['events', 'reason format', (m) => ({ ...m, event: 'aborted', reason: 'Stop!' }), 'events.reason', /must match/],
  [
    'events',
    'unknown command',
    (m) => ({ ...m, command: 'move' }),
    'events.command',
    /must be one of "trajectory", "gripper", "stop", null/,
  ],
  [
    'heartbeat',
    'timeout not above period',
    (m) => ({ ...m, timeout: 0.1 }),
    'heartbeat.timeout',
    /must be greater than period \(0\.1\)/,
  ],
  ['heartbeat', 'period zero', (m) => ({ ...m, period: 0 }), 'heartbeat.period', /must be > 0/],
  ['heartbeat', 'timeout too long', (m) => ({ ...m, timeout: 100 }), 'heartbeat.timeout', /must be ≤ 60/],
  ['heartbeat', 'not an object', () => [1], 'heartbeat', /must be an object, not an array/],
  ['availability', 'other word', () => 'up', 'availability', /must be "online" or "offline", got "up"/],
  // Ids and names have their types wherever they appear, null or not.
  ['events', 'id with a space', (m) => ({ ...m, id: 't 1' }), 'events.id', /must match/],
  ['events', 'arm with a slash', (m) => ({ ...m, arm: 'a/b' }), 'events.arm', /must match/],
  [
    'state',
    'trajectory id with a space',
    (m) => ((m.arms.main.trajectory = 't 1'), m),
    'state.arms.main.trajectory',
    /must match/,
  ],
  ['state', 'unknown hb field', (m) => ((m.hb.sq = 1), m), 'state.hb.sq', /is not a known field/],
];

test('valid messages of every kind pass, vendor x_ fields are ignored', () => {
  for (const [kind, make] of Object.entries(valid) as [keyof MessageBySuffix, () => unknown][]) {
    const r = validateMessage(kind, make());
    assert.ok(r.ok, `${kind}: ${r.ok ? '' : r.message}`);
  }
  assert.ok(validateMessage('trajectory', { ...trajectory(), x_vendor: { a: 1 } }).ok);
  assert.ok(validateMessage('state', { ...state(), hb: { ...state().hb, x_vendor: 1 } }).ok, 'x_ in hb');
  const unattached = { ...event(), id: null, arm: null, command: null, event: 'fault', reason: 'estop' };
  assert.ok(validateMessage('events', unattached).ok, 'null id and arm');
  assert.ok(validateMessage('state', { ...state(), hb: null }).ok, 'hb null');
  const withDerivatives = trajectory();
  withDerivatives.points = withDerivatives.points.map((p) => ({ ...p, dq: [0, 0], ddq: [0, 0] }));
  assert.ok(validateMessage('trajectory', withDerivatives).ok);
});

test(`every rule rejects with field, rule and value (${cases.length} cases)`, () => {
  for (const [kind, label, mutate, field, rule] of cases) {
    const r = validateMessage(kind, mutate(structuredClone(valid[kind]())));
    assert.equal(r.ok, false, `${kind} / ${label}: accepted`);
    if (r.ok) continue;
    assert.ok(
      r.message.startsWith(`${field}: `) || r.message.includes(`; ${field}: `),
      `${kind} / ${label}: message "${r.message}" does not name ${field}`,
    );
    assert.match(r.message, rule, `${kind} / ${label}`);
  }
});

test('decodeMessage: availability is text, the rest JSON; bad JSON is named', () => {
  assert.deepEqual(decodeMessage('availability', Buffer.from('offline')), { ok: true, value: 'offline' });
  const bad = decodeMessage('state', '{"v":1,');
  assert.equal(bad.ok, false);
  assert.match(bad.ok ? '' : bad.message, /^state: must be JSON \(/);
  const nan = decodeMessage('heartbeat', '{"v":1,"time":NaN}');
  assert.match(nan.ok ? '' : nan.message, /must be JSON/);
  assert.ok(decodeMessage('stop', JSON.stringify(stop())).ok);
});

test('description and state are checked against the robot config and each other', () => {
  const d = description();
  assert.deepEqual(compareDescription(d, { arms: [{ name: 'main', joints: ['j1', 'j2'] }] }), []);
  assert.deepEqual(
    compareDescription(d, {
      arms: [
        { name: 'main', joints: ['j1', 'j3'] },
        { name: 'aux', joints: ['k'] },
      ],
    }),
    [
      'arm "main" joints are [j1, j2], the robot config says [j1, j3]',
      'arm "aux" is missing from the controller\'s description (it has main)',
    ],
  );
  assert.deepEqual(compareDescription(d, { arms: [] }), ['arm "main" is not in the robot config']);
  // Limits the controller enforces may be looser than the config's, not tighter (it would refuse correct plans).
  const config = { lower: -1, upper: 1, velocity: 1, acceleration: 2 };
  const limited = {
    ...d,
    arms: [
      {
        ...d.arms[0]!,
        limits: [
          { ...config, velocity: 2 },
          { ...config, lower: null, upper: null },
        ],
      },
    ],
  };
  const want = (limits: (typeof config)[]) => ({ arms: [{ name: 'main', joints: ['j1', 'j2'], limits }] });
  assert.deepEqual(compareDescription(limited, want([config, config])), []);
  const tight = {
    ...limited,
    arms: [{ ...limited.arms[0]!, limits: [{ ...config, velocity: 0.5, upper: 0.9 }, config] }],
  };
  assert.deepEqual(compareDescription(tight, want([config, config])), [
    'arm "main" joint j1: the controller enforces velocity ≤ 0.5, the robot config plans with 1',
    'arm "main" joint j1: the controller enforces upper bound 0.9, the robot config plans with 1',
  ]);
  assert.deepEqual(compareDescription(d, want([config, config])), [], 'a description without limits');
  assert.deepEqual(compareState(state(), d), []);
  const s = state();
  s.arms.main!.q = [1, 2, 3];
  s.arms.main!.dq = [0, 0, 0];
  assert.deepEqual(compareState(s, d), ['state.arms.main.q: must have 2 entries (got 3)']);
  const noGripper = { ...d, arms: [{ ...d.arms[0]!, gripper: false }] };
  assert.deepEqual(compareState(state(), noGripper), [
    'state.arms.main.gripper: must be null, the arm has no gripper (got 0.5)',
  ]);
  const extra = state();
  extra.arms.other = extra.arms.main!;
  assert.deepEqual(compareState(extra, d), ['state.arms.other: is not an arm of the description']);
});
