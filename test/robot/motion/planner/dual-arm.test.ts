import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../../robot/common/prng.js';
import { loadSetup } from '../../../../robot/description/loader.js';
import { formatIssue } from '../../../../robot/common/validation/issue.js';
import type { SetupDescription } from '../../../../robot/description/types.js';
import { forwardKinematics } from '../../../../robot/kinematics/forward.js';
import { quat, quatFromTransform } from '../../../../robot/math/quaternion.js';
import { createPlanner, type PoseTarget } from '../../../../robot/motion/planner/planner.js';
import { planBenchCases } from '../../../../daemon/bench/plan-bench.js';
import { endsAtTargets, models, ok, referencesViolation, sampledArmDistance } from './checks.js';

function dualYam(): SetupDescription {
  const r = loadSetup('dual-yam');
  assert.ok(r.ok, r.ok ? '' : r.issues.map((i) => formatIssue(i)).join('\n'));
  return r.value;
}

const SETUP = dualYam();
/** Both arms reaching forward, tool along +x (world). */
const READY = [0, 1, 1, 0, 0, 0];
const ACCEPT = { position: 0.002, rotation: Math.PI / 180 };

function readyOrientation(): number[] {
  const T = forwardKinematics(models(SETUP).arms[0].chain, READY, new Float64Array(12));
  return Array.from(quatFromTransform(quat(), T));
}

const Q = readyOrientation();
const at = (x: number, y: number, z: number): PoseTarget => ({ position: [x, y, z], orientation: Q });

test('dual arm: targets in the world frame, every step synchronised to the slower arm, both at rest on their targets together', () => {
  const planner = createPlanner(SETUP);
  const m = models(SETUP);
  assert.deepEqual(
    planner.arms.map((a) => a.name),
    ['left', 'right'],
  );
  // Left moves 2 cm then 10 cm, right 10 cm then 2 cm: each step waits for the slower arm.
  const left = [at(0.39, 0.3, 0.39), at(0.39, 0.3, 0.29)];
  const right = [at(0.37, -0.2, 0.39), at(0.37, -0.2, 0.37)];
  const plan = ok(planner.planCartesian({ measured: { left: READY, right: READY }, targets: { left, right } }), 'dual');
  assert.equal(referencesViolation(plan, m, planner.hold, { left: READY, right: READY }), '');
  assert.equal(endsAtTargets(plan, m, { left: left[1], right: right[1] }, ACCEPT), '');
  const [l, r] = plan.arms;
  assert.equal(l.t, r.t, 'one time grid');
  assert.equal(l.count, r.count);
  const T = new Float64Array(12);
  plan.summary.stepEnds.forEach((end, k) => {
    const tick = Math.min(l.count - 1, Math.round(end * l.rate));
    for (const [a, targets] of [left, right].entries()) {
      const ref = plan.arms[a];
      forwardKinematics(m.arms[a].chain, ref.q.subarray(tick * 6, tick * 6 + 6), T);
      const d = Math.hypot(
        T[3] - targets[k].position[0],
        T[7] - targets[k].position[1],
        T[11] - targets[k].position[2],
      );
      assert.ok(d < ACCEPT.position + 1e-4, `step ${k} arm ${ref.arm}: ${d * 1000} mm from the target at its end`);
      for (let j = 0; j < 6; j++)
        assert.ok(Math.abs(ref.dq[tick * 6 + j]) < 0.02, `step ${k} arm ${ref.arm} joint ${j} still moving`);
    }
  });
  // Each step lasts at least as long as the slower arm needs alone (it is planned on its own below).
  const alone = (arm: 'left' | 'right', targets: PoseTarget[]): number[] => {
    const p = ok(planner.planCartesian({ measured: { left: READY, right: READY }, targets: { [arm]: targets } }), arm);
    return p.summary.stepEnds.map((e, k) => e - (k ? p.summary.stepEnds[k - 1] : 0));
  };
  const [dl, dr] = [alone('left', left), alone('right', right)];
  const both = plan.summary.stepEnds.map((e, k) => e - (k ? plan.summary.stepEnds[k - 1] : 0));
  // (Within the few per cent that re-stretching the resampled references may add to either plan.)
  for (let k = 0; k < 2; k++) {
    const slower = Math.max(dl[k], dr[k]);
    assert.ok(Math.abs(both[k] / slower - 1) < 0.05, `step ${k}: ${both[k]} s, slower arm alone ${slower} s`);
    assert.ok(
      both[k] > Math.min(dl[k], dr[k]) * 1.5,
      `step ${k}: the faster arm (${Math.min(dl[k], dr[k])} s) is slowed to the slower one (${both[k]} s)`,
    );
  }
});

