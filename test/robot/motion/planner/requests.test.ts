import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSetup } from '../../../../robot/description/loader.js';
import type { SetupDescription } from '../../../../robot/description/types.js';
import { createPlanner, type PlanResult, type PoseTarget } from '../../../../robot/motion/planner/planner.js';
import { robot } from '../../kinematics/robots.js';

const UR5E = robot('ur5e');
const START = [0.3, -1.2, 1.5, -1.9, -1.57, 0.2];
/** Tool pointing down (180° about x), near the START pose's TCP. */
const DOWN = [1, 0, 0, 0];
const pose = (x: number, y: number, z: number, q: number[] = DOWN): PoseTarget => ({
  position: [x, y, z],
  orientation: q,
});

function refused(r: PlanResult, code: string, message: RegExp, fields: Record<string, unknown> = {}): void {
  assert.ok(!r.ok, `expected ${code}, got ok`);
  assert.equal(r.code, code, r.message);
  assert.match(r.message, message);
  for (const [k, v] of Object.entries(fields))
    assert.deepEqual((r as unknown as Record<string, unknown>)[k], v, `${k} of ${JSON.stringify(r)}`);
}

test('bad Cartesian requests: each with its code, the arm, the target index and a message naming the rule', () => {
  const p = createPlanner(UR5E);
  const plan = (targets: (PoseTarget | null)[], measured: unknown = START): PlanResult =>
    p.planCartesian({ measured: { ur5e: measured as number[] }, targets: { ur5e: targets } });
  refused(
    plan([pose(-0.5, -0.3, 0.3), pose(NaN, -0.3, 0.3)]),
    'non-finite',
    /^targets: arm "ur5e" target 1: position must be three finite numbers$/,
    { arm: 'ur5e', target: 1 },
  );
  refused(
    plan([pose(-0.5, -0.3, 0.3, [1, 0, 0, Infinity])]),
    'non-finite',
    /target 0: quaternion must be four finite numbers/,
    { target: 0 },
  );
  refused(
    plan([pose(-0.5, -0.3, 0.3, [0.5, 0, 0, 0.5])]),
    'invalid-quaternion',
    /target 0: quaternion norm 0\.7071\d* is outside \[0\.99, 1\.01\]/,
    { target: 0 },
  );
  // Within [0.99, 1.01] the quaternion is normalised and accepted.
  const near = plan([pose(-0.55, -0.3, 0.3, [1.005, 0, 0, 0])]);
  assert.ok(near.ok, near.ok ? '' : near.message);
  refused(
    plan([pose(-0.5, -0.3, 1.5)]),
    'outside-workspace',
    /^targets: arm "ur5e" target 0 at \(-0\.5000, -0\.3000, 1\.5000\) m is 300\.0 mm outside the workspace box$/,
    { distance: 0.30000000000000004 },
  );
  refused(plan([pose(-0.5, -0.3, -0.05)]), 'outside-workspace', /is 50\.0 mm below the table plane$/);
  // Inside the box but 1.1 m from the shoulder: IK finds no solution along the path.
  refused(
    plan([pose(-0.5, -0.3, 0.3), pose(-0.95, -0.7, 0.3)]),
    'unreachable',
    /^arm "ur5e" target 1: no IK solution at path sample \d+ \(IK (out-of-reach|not-converged); residual/,
    { arm: 'ur5e', target: 1 },
  );
  refused(
    plan([pose(-0.5, -0.3, 0.3)], [0, 0, 0]),
    'invalid-request',
    /^measured: arm "ur5e" has 6 joints, got 3 values$/,
  );
  refused(
    plan([pose(-0.5, -0.3, 0.3)], [0, 0, NaN, 0, 0, 0]),
    'non-finite',
    /^measured: arm "ur5e" joint "elbow" must be a finite number, got NaN$/,
    { joint: 'elbow' },
  );
  refused(plan([]), 'invalid-request', /^targets: no target given for any arm$/);
  refused(plan([null, null]), 'invalid-request', /^targets: no target given for any arm \(every entry is null\)$/);
  refused(
    p.planCartesian({ measured: { ur5e: START }, targets: { ur5: [pose(-0.5, -0.3, 0.3)] } }),
    'unknown-arm',
    /^targets: unknown arm "ur5"; "ur5e" has "ur5e"$/,
    { arm: 'ur5' },
  );
  refused(
    p.planCartesian({ measured: { ur5e: START, left: START }, targets: { ur5e: [pose(-0.5, -0.3, 0.3)] } }),
    'unknown-arm',
    /^measured: unknown arm "left"/,
  );
  refused(
    p.planCartesian({ measured: {}, targets: { ur5e: [pose(-0.5, -0.3, 0.3)] } }),
    'invalid-request',
    /^measured: arm "ur5e" is missing/,
  );
  refused(
    p.planCartesian({
      measured: { ur5e: START },
      targets: { ur5e: [{ position: [0, 0, 0] } as unknown as PoseTarget] },
    }),
    'invalid-request',
    /needs position \[x, y, z\] and orientation \[x, y, z, w\]/,
  );
  refused(p.planCartesian(null as never), 'invalid-request', /request must be an object/);
});

test('bad joint and stop requests: lengths, non-finite values, goals outside the joint limits, unknown arms', () => {
  const p = createPlanner(UR5E);
  refused(
    p.planJoint({ measured: { ur5e: START }, goal: { ur5e: [0, 0, 4, 0, 0, 0] } }),
    'outside-joint-limits',
    /^goal: arm "ur5e" joint "elbow" = 4 is outside its limits \[-3\.14\d*, 3\.14\d*\]$/,
    { joint: 'elbow', value: 4, limit: Math.PI },
  );
  refused(
    p.planJoint({ measured: { ur5e: START }, goal: { ur5e: [0, 0, 0, 0, 0] } }),
    'invalid-request',
    /^goal: arm "ur5e" has 6 joints, got 5 values$/,
  );
  refused(
    p.planJoint({ measured: { ur5e: START }, goal: { arm2: START } }),
    'unknown-arm',
    /^goal: unknown arm "arm2"/,
  );
  refused(
    p.planStop({ state: { ur5e: { q: START, dq: [0, NaN, 0, 0, 0, 0] } } }),
    'non-finite',
    /^state\.dq: arm "ur5e" joint "shoulder_lift" must be a finite number, got NaN$/,
  );
  refused(
    p.planStop({ state: { ur5e: { q: START, dq: [0, 0, 0, 0, 0, 0], ddq: [1] } } }),
    'invalid-request',
    /^state\.ddq: arm "ur5e" has 6 joints, got 1 values$/,
  );
  refused(p.planStop({ state: {} }), 'invalid-request', /^state: arm "ur5e" is missing/);
  // A held goal (null) is a zero-length move that still returns the hold at the start.
  const hold = p.planJoint({ measured: { ur5e: START }, goal: { ur5e: null } });
  assert.ok(
    hold.ok && hold.duration === 0 && hold.arms[0].count === 1 + 12,
    JSON.stringify(hold.ok ? hold.summary : hold),
  );
});

test('dual-arm requests: lists must pair up step by step; unknown arms are named with the known ones', () => {
  const setup = loadSetup('dual-yam');
  assert.ok(setup.ok);
  const p = createPlanner(setup.value);
  const ready = [0, 1, 1, 0, 0, 0];
  const t = pose(0.4, 0.3, 0.35, [0, 0.7071, 0, 0.7071]);
  refused(
    p.planCartesian({ measured: { left: ready, right: ready }, targets: { left: [t, t], right: [t] } }),
    'invalid-request',
    /every arm's list must have the same length .* arm "right" has 1, expected 2/,
    { arm: 'right' },
  );
  refused(
    p.planCartesian({ measured: { left: ready, right: ready }, targets: { middle: [t] } }),
    'unknown-arm',
    /^targets: unknown arm "middle"; "dual-yam" has "left", "right"$/,
  );
  refused(
    p.planCartesian({ measured: { left: ready }, targets: { left: [t] } }),
    'invalid-request',
    /^measured: arm "right" is missing \(every arm's joints are needed\)$/,
  );
});

test('planner set-up: one or two arms with one reference rate; options override rate and hold', () => {
  const setup = loadSetup('dual-yam');
  assert.ok(setup.ok);
  const three: SetupDescription = {
    ...setup.value,
    arms: [...setup.value.arms, { ...setup.value.arms[0], name: 'third' }],
  };
  assert.throws(() => createPlanner(three), /one or two arms are supported, got 3/);
  const mixed: SetupDescription = {
    ...setup.value,
    arms: [
      setup.value.arms[0],
      {
        ...setup.value.arms[1],
        robot: { ...setup.value.arms[1].robot, path: { ...setup.value.arms[1].robot.path, rateHz: 250 } },
      },
    ],
  };
  assert.throws(() => createPlanner(mixed), /different path\.rate_hz \(100, 250\); pass a rate/);
  const p = createPlanner(mixed, { rate: 250, hold: 0.2 });
  assert.deepEqual([p.rate, p.hold, p.name], [250, 0.2, 'dual-yam']);
  const r = p.planJoint({
    measured: { left: [0, 1, 1, 0, 0, 0], right: [0, 1, 1, 0, 0, 0] },
    goal: { left: [0.1, 1, 1, 0, 0, 0] },
  });
  assert.ok(r.ok && r.arms[0].rate === 250 && r.arms[0].t[1] === 1 / 250, JSON.stringify(r.ok ? r.summary : r));
  assert.equal(r.arms[0].count, Math.ceil(r.duration * 250 - 1e-9) + 1 + 50);
  assert.throws(() => createPlanner(UR5E, { rate: 0 }), /rate must be > 0/);
});
