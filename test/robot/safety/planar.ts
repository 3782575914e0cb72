// A planar 3R test arm for the safety checks.
import assert from 'node:assert/strict';
import { parseRobotConfig } from '../../../robot/description/robot-config.js';
import type { RobotDescription } from '../../../robot/description/types.js';

/** A planar 3R arm (links 0.3 m, capsules of radius 0.02 along each link) in z = 0, over `table`. */
export function planar(
  ignore: [string, string][] = [],
  table: { normal: number[]; offset_m: number } = { normal: [0, 0, 1], offset_m: -1 },
): RobotDescription {
  const limits = { position: [-3, 3], velocity: 10, acceleration: 100, jerk: 1000 };
  const r = parseRobotConfig(
    {
      name: 'planar',
      kinematics: {
        type: 'dh-standard',
        joints: ['l1', 'l2', 'l3'].map((l, i) => ({ name: `j${i + 1}`, link: l, a: 0.3, d: 0, alpha: 0 })),
      },
      limits: { j1: limits, j2: limits, j3: limits },
      capsules: ['l1', 'l2', 'l3'].map((link) => ({ link, radius: 0.02, a: [0, 0, 0], b: [0.3, 0, 0] })),
      self_collision_ignore: ignore,
      workspace: { min: [-2, -2, -2], max: [2, 2, 2] },
      table,
    },
    { readText: () => undefined },
  );
  assert.ok(r.ok);
  return r.value;
}
