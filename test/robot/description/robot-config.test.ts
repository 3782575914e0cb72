import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRobotConfig } from '../../../robot/description/robot-config.js';
import { formatIssue } from '../../../robot/common/validation/issue.js';

const LIMITS = { position: [-3, 3], velocity: 2, acceleration: 10, jerk: 100 };

function valid(): Record<string, any> {
  return {
    name: 'arm',
    kinematics: {
      type: 'dh-standard',
      joints: [
        { name: 'j1', link: 'l1', a: 0.3, d: 0.1, alpha: 1.5707963267948966 },
        { name: 'j2', link: 'l2', a: 0.25, d: 0, alpha: 0 },
      ],
    },
    limits: { j1: { ...LIMITS }, j2: { ...LIMITS } },
    gripper: { min: 0, max: 0.08, unit: 'm' },
    capsules: [{ link: 'l1', radius: 0.05, a: [0, 0, 0], b: [0.3, 0, 0] }],
    workspace: { min: [-1, -1, 0], max: [1, 1, 1] },
    table: { normal: [0, 0, 1], offset_m: 0 },
  };
}

const URDF = `<robot name="u"><link name="b"/><link name="l1"/>
  <joint name="j1" type="revolute"><parent link="b"/><child link="l1"/><axis xyz="0 0 1"/>
  <limit lower="-1" upper="1" velocity="-2"/></joint></robot>`;

function messages(mutate: (c: Record<string, any>) => void): string[] {
  const c = valid();
  mutate(c);
  const r = parseRobotConfig(c, { readText: (f) => (f === 'u.urdf' ? URDF : undefined) });
  return r.ok ? [] : r.issues.map((i) => formatIssue(i));
}

test('a valid config parses, with defaults for the optional sections', () => {
  const r = parseRobotConfig(valid(), { readText: () => undefined });
  assert.ok(r.ok, r.ok ? '' : r.issues.map((i) => formatIssue(i)).join('\n'));
  const d = r.value;
  assert.deepEqual(
    d.joints.map((j) => j.limits),
    [
      { lower: -3, upper: 3, velocity: 2, acceleration: 10, jerk: 100 },
      { lower: -3, upper: 3, velocity: 2, acceleration: 10, jerk: 100 },
    ],
  );
  assert.equal(d.ik.acceptPosition, 0.002);
  assert.equal(d.ik.acceptRotation, Math.PI / 180);
  assert.deepEqual(d.path, { positionStep: 0.005, rotationStep: 0.035, rateHz: 100 });
  assert.deepEqual(d.tcpSpeed, { linear: 0.08, angular: 0.5 });
  assert.deepEqual(d.settle, {
    positionTolerance: 0.03,
    velocityTolerance: 0.05,
    samples: 10,
    minWindow: 0.3,
    span: 0.002,
    timeout: 3,
  });
  assert.equal(d.baseLink, 'base');
  assert.deepEqual(d.home, [0, 0], 'home defaults to 0 clamped into the limits');
  assert.equal(d.summary, '', 'no description: empty');
});

test('description: kept when a non-empty string, refused otherwise', () => {
  const c = valid();
  c.description = 'Two-link test arm';
  const r = parseRobotConfig(c, { readText: () => undefined });
  assert.ok(r.ok && r.value.summary === 'Two-link test arm');
  assert.deepEqual(
    messages((x) => {
      x.description = 42;
    }),
    ['robot "arm": description: must be a non-empty string, got 42'],
  );
});

