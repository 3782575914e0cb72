// Test helper: the shipped robot configs, compiled (fails the test on an invalid config).
import assert from 'node:assert/strict';
import { loadRobot } from '../../../robot/description/loader.js';
import { formatIssue } from '../../../robot/common/validation/issue.js';
import type { RobotDescription } from '../../../robot/description/types.js';
import { KinematicChain, type CompileOptions } from '../../../robot/kinematics/chain.js';

export function robot(name: string): RobotDescription {
  const r = loadRobot(name);
  assert.ok(r.ok, r.ok ? '' : r.issues.map((i) => formatIssue(i)).join('\n'));
  return r.value;
}

export function chainOf(name: string, options?: CompileOptions): KinematicChain {
  return new KinematicChain(robot(name), options);
}