test('dual arm: an arm left out or null at every step holds exactly still', () => {
  const planner = createPlanner(SETUP);
  const m = models(SETUP);
  const rightStart = [0.2, 1.1, 0.9, 0.1, -0.1, 0.3];
  for (const targets of [
    { left: [at(0.4, 0.28, 0.36), at(0.42, 0.3, 0.34)] },
    { left: [at(0.4, 0.28, 0.36), at(0.42, 0.3, 0.34)], right: [null, null] },
  ]) {
    const plan = ok(
      planner.planCartesian({ measured: { left: READY, right: rightStart }, targets }),
      JSON.stringify(targets),
    );
    assert.equal(referencesViolation(plan, m, planner.hold, { left: READY, right: rightStart }), '');
    const r = plan.arms[1];
    for (let i = 0; i < r.count; i++) {
      for (let j = 0; j < 6; j++) {
        assert.equal(r.q[i * 6 + j], rightStart[j], `tick ${i} joint ${j}`);
        assert.equal(r.dq[i * 6 + j], 0);
      }
    }
    assert.deepEqual(
      plan.summary.finalError.map((e) => e.arm),
      ['left'],
    );
  }
});

test('dual arm: grippers closer than the clearance are refused (arm-collision names both arms, links, sample, distance)', () => {
  const planner = createPlanner(SETUP);
  const bad = planner.planCartesian({
    measured: { left: READY, right: READY },
    targets: { left: [at(0.4, 0.03, 0.35)], right: [at(0.4, -0.03, 0.35)] },
  });
  assert.ok(!bad.ok && bad.code === 'arm-collision', JSON.stringify(bad));
  assert.deepEqual(bad.arms, ['left', 'right']);
  assert.deepEqual(bad.links, ['gripper', 'gripper']);
  assert.ok(bad.distance! < 0.02 && bad.limit === 0.02 && bad.sample! > 0, JSON.stringify(bad));
  assert.match(
    bad.message,
    /arm "left" link "gripper" and arm "right" link "gripper" are -?\d+\.\d mm apart at sample \d+, below the clearance 20\.0 mm/,
  );
  // 10 cm apart: clear.
  const fine = ok(
    planner.planCartesian({
      measured: { left: READY, right: READY },
      targets: { left: [at(0.4, 0.1, 0.35)], right: [at(0.4, -0.1, 0.35)] },
    }),
    '10 cm',
  );
  assert.ok(fine.summary.minArmDistance >= 0.02 && fine.summary.minArmDistance < 0.2, `${fine.summary.minArmDistance}`);
});

test('property (seed 82, 40 dual-arm chunks, half driven toward each other): ok plans keep the clearance by an independent check; refusals are real', () => {
  const planner = createPlanner(SETUP);
  const m = models(SETUP);
  const rng = new Prng(82);
  const cases = planBenchCases(SETUP, { cases: 40, poses: 4, step: 0.08, rng });
  let refused = 0,
    planned = 0;
  const codes: string[] = [];
  for (const [i, c] of cases.entries()) {
    // Every other chunk: both last targets pulled toward their midpoint, to g of their distance.
    if (i % 2 === 1) {
      const l = c.targets.left as PoseTarget[],
        r = c.targets.right as PoseTarget[];
      const a = l[l.length - 1],
        b = r[r.length - 1];
      const g = rng.uniform(0.05, 0.4);
      const mid = [0, 1, 2].map((k) => 0.5 * (a.position[k] + b.position[k]));
      l[l.length - 1] = { position: mid.map((x, k) => x + g * (a.position[k] - x)), orientation: a.orientation };
      r[r.length - 1] = { position: mid.map((x, k) => x + g * (b.position[k] - x)), orientation: b.orientation };
    }
    const what = `seed 82 chunk ${i}: ${JSON.stringify(c)}`;
    const plan = planner.planCartesian(c);
    if (plan.ok) {
      planned++;
      assert.equal(referencesViolation(plan, m, planner.hold, c.measured as Record<string, number[]>), '', what);
      // Sampling overestimates by at most half a point spacing (≤ 1 cm on these links).
      const d = sampledArmDistance(plan, m, 10);
      assert.ok(
        d.distance >= SETUP.minClearance - 1e-9,
        `${what}: ok plan but arms ${d.distance} m apart at tick ${d.tick}`,
      );
      assert.ok(
        d.distance - plan.summary.minArmDistance > -1e-9 && d.distance - plan.summary.minArmDistance < 0.02,
        `${what}: sampled ${d.distance} vs reported ${plan.summary.minArmDistance}`,
      );
    } else {
      assert.ok(
        [
          'arm-collision',
          'self-collision',
          'workspace',
          'table',
          'unreachable',
          'joint-jump',
          'outside-workspace',
        ].includes(plan.code),
        `${what}: ${plan.message}`,
      );
      if (plan.code === 'arm-collision') {
        refused++;
        // The reported distance is below the clearance, and no more than the sampled distance at that sample.
        assert.ok(plan.distance! < SETUP.minClearance, what);
      }
      codes.push(plan.code);
    }
  }
  assert.ok(
    refused >= 3 && planned >= 10,
    `${planned} planned, ${refused} refused for clearance (${codes.join()}): the cases should exercise both`,
  );
});
