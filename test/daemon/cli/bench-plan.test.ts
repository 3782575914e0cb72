import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Prng } from '../../../robot/common/prng.js';
import { createPlanner } from '../../../robot/motion/planner/planner.js';
import { planBenchCases, runPlanBench } from '../../../daemon/bench/plan-bench.js';
import { robot } from '../../robot/kinematics/robots.js';

const MAIN = fileURLToPath(new URL('../../../daemon/main.js', import.meta.url));

function run(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('bench plan prints the JSON report (UR5e default and a dual-arm setup)', () => {
  for (const [args, arms] of [
    [[], 1],
    [['--robot', 'dual-yam'], 2],
  ] as const) {
    const r = run(['bench', 'plan', ...args, '--cases', '4', '--poses', '3', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    for (const key of [
      'cases',
      'planned',
      'median_us',
      'p99_us',
      'median_cpu_us',
      'p99_cpu_us',
      'mean_cpu_us',
      'mean_motion_s',
      'mean_path_samples',
    ])
      assert.equal(typeof report[key], 'number', key);
    assert.equal(report.cases, 4);
    assert.equal(report.poses, 3);
    assert.equal(report.arms, arms);
    assert.ok(report.median_us > 0 && report.p99_us >= report.median_us, r.stdout);
  }
});

test('bench plan rejects bad arguments with readable errors', () => {
  const bad: [string[], RegExp][] = [
    [['--robot', 'nosuch'], /robot "nosuch": config file: cannot be read, got ".*nosuch\.yaml"/],
    [['--cases', '0'], /--cases must be an integer ≥ 1, got "0"/],
    [['--poses', 'x'], /--poses must be an integer ≥ 1, got "x"/],
    [['--step', '-1'], /--step must be a positive number, got "-1"/],
  ];
  for (const [args, message] of bad) {
    const r = run(['bench', 'plan', ...args, '--json']);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}`);
    assert.match(r.stderr, message);
  }
});

test('runPlanBench counts plans and codes with an injected clock; cases are reproducible from the seed', () => {
  const ur = robot('ur5e');
  const a = planBenchCases(ur, { cases: 3, poses: 2, step: 0.05, rng: new Prng(5) });
  const b = planBenchCases(ur, { cases: 3, poses: 2, step: 0.05, rng: new Prng(5) });
  assert.deepEqual(a, b);
  assert.equal(a[0].targets.ur5e?.length, 2);
  // One bad case (NaN target) among the good ones is counted by its code.
  const bad = { measured: a[0].measured, targets: { ur5e: [{ position: [NaN, 0, 0], orientation: [0, 0, 0, 1] }] } };
  let t = 0,
    cpu = 0;
  const result = runPlanBench(
    createPlanner(ur),
    [...a, bad],
    () => (t += 1e-6),
    () => (cpu += 2e-6),
    0,
  );
  assert.deepEqual([result.cases, result.planned, result.codes], [4, 3, { 'non-finite': 1 }]);
  assert.ok(Math.abs(result.median_us - 1) < 1e-9 && Math.abs(result.p99_us - 1) < 1e-9, JSON.stringify(result));
  // The CPU clock advances 2 µs per reading, and each plan is read before and after.
  for (const key of ['median_cpu_us', 'p99_cpu_us', 'mean_cpu_us'] as const)
    assert.ok(Math.abs(result[key] - 2) < 1e-9, `${key} ${result[key]}: 2 µs per plan`);
  assert.ok(result.mean_motion_s > 0 && result.mean_reference_samples > result.mean_motion_s * 100);
});
