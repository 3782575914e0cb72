// Property: what the controller receives (the trajectory points as the daemon rounds them) keeps
// every joint's dq within the velocity limit, ddq within the acceleration limit and one-tick
// differences of ddq within the jerk limit, up to what the rounding adds (sent-rates.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../../robot/common/prng.js';
import { loadSetup } from '../../../../robot/description/loader.js';
import type { RobotDescription, SetupDescription } from '../../../../robot/description/types.js';
import { createPlanner, type PlanResult } from '../../../../robot/motion/planner/planner.js';
import { sentTolerance } from '../../../../robot/safety/sent-rates.js';
import { trajectoryPoints } from '../../../../robot/tools/motion.js';
import { planBenchCases } from '../../../../daemon/bench/plan-bench.js';
import { robot } from '../../kinematics/robots.js';
import { models } from './checks.js';

/** The first sent value past its limit + tolerance, or ''. */
function sentViolation(plan: PlanResult, description: RobotDescription | SetupDescription): string {
  if (!plan.ok) return '';
  const m = models(description);
  for (const [a, ref] of plan.arms.entries()) {
    const points = trajectoryPoints({ ...ref, goal: null }, ref.rate);
    const tol = sentTolerance(1 / ref.rate);
    const over = (x: number, limit: number, allowance: number) => Math.abs(x) > limit * (1 + 1e-9) + allowance;
    for (const [k, p] of points.entries()) {
      const dq = p.dq!,
        ddq = p.ddq!,
        before = k > 0 ? points[k - 1].ddq! : ddq;
      for (let j = 0; j < ref.joints.length; j++) {
        const lim = m.arms[a].limits[j];
        const where = `arm ${ref.arm} joint ${ref.joints[j]} point ${k} of ${points.length}`;
        if (over(dq[j], lim.velocity, tol.velocity)) return `${where}: dq ${dq[j]} > ${lim.velocity}`;
        if (over(ddq[j], lim.acceleration, tol.acceleration)) return `${where}: ddq ${ddq[j]} > ${lim.acceleration}`;
        const jerk = k > 0 ? (ddq[j] - before[j]) * ref.rate : 0;
        if (over(jerk, lim.jerk, tol.jerk))
          return `${where}: Δddq·rate ${jerk} > ${lim.jerk} (×${(Math.abs(jerk) / lim.jerk).toFixed(4)})`;
      }
    }
  }
  return '';
}

function dualYam(): SetupDescription {
  const r = loadSetup('dual-yam');
  assert.ok(r.ok);
  return r.value;
}

const LIMIT_CODES = ['joint-velocity', 'joint-acceleration', 'joint-jerk', 'timing', 'limits_exceeded'];

test('property (seed 91; UR5e, Panda, YAM, dual YAM chunks; UR5e and Panda stops): every sent dq, ddq and ddq step is within its limit + rounding', () => {
  const rng = new Prng(91);
  const robots: [string, RobotDescription | SetupDescription, number, number][] = [
    ['ur5e', robot('ur5e'), 10, 0.05],
    ['panda', robot('panda'), 10, 0.05],
    ['yam', robot('yam'), 10, 0.05],
    ['dual-yam', dualYam(), 4, 0.08],
  ];
  for (const [name, description, poses, step] of robots) {
    const planner = createPlanner(description);
    const cases = planBenchCases(description, { cases: 25, poses, step, rng });
    let planned = 0;
    for (const [i, c] of cases.entries()) {
      const what = `seed 91 ${name} chunk ${i}: ${JSON.stringify(c)}`;
      const r = planner.planCartesian(c);
      if (!r.ok) {
        assert.ok(!LIMIT_CODES.includes(r.code), `${what}: refused for a limit: ${r.message}`);
        continue;
      }
      planned++;
      assert.equal(sentViolation(r, description), '', what);
      // A stop from the middle of the motion, from its reference state there (what an abort sends).
      const ref = r.arms.map((a) => a);
      const k = Math.floor(rng.uniform(1, ref[0].count - 1));
      const state = Object.fromEntries(
        ref.map((a) => {
          const n = a.joints.length,
            row = (x: Float64Array) => Array.from(x.subarray(k * n, (k + 1) * n));
          return [a.arm, { q: row(a.q), dq: row(a.dq), ddq: row(a.ddq) }];
        }),
      );
      const stop = planner.planStop({ state });
      const stopWhat = `${what}, stop from tick ${k}: ${JSON.stringify(state)}`;
      assert.ok(stop.ok || !LIMIT_CODES.includes(stop.code), `${stopWhat}: ${stop.ok ? '' : stop.message}`);
      assert.equal(sentViolation(stop, description), '', stopWhat);
    }
    assert.ok(planned >= 18, `${name}: only ${planned} of 25 planned`);
  }
});
