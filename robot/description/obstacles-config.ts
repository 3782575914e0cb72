// The `obstacles` list of a setup config: static boxes, spheres and capsules in the world frame,
// each with a unique name, so a refusal can say which one a link came too close to; and an
// arm's `held` object, a capsule in the TCP frame.
import { isRecord } from '../common/validation/values.js';
import { fromXyzRpy } from '../math/transform.js';
import type { Checker } from './checker.js';
import type { HeldObject, Obstacle } from './types.js';

const SHAPES = ['box', 'sphere', 'capsule'] as const;
const KEYS: Record<(typeof SHAPES)[number], string[]> = {
  box: ['name', 'shape', 'xyz', 'rpy', 'size'],
  sphere: ['name', 'shape', 'xyz', 'radius_m'],
  capsule: ['name', 'shape', 'a', 'b', 'radius_m'],
};

/**
 * Reads `obstacles` (absent = none); every broken rule becomes an issue on `c`. `extraKeys` are
 * allowed beside each shape's keys for a caller that reads more per obstacle (a scene's `color`).
 */
export function readObstacles(c: Checker, list: unknown, extraKeys: readonly string[] = []): Obstacle[] {
  const names = new Set<string>();
  const out: Obstacle[] = [];
  c.forEachItem(list, 'obstacles', '{name, shape, …}', (item, q) => {
    const name = c.string(item, 'name', `${q}.name`, /^[a-z0-9][a-z0-9_-]*$/);
    if (names.has(name)) c.issue(`${q}.name`, name, 'must be unique');
    names.add(name);
    const shape = c.oneOf(item, 'shape', `${q}.shape`, SHAPES);
    // An unknown shape has no fields to check.
    if (shape !== item.shape) return;
    c.knownKeys(item, [...KEYS[shape], ...extraKeys], `${q}.`);
    if (shape === 'box') {
      const size = c.triple(item, 'size', `${q}.size`);
      if (size.every(Number.isFinite) && !size.every((x) => x > 0))
        c.issue(`${q}.size`, size, 'must be > 0 on every axis');
      const pose = fromXyzRpy(c.triple(item, 'xyz', `${q}.xyz`), c.triple(item, 'rpy', `${q}.rpy`, [0, 0, 0]));
      out.push({ name, shape, pose, half: [size[0] / 2, size[1] / 2, size[2] / 2] });
    } else if (shape === 'sphere') {
      const center = c.triple(item, 'xyz', `${q}.xyz`);
      out.push({ name, shape, center, radius: c.number(item, 'radius_m', `${q}.radius_m`, { gt: 0 }) });
    } else {
      const a = c.triple(item, 'a', `${q}.a`);
      const b = c.triple(item, 'b', `${q}.b`);
      out.push({ name, shape, a, b, radius: c.number(item, 'radius_m', `${q}.radius_m`, { gt: 0 }) });
    }
  });
  return out;
}

/** An arm's `held: {name, a, b, radius_m}` (absent = nothing held). */
export function readHeld(c: Checker, raw: unknown, q: string): HeldObject | undefined {
  if (raw === undefined) return undefined;
  if (!isRecord(raw)) {
    c.issue(q, raw, 'must be a mapping {name, a, b, radius_m}');
    return undefined;
  }
  c.knownKeys(raw, ['name', 'a', 'b', 'radius_m'], `${q}.`);
  return {
    name: c.string(raw, 'name', `${q}.name`, /^[a-z0-9][a-z0-9_-]*$/),
    a: c.triple(raw, 'a', `${q}.a`),
    b: c.triple(raw, 'b', `${q}.b`),
    radius: c.number(raw, 'radius_m', `${q}.radius_m`, { gt: 0 }),
  };
}
