import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatIssue } from '../../../robot/common/validation/issue.js';
import { parseSetupConfig } from '../../../robot/description/setup-config.js';
import { robot } from '../kinematics/robots.js';

const base = {
  name: 'cell',
  arms: [{ name: 'left', robot: 'yam', base: { xyz: [0, 0, 0] } }],
  min_clearance_m: 0.02,
  workspace: { min: [-1, -1, -0.1], max: [1, 1, 1] },
  table: { normal: [0, 0, 1], offset_m: 0 },
};
const parse = (extra: object) => parseSetupConfig({ ...base, ...extra }, () => ({ ok: true, value: robot('yam') }));

test('setup obstacles: boxes, spheres and capsules with a clearance; none by default', () => {
  const none = parse({});
  assert.ok(none.ok);
  assert.deepEqual([none.value.obstacles, none.value.obstacleClearance], [[], 0]);
  const r = parse({
    obstacle_clearance_m: 0.01,
    obstacles: [
      { name: 'shelf', shape: 'box', xyz: [0.4, 0, 0.2], size: [0.2, 0.4, 0.02] },
      { name: 'lamp', shape: 'sphere', xyz: [0, 0.5, 0.6], radius_m: 0.1 },
      { name: 'post', shape: 'capsule', a: [0.5, 0.5, 0], b: [0.5, 0.5, 0.8], radius_m: 0.03 },
    ],
  });
  assert.ok(r.ok, r.ok ? '' : r.issues.map((i) => formatIssue(i)).join('\n'));
  const [shelf, lamp, post] = r.value.obstacles;
  assert.equal(r.value.obstacleClearance, 0.01);
  assert.ok(shelf.shape === 'box' && shelf.pose[3] === 0.4 && shelf.pose[11] === 0.2);
  assert.deepEqual(shelf.half, [0.1, 0.2, 0.01]);
  assert.deepEqual(lamp, { name: 'lamp', shape: 'sphere', center: [0, 0.5, 0.6], radius: 0.1 });
  assert.deepEqual(post, { name: 'post', shape: 'capsule', a: [0.5, 0.5, 0], b: [0.5, 0.5, 0.8], radius: 0.03 });
});

test('setup obstacles: each broken rule names the field, the rule and the value', () => {
  const r = parse({
    obstacle_clearance_m: -1,
    obstacles: [
      { name: 'a', shape: 'box', xyz: [0, 0, 0], size: [0.1, 0, 0.1] },
      { name: 'a', shape: 'sphere', xyz: [0, 0], radius_m: 0.1 },
      { name: 'c', shape: 'cone', xyz: [0, 0, 0] },
      { name: 'd', shape: 'capsule', a: [0, 0, 0], b: [0, 0, 1], radius_m: 0, colour: 'red' },
      'wall',
    ],
  });
  assert.ok(!r.ok);
  assert.deepEqual(
    r.issues.map((i) => formatIssue(i)),
    [
      'robot "cell": obstacles[0].size: must be > 0 on every axis, got [0.1,0,0.1]',
      'robot "cell": obstacles[1].name: must be unique, got "a"',
      'robot "cell": obstacles[1].xyz: must be a list of three finite numbers, got [0,0]',
      'robot "cell": obstacles[2].shape: must be one of box, sphere, capsule, got "cone"',
      'robot "cell": obstacles[3].colour: is not a known key (known: name, shape, a, b, radius_m), got "red"',
      'robot "cell": obstacles[3].radius_m: must be > 0, got 0',
      'robot "cell": obstacles[4]: must be a mapping, got "wall"',
      'robot "cell": obstacle_clearance_m: must be ≥ 0, got -1',
    ],
  );
  assert.ok(!parse({ obstacles: { name: 'x' } }).ok);
});

test('setup arms: an optional held object, a capsule in the TCP frame, with its issues', () => {
  const arm = (held: unknown) => ({ arms: [{ ...base.arms[0], held }] });
  const r = parse(arm({ name: 'cup', a: [0, 0, 0.02], b: [0, 0, 0.1], radius_m: 0.04 }));
  assert.ok(r.ok, r.ok ? '' : r.issues.map((i) => formatIssue(i)).join('\n'));
  assert.deepEqual(r.value.arms[0].held, { name: 'cup', a: [0, 0, 0.02], b: [0, 0, 0.1], radius: 0.04 });
  const none = parse({});
  assert.ok(none.ok && !('held' in none.value.arms[0]));
  const bad = parse(arm({ name: 'cup', a: [0, 0], b: [0, 0, 0.1], radius_m: -1 }));
  assert.ok(!bad.ok);
  assert.deepEqual(
    bad.issues.map((i) => formatIssue(i)),
    [
      'robot "cell": arms[0].held.a: must be a list of three finite numbers, got [0,0]',
      'robot "cell": arms[0].held.radius_m: must be > 0, got -1',
    ],
  );
});
