// The planning worker plans with the setup the daemon compiled at start-up, not the config
// files: an edited or removed file after start changes nothing it plans (before, after a restart).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadArms } from '../../../robot/description/loader.js';
import { planCartesianMotion, warmUpRequest, type PlanResult } from '../../../robot/tools/plan.js';
import { PlanThread } from '../../../robot/tools/plan-thread.js';
import { RobotModel } from '../../../robot/tools/robot-model.js';

const duration = (r: PlanResult): number => {
  assert.ok(r.ok, r.ok ? '' : `${r.code}: ${r.message}`);
  return r.plan.duration;
};

test('the worker plans with the setup compiled at start: a config edited, then removed, on disk changes nothing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'plan-thread-'));
  const file = join(dir, 'ur5e.yaml');
  copyFileSync('configs/robots/ur5e.yaml', file);
  const loaded = loadArms('ur5e', dir);
  assert.ok(loaded.ok);
  const model = new RobotModel(loaded.value.setup);
  // A 10 cm move: joint limits a tenth as large slow it (the TCP speed limit bounds both).
  const { start, targets } = warmUpRequest(model);
  const arm = model.armNames[0];
  const target = targets[0][arm]!;
  const far = [{ [arm]: { ...target, position: [target.position[0] + 0.1, target.position[1], target.position[2]] } }];
  const expected = duration(planCartesianMotion(model, start, far));
  // Every joint's velocity, acceleration and jerk limit cut to a tenth, as an operator might edit it.
  const slow = readFileSync(file, 'utf8').replace(
    /velocity: ([\d.]+), acceleration: ([\d.]+), jerk: ([\d.]+)/g,
    (_m, v, a, j) => `velocity: ${v / 10}, acceleration: ${a / 10}, jerk: ${j / 10}`,
  );
  assert.notEqual(slow, readFileSync(file, 'utf8'));
  writeFileSync(file, slow);
  const edited = loadArms('ur5e', dir);
  assert.ok(edited.ok);
  const slower = duration(planCartesianMotion(new RobotModel(edited.value.setup), start, far));
  assert.ok(slower > expected + 0.2, `the edited limits plan ${slower} s vs ${expected} s`);
  const thread = new PlanThread();
  try {
    await thread.warmUp('ur5e', model.setup);
    assert.equal(duration(await thread.plan('ur5e', model.setup, start, far)), expected, 'edited');
    rmSync(dir, { recursive: true });
    assert.equal(duration(await thread.plan('ur5e', model.setup, start, far)), expected, 'removed');
    // A new worker (after close, as after a crash) gets the setup again with its first request.
    await thread.close();
    assert.equal(duration(await thread.plan('ur5e', model.setup, start, far)), expected, 'after a restart');
  } finally {
    await thread.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
