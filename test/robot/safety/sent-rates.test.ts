import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkTrajectories, robotSafety, type JointTrajectory } from '../../../robot/safety/trajectory-check.js';
import { SENT_ROUNDING, sentTolerance } from '../../../robot/safety/sent-rates.js';
import { robot } from '../kinematics/robots.js';

const START = [0.3, -1.2, 1.5, -1.9, -1.57, 0.2];
const { arms, envelope } = robotSafety(robot('ur5e'));
const lim = arms[0].limits[2];

/** 6 samples at 100 Hz holding START, with dq and ddq of joint "elbow" (index 2) set per sample. */
function held(dq2: number[], ddq2: number[]): JointTrajectory {
  const times = [0, 0.01, 0.02, 0.03, 0.04, 0.05];
  const col = (x: number[]) => times.flatMap((_, k) => [0, 0, x[k] ?? 0, 0, 0, 0]);
  return { times, q: times.flatMap(() => START), dq: col(dq2), ddq: col(ddq2) };
}

test('sent dq, ddq and differences of ddq are checked against the limits, naming joint, quantity, value, limit, sample', () => {
  const cases: [JointTrajectory, string, number, RegExp][] = [
    [held([0, 0, lim.velocity * 1.01], []), 'joint-velocity', 2, /velocity \(the sent dq\)/],
    [held([], [0, 0, 0, -lim.acceleration * 1.01]), 'joint-acceleration', 3, /acceleration \(the sent ddq\)/],
    // A step of 0.1·jerk·1.02 in one 10 ms tick: jerk 1.02× the limit (ddq itself far below its limit).
    [
      held([], [0, 0, 0.1 * lim.jerk * 0.01 * 10.2]),
      'joint-jerk',
      2,
      /jerk \(difference of the sent ddq from sample 1\)/,
    ],
  ];
  for (const [t, code, sample, words] of cases) {
    const r = checkTrajectories(arms, [t], envelope);
    assert.ok(!r.ok && r.violation.code === code, `${code}: ${JSON.stringify(r)}`);
    if (r.ok || !('joint' in r.violation)) continue;
    assert.deepEqual(
      [r.violation.joint, r.violation.sample, r.violation.source !== undefined],
      ['elbow', sample, true],
    );
    assert.match(r.message, new RegExp(`arm "ur5e" joint "elbow" at sample ${sample}: `));
    assert.match(r.message, words);
    assert.match(r.message, /exceeds the limit \d/);
  }
});

test('the tolerance is exactly what rounding to the sent decimals adds: within passes, just past it is refused', () => {
  // Half a unit of the 6th (dq) and 5th (ddq) decimal; the jerk's: two ddq roundings over dt.
  assert.ok(Math.abs(SENT_ROUNDING.dq - 5e-7) < 1e-20 && Math.abs(SENT_ROUNDING.ddq - 5e-6) < 1e-20);
  const tol = sentTolerance(0.01);
  assert.ok(Math.abs(tol.jerk - 1e-3) < 1e-15, `${tol.jerk}`);
  const at = (dq: number, ddq: number) => checkTrajectories(arms, [held([0, dq], [0, 0, 0, 0, ddq])], envelope);
  // Constant dq or ddq at every sample: no ddq step, so only the velocity or acceleration rule applies.
  const all = (dq: number, ddq: number) =>
    checkTrajectories(arms, [held(Array(6).fill(dq), Array(6).fill(ddq))], envelope);
  const code = (r: ReturnType<typeof all>) => (r.ok ? 'ok' : r.violation.code);
  assert.equal(code(all(lim.velocity + 0.9 * tol.velocity, 0)), 'ok');
  assert.equal(code(all(lim.velocity + 1.1 * tol.velocity, 0)), 'joint-velocity');
  assert.equal(code(all(0, -lim.acceleration - 0.9 * tol.acceleration)), 'ok');
  assert.equal(code(all(0, -lim.acceleration - 1.1 * tol.acceleration)), 'joint-acceleration');
  // One tick's ddq step of exactly jerk·dt plus 0.9 / 1.1 of the rounding tolerance.
  const step = (f: number) => at(0, (lim.jerk + f * tol.jerk) * 0.01);
  assert.ok(step(0.9).ok, JSON.stringify(step(0.9)));
  const r = step(1.1);
  assert.ok(!r.ok && r.violation.code === 'joint-jerk' && r.violation.sample === 4, JSON.stringify(r));
});

test('dq and ddq of the wrong length or not finite are an invalid trajectory', () => {
  const short = { ...held([], []), dq: [0] };
  const r = checkTrajectories(arms, [short], envelope);
  assert.ok(!r.ok && r.violation.code === 'invalid-trajectory' && /dq has 1 values/.test(r.message), JSON.stringify(r));
  const nan = held([], [0, NaN]);
  const n = checkTrajectories(arms, [nan], envelope);
  assert.ok(!n.ok && /ddq has a non-finite value at sample 1/.test(n.message), JSON.stringify(n));
});
