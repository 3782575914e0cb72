// World-frame geometry of scene shapes at a pose: vertical extents, horizontal footprints and
// overlap of solids (objects and obstacles). Shared by the scene checks, the success predicates
// and the simulation, so "on top", "inside" and "rests on" mean the same everywhere.
import type { Obstacle } from '../../description/types.js';
import type { Transform } from '../../math/transform.js';
import type { Shape } from './types.js';

/** Slack (m) for touching surfaces: a block resting on the table touches it without overlapping. */
export const CONTACT_EPS = 1e-4;

/** Half the shape's extent along world axis `row` (0 x, 1 y, 2 z) at `pose`'s rotation. */
function halfExtent(shape: Shape, pose: Transform, row: number): number {
  if (shape.kind === 'sphere') return shape.radius;
  const r = 4 * row;
  if (shape.kind === 'box')
    return (
      (Math.abs(pose[r]!) * shape.size[0] +
        Math.abs(pose[r + 1]!) * shape.size[1] +
        Math.abs(pose[r + 2]!) * shape.size[2]) /
      2
    );
  const c = Math.min(1, Math.abs(pose[r + 2]!));
  return (c * shape.height) / 2 + shape.radius * Math.sqrt(1 - c * c);
}

/** Half the shape's height along world z at `pose`. */
export const halfHeight = (shape: Shape, pose: Transform): number => halfExtent(shape, pose, 2);
export const topZ = (shape: Shape, pose: Transform): number => pose[11]! + halfExtent(shape, pose, 2);
export const bottomZ = (shape: Shape, pose: Transform): number => pose[11]! - halfExtent(shape, pose, 2);

/** A horizontal footprint: a circle, or a rectangle centred at (x, y) with its x axis along (c, s). */
export type Footprint =
  | { kind: 'circle'; x: number; y: number; r: number }
  | { kind: 'rect'; x: number; y: number; c: number; s: number; hx: number; hy: number };

const vertical = (v: number): boolean => Math.abs(v) >= 1 - 1e-9;

/**
 * The shape's footprint at `pose`: exact when it stands on a face or end (a box with any local
 * axis vertical, an upright cylinder, a sphere's great circle), else its axis-aligned bounding rectangle.
 */
export function footprint(shape: Shape, pose: Transform): Footprint {
  const x = pose[3]!;
  const y = pose[7]!;
  if (shape.kind === 'sphere') return { kind: 'circle', x, y, r: shape.radius };
  if (shape.kind === 'cylinder' && vertical(pose[10]!)) return { kind: 'circle', x, y, r: shape.radius };
  if (shape.kind === 'box') {
    const up = [0, 1, 2].find((j) => vertical(pose[8 + j]!));
    if (up !== undefined) {
      const [k, l] = [0, 1, 2].filter((j) => j !== up) as [number, number];
      return { kind: 'rect', x, y, c: pose[k]!, s: pose[4 + k]!, hx: shape.size[k] / 2, hy: shape.size[l] / 2 };
    }
  }
  return { kind: 'rect', x, y, c: 1, s: 0, hx: halfExtent(shape, pose, 0), hy: halfExtent(shape, pose, 1) };
}

/** (x, y) in the footprint's own frame. */
function local(f: Footprint & { kind: 'rect' }, x: number, y: number): [number, number] {
  const dx = x - f.x;
  const dy = y - f.y;
  return [f.c * dx + f.s * dy, -f.s * dx + f.c * dy];
}

export function footprintHas(f: Footprint, x: number, y: number): boolean {
  if (f.kind === 'circle') return (x - f.x) ** 2 + (y - f.y) ** 2 <= f.r * f.r;
  const [lx, ly] = local(f, x, y);
  return Math.abs(lx) <= f.hx && Math.abs(ly) <= f.hy;
}

/** Whether world point (x, y) lies over the shape at `pose` (its footprint, boundary included). */
export const footprintContains = (shape: Shape, pose: Transform, x: number, y: number): boolean =>
  footprintHas(footprint(shape, pose), x, y);

const corners = (f: Footprint & { kind: 'rect' }): [number, number][] =>
  [
    [1, 1],
    [1, -1],
    [-1, -1],
    [-1, 1],
  ].map(([a, b]) => [f.x + f.c * a! * f.hx - f.s * b! * f.hy, f.y + f.s * a! * f.hx + f.c * b! * f.hy]);

/** Whether two footprints share area deeper than CONTACT_EPS (separating axes for rectangles). */
export function footprintsOverlap(a: Footprint, b: Footprint): boolean {
  if (a.kind === 'circle' && b.kind === 'circle') return Math.hypot(a.x - b.x, a.y - b.y) < a.r + b.r - CONTACT_EPS;
  if (a.kind === 'circle' || b.kind === 'circle') {
    const [c, r] = (a.kind === 'circle' ? [a, b] : [b, a]) as [
      Footprint & { kind: 'circle' },
      Footprint & { kind: 'rect' },
    ];
    const [lx, ly] = local(r, c.x, c.y);
    return Math.hypot(lx - clamp(lx, r.hx), ly - clamp(ly, r.hy)) < c.r - CONTACT_EPS;
  }
  for (const f of [a, b])
    for (const [ax, ay] of [
      [f.c, f.s],
      [-f.s, f.c],
    ] as const) {
      const pa = corners(a).map(([x, y]) => x * ax + y * ay);
      const pb = corners(b).map(([x, y]) => x * ax + y * ay);
      if (Math.min(Math.max(...pa), Math.max(...pb)) - Math.max(Math.min(...pa), Math.min(...pb)) <= CONTACT_EPS)
        return false;
    }
  return true;
}

const clamp = (v: number, h: number): number => Math.max(-h, Math.min(h, v));

/** A footprint swept between two heights: how objects and obstacles are compared. */
export interface Solid {
  footprint: Footprint;
  zMin: number;
  zMax: number;
}

export const solidOf = (shape: Shape, pose: Transform): Solid => ({
  footprint: footprint(shape, pose),
  zMin: bottomZ(shape, pose),
  zMax: topZ(shape, pose),
});

/** An obstacle as a solid; a capsule that is not vertical becomes its bounding box (conservative). */
export function obstacleSolid(o: Obstacle): Solid {
  if (o.shape === 'box') return solidOf({ kind: 'box', size: [2 * o.half[0], 2 * o.half[1], 2 * o.half[2]] }, o.pose);
  if (o.shape === 'sphere')
    return {
      footprint: { kind: 'circle', x: o.center[0], y: o.center[1], r: o.radius },
      ...zSpan(o.center, o.center, o.radius),
    };
  const { a, b, radius: r } = o;
  const footprint: Footprint =
    a[0] === b[0] && a[1] === b[1]
      ? { kind: 'circle', x: a[0], y: a[1], r }
      : {
          kind: 'rect',
          x: (a[0] + b[0]) / 2,
          y: (a[1] + b[1]) / 2,
          c: 1,
          s: 0,
          hx: Math.abs(a[0] - b[0]) / 2 + r,
          hy: Math.abs(a[1] - b[1]) / 2 + r,
        };
  return { footprint, ...zSpan(a, b, r) };
}

const zSpan = (a: readonly number[], b: readonly number[], r: number) => ({
  zMin: Math.min(a[2]!, b[2]!) - r,
  zMax: Math.max(a[2]!, b[2]!) + r,
});

export const solidsOverlap = (a: Solid, b: Solid): boolean =>
  Math.min(a.zMax, b.zMax) - Math.max(a.zMin, b.zMin) > CONTACT_EPS && footprintsOverlap(a.footprint, b.footprint);
