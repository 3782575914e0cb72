// Sample 0 is the measured state: a violation already there is tolerated while the path makes it
// no worse (never deeper than so far, clear stays clear); deeper than the bound it needs an operator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadArms } from '../../../robot/description/loader.js';
import { checkTrajectories, robotSafety, type JointTrajectory } from '../../../robot/safety/trajectory-check.js';
import { RobotModel } from '../../../robot/tools/robot-model.js';
import { planCartesianMotion } from '../../../robot/tools/plan.js';
import { robot } from '../kinematics/robots.js';
import { planar } from './planar.js';

/** A path from a to b (smooth, slow) and optionally on to c, at 100 Hz over T s per leg. */
function path(T: number, ...legs: number[][]): JointTrajectory {
  const q: number[] = [];
  const times: number[] = [];
  const steps = Math.round(T * 100);
  for (let l = 0; l + 1 < legs.length; l++)
    for (let k = l === 0 ? 0 : 1; k <= steps; k++) {
      const u = k / steps;
      const s = u * u * u * (10 - 15 * u + 6 * u * u);
      times.push(times.length / 100);
      q.push(...legs[l].map((x, j) => x + s * (legs[l + 1][j] - x)));
    }
  return { times, q };
}

/** The planar 3R arm over a table whose normal is y. */
const planarOver = (offset: number) => planar([], { normal: [0, 1, 0], offset_m: offset });

const yam = robot('yam');
const HOME = [0, 1, 1, 0, 0, 0];
const at = (j1: number) => [j1, ...HOME.slice(1)];

test('a joint 1e-6 past its limit may move back in or stay, never further out; once inside it stays inside', () => {
  const { arms, envelope } = robotSafety(yam);
  const up = 3.13;
  assert.ok(checkTrajectories(arms, [path(1, at(up + 1e-6), at(up - 0.1))], envelope).ok);
  assert.ok(checkTrajectories(arms, [path(1, at(up + 1e-6), at(up + 1e-6))], envelope).ok, 'holding');
  const out = checkTrajectories(arms, [path(1, at(up + 1e-6), at(up + 1e-4))], envelope);
  assert.ok(!out.ok && out.violation.code === 'joint-position');
  assert.ok((out.violation as { sample: number }).sample > 0);
  assert.match(
    out.message,
    /^arm "yam" joint "joint1" at sample \d+: position 3\.130001\d* exceeds the limit 3\.13 \(it started 1\.0e-6 rad past it: a path may start past a limit only if it never goes further\)$/,
  );
  // In, then out again (less than it started): refused where it leaves.
  const back = checkTrajectories(arms, [path(1, at(up + 1e-6), at(up - 0.01), at(up + 5e-7))], envelope);
  assert.ok(!back.ok && back.violation.code === 'joint-position', back.ok ? '' : back.message);
  assert.ok((back.violation as { sample: number }).sample > 100);
  assert.doesNotMatch(back.message, /started/);
});

test('a joint further outside than its settle tolerance at the start needs an operator', () => {
  const { arms, envelope } = robotSafety(yam);
  const r = checkTrajectories(arms, [path(1, at(3.17), at(3))], envelope);
  assert.ok(!r.ok);
  assert.deepEqual(r.violation, {
    code: 'joint-position',
    arm: 'yam',
    joint: 'joint1',
    sample: 0,
    value: 3.17,
    limit: 3.13,
    start: { bound: 0.03 },
  });
  assert.equal(
    r.message,
    'arm "yam" joint "joint1" at sample 0: position 3.17000 exceeds the limit 3.13; the arm starts there, more than the 0.03 rad a path may start past a limit: it is outside its limits and needs an operator to bring it back',
  );
});

test('yam planned from joint1 = upper + 1e-6: a 3 cm move plans (it was refused at sample 0)', () => {
  const r = loadArms('yam');
  assert.ok(r.ok);
  const model = new RobotModel(r.value.setup);
  const q = at(3.13 + 1e-6);
  const p = model.tcpPose('arm', q);
  const target = { position: [p[0]! + 0.03, p[1]!, p[2]!], orientation: p.slice(3) };
  const plan = planCartesianMotion(model, { arm: q }, [{ arm: target }], []);
  assert.ok(plan.ok, plan.ok ? '' : plan.message);
});

test('table: a start depth may shrink or hold, never grow; clear stays clear; deeper than 10 mm needs an operator', () => {
  // Every capsule starts 2 mm into the table (y = 0, r = 0.02, table at y = −0.018).
  const { arms, envelope } = robotSafety(planarOver(-0.018));
  const zero = [0, 0, 0];
  assert.ok(checkTrajectories(arms, [path(1, zero, [0.3, 0, 0])], envelope).ok, 'lifting out');
  const down = checkTrajectories(arms, [path(1, zero, [0, -0.3, 0])], envelope);
  assert.ok(!down.ok && down.violation.code === 'table', down.ok ? '' : down.message);
  assert.match(down.message, /at sample 1: 2\.0\d* mm below the table plane \(it started 2\.0 mm past it/);
  const again = checkTrajectories(arms, [path(1, zero, [0.3, 0, 0], [-0.001, 0, 0])], envelope);
  assert.ok(!again.ok && again.violation.code === 'table' && !('start' in again.violation), 'once clear');
  // Sub-0.1 mm depths show their digits.
  const tiny = robotSafety(planarOver(-0.02 + 4e-5));
  const t = checkTrajectories(tiny.arms, [path(1, [0.3, 0, 0], [-0.0001, 0, 0])], tiny.envelope);
  assert.ok(!t.ok);
  assert.match(t.message, / 0\.0\d+ mm below the table plane$/);
  const deep = robotSafety(planarOver(0));
  const d = checkTrajectories(deep.arms, [path(1, zero, [0.3, 0, 0])], deep.envelope);
  assert.ok(!d.ok && d.violation.code === 'table');
  assert.match(
    d.message,
    /at sample 0: 20\.0 mm below the table plane; the arm starts there, more than the 10\.0 mm.*needs an operator/,
  );
});

test('self-collision: a 3 mm start overlap may open, not deepen', () => {
  const { arms, envelope } = robotSafety(planarOver(-1));
  const s = 2.025; // links l1 and l3 overlap by 3.2 mm
  const open = checkTrajectories(arms, [path(1, [0, s, s], [0, 1.8, 1.8])], envelope);
  assert.ok(open.ok, open.ok ? '' : open.message);
  const fold = checkTrajectories(arms, [path(1, [0, s, s], [0, 2.03, 2.03])], envelope);
  assert.ok(!fold.ok && fold.violation.code === 'self-collision', fold.ok ? '' : fold.message);
  assert.match(fold.message, /collide at sample 1 .*\(it started 3\.2 mm past it/);
});
