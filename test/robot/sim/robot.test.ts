import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROBOTS_DIR, listConfigs } from '../../../robot/description/loader.js';
import { GRIPPER_STROKE_S, homeOf, loadSimRobot } from '../../../robot/sim/robot.js';

test('every shipped robot description feeds the simulator: arms, joint names and limits, home, gripper', () => {
  const yam = loadSimRobot('yam');
  assert.equal(yam.name, 'yam');
  assert.deepEqual(
    yam.arms.map((a) => a.name),
    ['arm'],
  );
  assert.deepEqual(
    yam.arms[0]!.joints.map((j) => j.name),
    ['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6'],
  );
  // From yam.urdf: joint2 limit lower="0" upper="3.65" velocity="0.6"; acceleration from yam.yaml.
  assert.deepEqual(yam.arms[0]!.joints[1], { name: 'joint2', lower: 0, upper: 3.65, velocity: 0.6, acceleration: 2 });
  assert.deepEqual(yam.arms[0]!.home, [0, 1, 1, 0, 0, 0]);
  assert.deepEqual(yam.arms[0]!.gripper, { min: 0, max: 1, speed: 1 / GRIPPER_STROKE_S });
  const ur = loadSimRobot('ur5e');
  assert.deepEqual(ur.arms[0]!.gripper, { min: 0, max: 0.085, speed: 0.085 / GRIPPER_STROKE_S });
  const panda = loadSimRobot('panda');
  assert.equal(panda.arms[0]!.joints.length, 7);
  assert.deepEqual(panda.arms[0]!.gripper, { min: 0, max: 0.08, speed: 0.08 / GRIPPER_STROKE_S });
  const dual = loadSimRobot('dual-yam');
  assert.deepEqual(
    dual.arms.map((a) => a.name),
    ['left', 'right'],
  );
  assert.deepEqual(dual.arms[1]!.joints, yam.arms[0]!.joints);
  for (const name of listConfigs()) assert.ok(loadSimRobot(name).arms.length >= 1, name);
});

test('home defaults to 0 clamped into the limits', () => {
  assert.deepEqual(
    homeOf({
      name: 'a',
      joints: [
        { name: 'x', lower: 0.5, upper: 1, velocity: 1, acceleration: 1 },
        { name: 'y', lower: -1, upper: -0.2, velocity: 1, acceleration: 1 },
        { name: 'z', lower: -1, upper: 1, velocity: 1, acceleration: 1 },
      ],
    }),
    [0.5, -0.2, 0],
  );
});

test('a config given by path loads with its URDF beside it; bad ones are reported with robot, field, value and rule', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bs-robot-'));
  try {
    copyFileSync(join(ROBOTS_DIR, 'yam.urdf'), join(dir, 'yam.urdf'));
    const yam = readFileSync(join(ROBOTS_DIR, 'yam.yaml'), 'utf8');
    writeFileSync(join(dir, 'myarm.yaml'), yam.replace('name: yam', 'name: myarm'));
    assert.equal(loadSimRobot(join(dir, 'myarm.yaml')).arms[0]!.joints.length, 6);
    writeFileSync(
      join(dir, 'bad.yaml'),
      yam.replace('name: yam', 'name: bad').replace('home: [0, 1, 1, 0, 0, 0]', 'home: [0, 4, 1, 0, 0, 0]'),
    );
    assert.throws(
      () => loadSimRobot(join(dir, 'bad.yaml')),
      /robot "bad": joint "joint2": home\[1\]: must be within the joint limits \[0, 3\.65\], got 4/,
    );
    writeFileSync(
      join(dir, 'short.yaml'),
      yam.replace('name: yam', 'name: short').replace('home: [0, 1, 1, 0, 0, 0]', 'home: [0, 1]'),
    );
    assert.throws(
      () => loadSimRobot(join(dir, 'short.yaml')),
      /robot "short": home: must be a list of 6 joint positions \(one per joint\), got \[0,1\]/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.throws(
    () => loadSimRobot('no-such-robot'),
    /robot "no-such-robot": config file: cannot be read, got ".*no-such-robot\.yaml"/,
  );
});