test('every validation rule reports robot, joint, quantity, value and rule', () => {
  const cases: [string, (c: Record<string, any>) => void, string][] = [
    [
      'name pattern',
      (c) => {
        c.name = 'My Arm';
      },
      'robot "My Arm": name: must match /^[a-z0-9][a-z0-9_-]*$/, got "My Arm"',
    ],
    [
      'unknown top-level key',
      (c) => {
        c.limts = {};
      },
      'robot "arm": limts: is not a known key (did you mean "limits"?), got {}',
    ],
    [
      'home length',
      (c) => {
        c.home = [0];
      },
      'robot "arm": home: must be a list of 2 joint positions (one per joint), got [0]',
    ],
    [
      'home outside the limits',
      (c) => {
        c.home = [0, 3.5];
      },
      'robot "arm": joint "j2": home[1]: must be within the joint limits [-3, 3], got 3.5',
    ],
    [
      'kinematics missing',
      (c) => {
        delete c.kinematics;
      },
      'robot "arm": kinematics: must be a mapping, got nothing',
    ],
    [
      'kinematics type',
      (c) => {
        c.kinematics.type = 'dh';
      },
      'robot "arm": kinematics.type: must be one of dh-standard, dh-modified, urdf, got "dh"',
    ],
    [
      'no DH rows',
      (c) => {
        c.kinematics.joints = [];
      },
      'robot "arm": kinematics.joints: must be a non-empty list of DH rows, got []',
    ],
    [
      'DH row not a mapping',
      (c) => {
        c.kinematics.joints[1] = 3;
      },
      'robot "arm": kinematics.joints[1]: must be a mapping, got 3',
    ],
    [
      'DH row without name',
      (c) => {
        delete c.kinematics.joints[0].name;
      },
      'robot "arm": kinematics.joints[0].name: must be a non-empty string, got nothing',
    ],
    [
      'duplicate joint name',
      (c) => {
        c.kinematics.joints[1].name = 'j1';
      },
      'robot "arm": joint "j1": name: must be unique (repeated in kinematics.joints[1]), got "j1"',
    ],
    [
      'duplicate link name',
      (c) => {
        c.kinematics.joints[1].link = 'l1';
      },
      'robot "arm": joint "j2": link: must be unique (repeated in kinematics.joints[1]), got "l1"',
    ],
    [
      'DH number not finite',
      (c) => {
        c.kinematics.joints[0].a = '0.3';
      },
      'robot "arm": joint "j1": a: must be a finite number, got "0.3"',
    ],
    [
      'DH joint type',
      (c) => {
        c.kinematics.joints[0].type = 'spherical';
      },
      'robot "arm": joint "j1": type: must be one of revolute, prismatic, got "spherical"',
    ],
    [
      'DH row unknown key',
      (c) => {
        c.kinematics.joints[0].offset = 1;
      },
      'robot "arm": joint "j1": offset: is not a known key (known: name, link, type, a, d, alpha, theta), got 1',
    ],
    [
      'flange number',
      (c) => {
        c.kinematics.flange = { d: null };
      },
      'robot "arm": kinematics.flange.d: must be a finite number, got null',
    ],
    [
      'URDF unreadable',
      (c) => {
        c.kinematics = { type: 'urdf', urdf: 'missing.urdf' };
      },
      'robot "arm": kinematics.urdf: file cannot be read, got "missing.urdf"',
    ],
    [
      'URDF import error',
      (c) => {
        c.kinematics = { type: 'urdf', urdf: 'u.urdf', tip_link: 'x' };
      },
      'robot "arm": kinematics.urdf: tip_link "x" is not a link of the URDF, got "u.urdf"',
    ],
    [
      'URDF velocity',
      (c) => {
        c.kinematics = { type: 'urdf', urdf: 'u.urdf' };
        c.limits = { j1: { acceleration: 1, jerk: 1 } };
        c.capsules = [];
      },
      'robot "arm": joint "j1": velocity (from URDF): must be > 0, got -2',
    ],
    [
      'limits section missing',
      (c) => {
        delete c.limits;
      },
      'robot "arm": limits: must be a mapping, got nothing',
    ],
    [
      'limits for an unknown joint',
      (c) => {
        c.limits.j9 = LIMITS;
      },
      'robot "arm": joint "j9": limits: names no joint of the chain (j1, j2), got "j9"',
    ],
    [
      'joint without limits',
      (c) => {
        delete c.limits.j2;
      },
      'robot "arm": joint "j2": limits: every joint needs a mapping with velocity, acceleration and jerk, got nothing',
    ],
    [
      'position not a pair',
      (c) => {
        c.limits.j1.position = [1];
      },
      'robot "arm": joint "j1": position: must be [lower, upper], two finite numbers, got [1]',
    ],
    [
      'position order',
      (c) => {
        c.limits.j1.position = [1, -1];
      },
      'robot "arm": joint "j1": position: lower must be < upper, got [1,-1]',
    ],
    [
      'position missing',
      (c) => {
        delete c.limits.j1.position;
      },
      'robot "arm": joint "j1": position: a revolute joint needs position limits [lower, upper], got nothing',
    ],
    [
      'velocity not positive',
      (c) => {
        c.limits.j1.velocity = -1;
      },
      'robot "arm": joint "j1": velocity: must be > 0, got -1',
    ],
    [
      'acceleration not a number',
      (c) => {
        c.limits.j2.acceleration = 'fast';
      },
      'robot "arm": joint "j2": acceleration: must be a finite number, got "fast"',
    ],
    [
      'jerk missing',
      (c) => {
        delete c.limits.j2.jerk;
      },
      'robot "arm": joint "j2": jerk: must be a finite number, got nothing',
    ],
    [
      'jerk NaN',
      (c) => {
        c.limits.j2.jerk = NaN;
      },
      'robot "arm": joint "j2": jerk: must be a finite number, got NaN',
    ],
    [
      'limits unknown key',
      (c) => {
        c.limits.j1.effort = 3;
      },
      'robot "arm": joint "j1": effort: is not a known key (known: position, velocity, acceleration, jerk), got 3',
    ],
    [
      'tcp xyz',
      (c) => {
        c.tcp = { xyz: [0, 0] };
      },
      'robot "arm": tcp.xyz: must be a list of three finite numbers, got [0,0]',
    ],
    [
      'ik tolerance positive',
      (c) => {
        c.ik = { accept_position_m: 0 };
      },
      'robot "arm": ik.accept_position_m: must be > 0, got 0',
    ],
    [
      'ik stop ≤ accept',
      (c) => {
        c.ik = { stop_position_m: 0.01 };
      },
      'robot "arm": ik.stop_position_m: must be ≤ ik.accept_position_m (0.002), got 0.01',
    ],
    [
      'ik stop rotation ≤ accept',
      (c) => {
        c.ik = { stop_rotation_rad: 0.1 };
      },
      `robot "arm": ik.stop_rotation_rad: must be ≤ ik.accept_rotation_deg in radians (${Math.PI / 180}), got 0.1`,
    ],
    [
      'ik iterations integer',
      (c) => {
        c.ik = { max_iterations: 2.5 };
      },
      'robot "arm": ik.max_iterations: must be an integer, got 2.5',
    ],
    [
      'path rate',
      (c) => {
        c.path = { rate_hz: 0 };
      },
      'robot "arm": path.rate_hz: must be > 0, got 0',
    ],
    [
      'tcp speed',
      (c) => {
        c.tcp_speed = { linear_m_s: -0.1 };
      },
      'robot "arm": tcp_speed.linear_m_s: must be > 0, got -0.1',
    ],
    [
      'settle samples',
      (c) => {
        c.settle = { samples: 1 };
      },
      'robot "arm": settle.samples: must be ≥ 2, got 1',
    ],
    [
      'settle unknown key',
      (c) => {
        c.settle = { window: 1 };
      },
      'robot "arm": settle.window: is not a known key (known: position_tol_rad, velocity_tol_rad_s, samples, min_window_s, span_rad, timeout_s), got 1',
    ],
    [
      'gripper range',
      (c) => {
        c.gripper.max = 0;
      },
      'robot "arm": gripper.max: must be > gripper.min (0), got 0',
    ],
    [
      'gripper unit',
      (c) => {
        c.gripper.unit = 'mm';
      },
      'robot "arm": gripper.unit: must be one of m, rad, normalized, got "mm"',
    ],
    [
      'gripper jaw width',
      (c) => {
        c.gripper.jaw = { open_width_m: 0, depth_m: 0.05, thickness_m: 0.02, axis: 'y' };
      },
      'robot "arm": gripper.jaw.open_width_m: must be > 0, got 0',
    ],
    [
      'gripper jaw axis',
      (c) => {
        c.gripper.jaw = { open_width_m: 0.08, depth_m: 0.05, thickness_m: 0.02, axis: 'z' };
      },
      'robot "arm": gripper.jaw.axis: must be one of x, y, got "z"',
    ],
    [
      'capsule link',
      (c) => {
        c.capsules[0].link = 'l7';
      },
      'robot "arm": capsules[0].link: names no link of the chain (base, l1, l2), got "l7"',
    ],
    [
      'capsule radius',
      (c) => {
        c.capsules[0].radius = 0;
      },
      'robot "arm": capsules[0].radius: must be > 0, got 0',
    ],
    [
      'capsule endpoint',
      (c) => {
        c.capsules[0].b = [0, 0, Infinity];
      },
      'robot "arm": capsules[0].b: must be a list of three finite numbers, got [0,0,null]',
    ],
    [
      'capsules not a list',
      (c) => {
        c.capsules = {};
      },
      'robot "arm": capsules: must be a list, got {}',
    ],
    [
      'self-collision pair',
      (c) => {
        c.self_collision_ignore = [['l1', 'l9']];
      },
      'robot "arm": self_collision_ignore: must be a list of [link, link] pairs naming links of the chain, got [["l1","l9"]]',
    ],
    [
      'workspace box',
      (c) => {
        c.workspace.max[2] = 0;
      },
      'robot "arm": workspace.max: must exceed workspace.min on every axis, got [1,1,0]',
    ],
    [
      'workspace missing',
      (c) => {
        delete c.workspace;
      },
      'robot "arm": workspace: must be a mapping, got nothing',
    ],
    [
      'table normal',
      (c) => {
        c.table.normal = [0, 0, 0];
      },
      'robot "arm": table.normal: must be a non-zero vector, got [0,0,0]',
    ],
  ];
  for (const [what, mutate, expected] of cases) {
    const got = messages(mutate);
    assert.ok(got.includes(expected), `${what}: expected\n  ${expected}\ngot\n  ${got.join('\n  ')}`);
  }
  assert.deepEqual(parseRobotConfig([1], { readText: () => undefined }), {
    ok: false,
    issues: [{ path: 'robot "?": config', value: [1], rule: 'must be a mapping' }],
  });
});

