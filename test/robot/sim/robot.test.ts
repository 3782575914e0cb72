import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkSimRobot, homeOf, loadSimRobot } from '../../../robot/sim/robot.js';

test('the shipped sim robots load', () => {
  const one = loadSimRobot('sim-arm');
  assert.equal(one.arms.length, 1);
  assert.equal(one.arms[0]!.joints.length, 6);
  const two = loadSimRobot('sim-bimanual');
  assert.deepEqual(two.arms.map((a) => a.name), ['left', 'right']);
});

test('home defaults to 0 clamped into the limits', () => {
  assert.deepEqual(homeOf({ name: 'a', joints: [{ name: 'x', lower: 0.5, upper: 1 }, { name: 'y', lower: -1, upper: -0.2 }, { name: 'z', lower: -1, upper: 1 }] }), [0.5, -0.2, 0]);
});

test('bad robot files are reported with field, rule and value', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bs-robot-'));
  try {
    const p = join(dir, 'r.yaml');
    writeFileSync(p, 'name: r\narms:\n  - name: a\n    joints: [{ name: j, lower: 1, upper: 0 }]\n');
    assert.throws(() => loadSimRobot(p), /arms\[0\]\.joints\[0\]: lower must be < upper \(got 1, 0\)/);
    writeFileSync(p, 'name: r\narms: [ {name: a, joints: [ {name: j, lower: -1, upper: 1, speed: 2} ]} ]\n');
    assert.throws(() => loadSimRobot(p), /arms\[0\]\.joints\[0\]\.speed: is not a known field/);
    writeFileSync(p, 'name: [\n');
    assert.throws(() => loadSimRobot(p), /is not valid YAML/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.throws(() => loadSimRobot('no-such-robot'), /robot "no-such-robot": cannot read .*no-such-robot\.yaml \(ENOENT\)/);
  assert.throws(
    () => checkSimRobot({ name: 'r', arms: [{ name: 'a', joints: [{ name: 'j', lower: -1, upper: 1 }], home: [2] }] }),
    /arms\[0\]\.home\[0\]: must be within \[-1, 1\] \(got 2\)/,
  );
  assert.throws(
    () => checkSimRobot({ name: 'r', arms: [{ name: 'a', joints: [{ name: 'j', lower: -1, upper: 1 }, { name: 'j', lower: -1, upper: 1 }] }] }),
    /joints\[1\]\.name: must be unique in the arm/,
  );
});
