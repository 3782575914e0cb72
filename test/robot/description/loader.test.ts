import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listConfigs, loadRobot, loadSetup } from '../../../robot/description/loader.js';
import { formatIssue, type Issue } from '../../../robot/common/validation/issue.js';

test('every shipped config loads and validates', () => {
  const names = listConfigs();
  assert.deepEqual(names, ['dual-yam', 'panda', 'ur5e', 'ur5e-2f85', 'yam']);
  const setups = ['dual-yam', 'ur5e-2f85'];
  for (const name of names) {
    const r = setups.includes(name) ? loadSetup(name) : loadRobot(name);
    assert.ok(r.ok, r.ok ? '' : r.issues.map((i) => formatIssue(i)).join('\n'));
  }
  const gripped = loadSetup('ur5e-2f85');
  assert.ok(gripped.ok);
  // The arm's tool TCP replaces the ur5e config's bare flange: 0.15 m along the flange z axis.
  assert.deepEqual(
    [...gripped.value.arms[0]!.robot.tcp].map((x) => x + 0),
    [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0.15],
  );
  const panda = loadRobot('panda');
  assert.ok(panda.ok);
  assert.equal(panda.value.joints.length, 7);
  assert.deepEqual(panda.value.joints[3].limits, {
    lower: -3.0718,
    upper: -0.0698,
    velocity: 2.175,
    acceleration: 12.5,
    jerk: 6250,
  });
  const yam = loadRobot('yam');
  assert.ok(yam.ok);
  // Position and velocity limits come from the URDF, acceleration and jerk from the YAML.
  assert.deepEqual(yam.value.joints[1].limits, { lower: 0, upper: 3.65, velocity: 0.6, acceleration: 2, jerk: 12 });
  assert.ok(yam.value.links.some((l) => l.name === 'gripper' && l.frame === 6));
  // Fingers travel 0.0475 m each: 0.095 m open at gripper position 1.
  assert.deepEqual(yam.value.gripper!.jaw, { openWidth: 0.095, depth: 0.05, thickness: 0.02, axis: 'y' });
  assert.equal(panda.value.gripper!.jaw!.openWidth, panda.value.gripper!.max);
  const dual = loadSetup('dual-yam');
  assert.ok(dual.ok);
  // The one line for people is kept, for robots and setups alike.
  assert.equal(panda.value.summary, 'Franka Emika Panda, 7 joints, 855 mm reach');
  assert.equal(dual.value.summary, 'Two I2RT YAM arms, shared world frame');
  assert.deepEqual(
    dual.value.arms.map((a) => [a.name, a.robot.name, a.base[7]]),
    [
      ['left', 'yam', 0.3],
      ['right', 'yam', -0.3],
    ],
  );
});

test('loader errors: missing file, name mismatch, bad YAML, wrong kind, setup with a bad arm', () => {
  const dir = mkdtempSync(join(tmpdir(), 'brainstem-robots-'));
  try {
    writeFileSync(join(dir, 'a.yaml'), 'name: b\n');
    writeFileSync(join(dir, 'bad.yaml'), 'name: [unclosed\n');
    writeFileSync(
      join(dir, 'pair.yaml'),
      'name: pair\narms: []\nmin_clearance_m: -1\nworkspace: {min: [0,0,0], max: [1,1,1]}\ntable: {normal: [0,0,1]}\n',
    );
    writeFileSync(
      join(dir, 'twin.yaml'),
      [
        'name: twin',
        'arms:',
        '  - {name: left, robot: nothere, base: {xyz: [0, 0, 0]}}',
        '  - {name: left, robot: a, base: {xyz: [0, 1]}}',
        'min_clearance_m: 0.01',
        'workspace: {min: [0,0,0], max: [1,1,1]}',
        'table: {normal: [0,0,1]}',
      ].join('\n'),
    );
    const msg = (r: { ok: boolean; issues?: unknown[] }): string[] =>
      r.ok ? [] : (r as any).issues.map((i: Issue) => formatIssue(i));
    assert.match(msg(loadRobot('nope', dir))[0], /^robot "nope": config file: cannot be read, got ".*nope\.yaml"$/);
    assert.deepEqual(msg(loadRobot('a', dir)), ['robot "a": name: must equal the file name "a", got "b"']);
    assert.match(msg(loadRobot('bad', dir))[0], /robot "bad": config file: is not valid YAML/);
    assert.deepEqual(msg(loadRobot('pair', dir)), [
      'robot "pair": arms: this is a multi-arm setup; load it with loadSetup, got "pair"',
    ]);
    assert.deepEqual(msg(loadSetup('pair', dir)), [
      'robot "pair": arms: must be a non-empty list of {name, robot, base}, got []',
      'robot "pair": min_clearance_m: must be ≥ 0, got -1',
    ]);
    const twin = msg(loadSetup('twin', dir));
    assert.ok(
      twin.some((m) =>
        /^robot "twin": arms\[0\]\.robot: must name a valid robot config \(robot "nothere": config file: cannot be read, got ".*"\), got "nothere"$/.test(
          m,
        ),
      ),
      twin.join('\n'),
    );
    assert.ok(twin.includes('robot "twin": arms[1].name: must be unique, got "left"'), twin.join('\n'));
    assert.ok(
      twin.includes('robot "twin": arms[1].base.xyz: must be a list of three finite numbers, got [0,1]'),
      twin.join('\n'),
    );
    assert.ok(
      twin.includes(
        'robot "twin": arms[1].robot: must name a valid robot config (robot "a": name: must equal the file name "a", got "b"), got "a"',
      ),
      twin.join('\n'),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
