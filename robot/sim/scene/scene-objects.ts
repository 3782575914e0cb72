// The `objects` and `obstacles` lists of a scene file, and colours ("#rrggbb" or a name).
import { isRecord } from '../../common/validation/values.js';
import type { Checker, Obj } from '../../description/checker.js';
import { readObstacles } from '../../description/obstacles-config.js';
import { fromXyzRpy } from '../../math/transform.js';
import { NAME_PATTERN } from './predicate-text.js';
import type { Rgb, SceneObject, SceneObstacle, Shape } from './types.js';

/** The colour names a scene may use, as sRGB. */
export const COLOR_NAMES: Record<string, Rgb> = {
  red: [220, 40, 40],
  green: [40, 170, 70],
  blue: [40, 90, 220],
  yellow: [240, 210, 40],
  orange: [245, 140, 30],
  purple: [140, 60, 180],
  white: [245, 245, 245],
  black: [25, 25, 25],
  grey: [128, 128, 128],
};

/** `obj[key]` as a colour: "#rrggbb" or one of COLOR_NAMES; `fallback` when absent. */
export function readColor(c: Checker, obj: Obj, key: string, quantity: string, fallback: Rgb): Rgb {
  const v = obj[key];
  if (v === undefined) return fallback;
  if (typeof v === 'string' && Object.hasOwn(COLOR_NAMES, v)) return COLOR_NAMES[v]!;
  const hex = typeof v === 'string' ? /^#([0-9a-fA-F]{6})$/.exec(v) : null;
  if (!hex) {
    c.issue(quantity, v, `must be "#rrggbb" or one of ${Object.keys(COLOR_NAMES).join(', ')}`);
    return fallback;
  }
  const n = Number.parseInt(hex[1]!, 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

const SHAPE_KEYS = { box: ['size_m'], cylinder: ['radius_m', 'height_m'], sphere: ['radius_m'] } as const;
const COMMON_KEYS = ['name', 'shape', 'mass_kg', 'color', 'xyz', 'rpy', 'tags', 'noise'];
const SHAPES = Object.keys(SHAPE_KEYS) as (keyof typeof SHAPE_KEYS)[];

/** Reads `objects` (absent = none). Names are checked for uniqueness by the caller, across lists. */
export function readObjects(c: Checker, list: unknown): SceneObject[] {
  const out: SceneObject[] = [];
  c.forEachItem(list, 'objects', '{name, shape, …}', (item, q) => {
    const name = c.string(item, 'name', `${q}.name`, NAME_PATTERN);
    const kind = c.oneOf(item, 'shape', `${q}.shape`, SHAPES);
    // An unknown shape has no fields to check.
    if (kind !== item.shape) return;
    c.knownKeys(item, [...COMMON_KEYS, ...SHAPE_KEYS[kind]], `${q}.`);
    const shape = readShape(c, item, kind, q);
    const noise = c.section(item, 'noise', `${q}.`, false) ?? {};
    c.knownKeys(noise, ['xy_m', 'yaw_rad'], `${q}.noise.`);
    out.push({
      name,
      shape,
      mass: c.number(item, 'mass_kg', `${q}.mass_kg`, { gt: 0 }),
      color: readColor(c, item, 'color', `${q}.color`, COLOR_NAMES.grey!),
      pose: fromXyzRpy(c.triple(item, 'xyz', `${q}.xyz`), c.triple(item, 'rpy', `${q}.rpy`, [0, 0, 0])),
      tags: readTags(c, item.tags, `${q}.tags`),
      noise: {
        xy: c.number(noise, 'xy_m', `${q}.noise.xy_m`, { min: 0 }, 0),
        yaw: c.number(noise, 'yaw_rad', `${q}.noise.yaw_rad`, { min: 0 }, 0),
      },
      restZ: NaN,
    });
  });
  return out;
}

function readShape(c: Checker, item: Obj, kind: Shape['kind'], q: string): Shape {
  if (kind === 'box') {
    const size = c.triple(item, 'size_m', `${q}.size_m`);
    if (size.every(Number.isFinite) && !size.every((x) => x > 0))
      c.issue(`${q}.size_m`, size, 'must be > 0 on every axis');
    return { kind, size };
  }
  const radius = c.number(item, 'radius_m', `${q}.radius_m`, { gt: 0 });
  if (kind === 'sphere') return { kind, radius };
  return { kind, radius, height: c.number(item, 'height_m', `${q}.height_m`, { gt: 0 }) };
}

function readTags(c: Checker, v: unknown, q: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((t) => typeof t === 'string' && NAME_PATTERN.test(t))) {
    c.issue(q, v, `must be a list of words matching ${NAME_PATTERN}`);
    return [];
  }
  return v;
}

/** The setup's obstacle shapes, each with a `color` (default grey). */
export function readSceneObstacles(c: Checker, list: unknown): SceneObstacle[] {
  const items = Array.isArray(list) ? list : [];
  return readObstacles(c, list, ['color']).map((o) => {
    const i = items.findIndex((item) => isRecord(item) && item.name === o.name);
    return { ...o, color: readColor(c, items[i] as Obj, 'color', `obstacles[${i}].color`, COLOR_NAMES.grey!) };
  });
}
