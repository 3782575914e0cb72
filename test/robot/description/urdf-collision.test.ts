import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatIssue } from '../../../robot/common/validation/issue.js';
import { parseRobotConfig } from '../../../robot/description/robot-config.js';
import { urdfCollisionCapsules } from '../../../robot/description/urdf-collision.js';

const URDF = `<robot name="u"><link name="b"><collision><geometry><sphere radius="0.05"/></geometry></collision></link>
  <link name="l1">
    <collision><origin xyz="0 0 0.1"/><geometry><cylinder radius="0.04" length="0.2"/></geometry></collision>
    <collision><origin xyz="0.1 0 0" rpy="0 0 1.5707963267948966"/><geometry><box size="0.02 0.3 0.04"/></geometry></collision>
  </link>
  <link name="other"><collision><geometry><mesh filename="x.stl"/></geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="b"/><child link="l1"/><axis xyz="0 0 1"/>
  <limit lower="-1" upper="1" velocity="2"/></joint></robot>`;

const near = (a: number[], b: number[]) => a.every((x, i) => Math.abs(x - b[i]) < 1e-12);

test('by hand: sphere, cylinder and box collision shapes bounded by capsules in the link frame', () => {
  const r = urdfCollisionCapsules(URDF, new Set(['b', 'l1']));
  assert.ok(r.ok, r.ok ? '' : r.errors.join('\n'));
  const [sphere, cyl, box] = r.capsules;
  assert.deepEqual(sphere, { link: 'b', radius: 0.05, a: [0, 0, 0], b: [0, 0, 0] });
  assert.deepEqual([cyl.link, cyl.radius, cyl.a, cyl.b], ['l1', 0.04, [0, 0, 0], [0, 0, 0.2]]);
  // Longest box axis y (0.3), turned 90° about z onto −x; radius over the 0.02 × 0.04 section.
  assert.equal(box.radius, Math.hypot(0.01, 0.02));
  assert.ok(near(box.a, [0.25, 0, 0]) && near(box.b, [-0.05, 0, 0]), JSON.stringify(box));
  const mesh = urdfCollisionCapsules(URDF, new Set(['other']));
  assert.ok(!mesh.ok);
  assert.match(
    mesh.errors[0],
    /^link "other" <collision> \(line \d+\): geometry <mesh>: only box, cylinder and sphere/,
  );
});

test('capsules: urdf takes the capsules from the URDF; needs URDF kinematics', () => {
  const config = {
    name: 'arm',
    kinematics: { type: 'urdf', urdf: 'u.urdf', base_link: 'b' },
    limits: { j1: { position: [-1, 1], velocity: 2, acceleration: 1, jerk: 2 } },
    capsules: 'urdf',
    workspace: { min: [-1, -1, 0], max: [1, 1, 1] },
    table: { normal: [0, 0, 1], offset_m: 0 },
  };
  const r = parseRobotConfig(config, { readText: () => URDF });
  assert.ok(r.ok, r.ok ? '' : r.issues.map((i) => formatIssue(i)).join('\n'));
  assert.deepEqual(
    r.value.capsules.map((c) => c.link),
    ['b', 'l1', 'l1'],
  );
  const dh = parseRobotConfig(
    {
      ...config,
      kinematics: { type: 'dh-standard', joints: [{ name: 'j1', link: 'l1', a: 0.3, d: 0.1, alpha: 0 }] },
    },
    { readText: () => undefined },
  );
  assert.ok(!dh.ok);
  assert.deepEqual(
    dh.issues.map((i) => formatIssue(i)),
    ['robot "arm": capsules: needs kinematics.type urdf, got "urdf"'],
  );
});
