// Test helper: scene file fragments (a 4 cm block, a bowl) and a parse that must succeed.
import assert from 'node:assert/strict';
import { formatIssue } from '../../../robot/common/validation/issue.js';
import { parseScene } from '../../../robot/sim/scene/scene-config.js';
import type { SceneDescription } from '../../../robot/sim/scene/types.js';

export const block = (name: string, xyz: number[], extra: object = {}) => ({
  name,
  shape: 'box',
  size_m: [0.04, 0.04, 0.04],
  mass_kg: 0.05,
  xyz,
  ...extra,
});

/** Radius 0.07 m, 0.05 m tall, standing on z = 0 at (0.3, -0.2). */
export const bowl = {
  name: 'bowl',
  shape: 'cylinder',
  radius_m: 0.07,
  height_m: 0.05,
  mass_kg: 0.2,
  xyz: [0.3, -0.2, 0.025],
  tags: ['container'],
};

/** A valid scene `name` for robot yam with a 1 m table and `raw`'s keys; fails the test otherwise. */
export function validScene(raw: object, name = 'cell'): SceneDescription {
  const r = parseScene({ name, robot: 'yam', table: { size_m: [1, 1] }, ...raw }, name);
  assert.ok(r.ok, r.ok ? '' : r.issues.map((i) => formatIssue(i)).join('\n'));
  return r.value;
}
