// Where a scene's objects start: none below the table top, none overlapping another object or an
// obstacle (an object inside a container is not an overlap), and the height each one rests at.
import type { Checker } from '../../description/checker.js';
import { CONTACT_EPS, type Solid, bottomZ, footprintHas, obstacleSolid, solidOf, solidsOverlap } from './geometry.js';
import type { SceneDescription, SceneObject } from './types.js';

export const isContainer = (o: Pick<SceneObject, 'tags'>): boolean => o.tags.includes('container');

/** Whether `inner`'s centre is over `container`'s footprint and not below its bottom. */
function within(inner: Solid & { x: number; y: number }, container: Solid): boolean {
  return footprintHas(container.footprint, inner.x, inner.y) && inner.zMin >= container.zMin - CONTACT_EPS;
}

const placed = (o: SceneObject): Solid & { x: number; y: number } => ({
  ...solidOf(o.shape, o.pose),
  x: o.pose[3]!,
  y: o.pose[7]!,
});

/** Reports every object below the table and every overlapping pair, naming both. */
export function checkLayout(c: Checker, scene: SceneDescription): void {
  const solids = scene.objects.map(placed);
  const obstacles = scene.obstacles.map(obstacleSolid);
  scene.objects.forEach((o, i) => {
    const q = `objects[${i}].xyz`;
    const xyz = [o.pose[3], o.pose[7], o.pose[11]];
    const a = solids[i]!;
    if (a.zMin < scene.table.height - CONTACT_EPS)
      c.issue(
        q,
        xyz,
        `must keep the object's bottom (z = ${round(a.zMin)}) at or above the table (z = ${scene.table.height})`,
      );
    for (let j = 0; j < i; j++) {
      const b = solids[j]!;
      const other = scene.objects[j]!;
      if ((isContainer(other) && within(a, b)) || (isContainer(o) && within(b, a))) continue;
      if (solidsOverlap(a, b)) c.issue(q, xyz, `must not overlap object "${other.name}" (objects[${j}])`);
    }
    scene.obstacles.forEach((ob, k) => {
      if (solidsOverlap(a, obstacles[k]!)) c.issue(q, xyz, `must not overlap obstacle "${ob.name}" (obstacles[${k}])`);
    });
  });
}

/**
 * Fills each object's restZ: dropped straight down, lowest first, onto the highest surface under
 * its centre: the table, an obstacle's top, an object's top, or a container's bottom.
 */
export function restHeights(scene: SceneDescription): void {
  const supports: (Solid & { container: boolean })[] = scene.obstacles.map((o) => ({
    ...obstacleSolid(o),
    container: false,
  }));
  const order = [...scene.objects].sort((a, b) => bottomZ(a.shape, a.pose) - bottomZ(b.shape, b.pose));
  for (const o of order) {
    const s = placed(o);
    let rest = scene.table.height;
    for (const below of supports) {
      const surface = below.container ? below.zMin : below.zMax;
      if (surface <= s.zMin + CONTACT_EPS && surface > rest && footprintHas(below.footprint, s.x, s.y)) rest = surface;
    }
    o.restZ = rest;
    supports.push({ ...s, zMin: rest, zMax: s.zMax - s.zMin + rest, container: isContainer(o) });
  }
}

const round = (v: number): number => Math.round(v * 1e6) / 1e6;