test('all issues are collected in one pass', () => {
  const got = messages((c) => {
    c.limits.j1.velocity = 0;
    c.limits.j2.jerk = -1;
    c.path = { rate_hz: -5 };
  });
  assert.equal(got.length, 3, got.join('\n'));
});

test('URDF velocity is used when the config gives none; config values win', () => {
  const ok = `<robot name="u"><link name="b"/><link name="l1"/>
    <joint name="j1" type="continuous"><parent link="b"/><child link="l1"/><limit velocity="1.5"/></joint></robot>`;
  const base = { ...valid(), kinematics: { type: 'urdf', urdf: 'ok.urdf' }, capsules: [] };
  const read = { readText: () => ok };
  const a = parseRobotConfig({ ...base, limits: { j1: { acceleration: 1, jerk: 2 } } }, read);
  assert.ok(a.ok);
  assert.deepEqual(a.value.joints[0].limits, {
    lower: -Infinity,
    upper: Infinity,
    velocity: 1.5,
    acceleration: 1,
    jerk: 2,
  });
  const b = parseRobotConfig(
    { ...base, limits: { j1: { position: [-1, 1], velocity: 0.5, acceleration: 1, jerk: 2 } } },
    read,
  );
  assert.ok(b.ok);
  assert.deepEqual(b.value.joints[0].limits, { lower: -1, upper: 1, velocity: 0.5, acceleration: 1, jerk: 2 });
});
