// Triangle meshes of the primitives the renderer draws, tessellated once per distinct shape and
// kept in a bounded cache. Triangles wind counter-clockwise seen from outside (right-hand normal
// points out), which back-face culling relies on.
import type { Triple } from '../../description/types.js';
import type { Transform } from '../../math/transform.js';
import type { Rgb } from '../scene/types.js';

/** A shape in its own frame, centred on the origin; cylinder and capsule axes are local z. */
export type PrimitiveShape =
  | { kind: 'box'; half: Triple }
  | { kind: 'cylinder'; radius: number; height: number }
  | { kind: 'sphere'; radius: number }
  /** The points within `radius` of the segment from z = −length/2 to z = +length/2. */
  | { kind: 'capsule'; radius: number; length: number };

/** One thing to draw: a shape, its world-from-shape pose and its colour. */
export interface Primitive {
  shape: PrimitiveShape;
  pose: Transform;
  color: Rgb;
}

export interface Mesh {
  /** 3 per vertex, in the shape's frame. */
  positions: Float64Array;
  /** 3 vertex indices per triangle. */
  triangles: Uint32Array;
}

/** Segments around a round shape's axis, and latitude steps per hemisphere. */
const AROUND = 24;
const HEMISPHERE_STEPS = 6;

/** Each face of a box as a quad of corner indices (bit 0: +x, bit 1: +y, bit 2: +z), outward CCW. */
const BOX_FACES = [
  [0, 4, 6, 2],
  [1, 3, 7, 5],
  [0, 1, 5, 4],
  [2, 6, 7, 3],
  [0, 2, 3, 1],
  [4, 5, 7, 6],
];

function boxMesh(half: Triple): Mesh {
  const positions = new Float64Array(24);
  for (let i = 0; i < 8; i++) {
    positions[3 * i] = i & 1 ? half[0] : -half[0];
    positions[3 * i + 1] = i & 2 ? half[1] : -half[1];
    positions[3 * i + 2] = i & 4 ? half[2] : -half[2];
  }
  const triangles = new Uint32Array(36);
  BOX_FACES.forEach(([a, b, c, d], f) => triangles.set([a, b, c, a, c, d], 6 * f));
  return { positions, triangles };
}

/**
 * A surface of revolution about z from a profile of (radius, z) pairs running from the bottom
 * pole (radius 0) to the top pole (radius 0): a pole vertex at each end, a ring between.
 */
function latheMesh(profile: [number, number][]): Mesh {
  const rings = profile.length - 2;
  const positions = new Float64Array(3 * (2 + rings * AROUND));
  positions[2] = profile[0][1];
  const top = 1 + rings * AROUND;
  positions[3 * top + 2] = profile[profile.length - 1][1];
  for (let k = 0; k < rings; k++) {
    const [r, z] = profile[k + 1];
    for (let j = 0; j < AROUND; j++) {
      const a = (2 * Math.PI * j) / AROUND;
      const o = 3 * (1 + k * AROUND + j);
      positions[o] = r * Math.cos(a);
      positions[o + 1] = r * Math.sin(a);
      positions[o + 2] = z;
    }
  }
  const ring = (k: number, j: number): number => 1 + k * AROUND + (j % AROUND);
  const tris: number[] = [];
  for (let j = 0; j < AROUND; j++) {
    tris.push(0, ring(0, j + 1), ring(0, j));
    for (let k = 0; k + 1 < rings; k++) {
      tris.push(ring(k, j), ring(k, j + 1), ring(k + 1, j + 1));
      tris.push(ring(k, j), ring(k + 1, j + 1), ring(k + 1, j));
    }
    tris.push(top, ring(rings - 1, j), ring(rings - 1, j + 1));
  }
  return { positions, triangles: Uint32Array.from(tris) };
}

/** Profile of a sphere of `radius` split at the equator into two hemispheres `gap` apart. */
function roundProfile(radius: number, gap: number): [number, number][] {
  const profile: [number, number][] = [];
  for (let s = 0; s <= 2 * HEMISPHERE_STEPS + 1; s++) {
    // A sphere's equator is one ring, not two coincident ones.
    if (gap === 0 && s === HEMISPHERE_STEPS + 1) continue;
    const upper = s > HEMISPHERE_STEPS;
    const lat = (Math.PI / 2) * ((upper ? s - 1 : s) / HEMISPHERE_STEPS - 1);
    const r = s === 0 || s === 2 * HEMISPHERE_STEPS + 1 ? 0 : radius * Math.cos(lat);
    profile.push([r, radius * Math.sin(lat) + (upper ? gap / 2 : -gap / 2)]);
  }
  return profile;
}

function tessellate(shape: PrimitiveShape): Mesh {
  switch (shape.kind) {
    case 'box':
      return boxMesh(shape.half);
    case 'cylinder': {
      const { radius: r, height: h } = shape;
      return latheMesh([
        [0, -h / 2],
        [r, -h / 2],
        [r, h / 2],
        [0, h / 2],
      ]);
    }
    case 'sphere':
      return latheMesh(roundProfile(shape.radius, 0));
    case 'capsule':
      return latheMesh(roundProfile(shape.radius, shape.length));
  }
}

function shapeKey(shape: PrimitiveShape): string {
  switch (shape.kind) {
    case 'box':
      return `box ${shape.half.join(' ')}`;
    case 'cylinder':
      return `cylinder ${shape.radius} ${shape.height}`;
    case 'sphere':
      return `sphere ${shape.radius}`;
    case 'capsule':
      return `capsule ${shape.radius} ${shape.length}`;
  }
}

/** Meshes by shape; emptied when it would exceed `limit` shapes, so odd callers cannot grow it without end. */
export class MeshCache {
  private readonly meshes = new Map<string, Mesh>();

  constructor(private readonly limit = 4096) {}

  get(shape: PrimitiveShape): Mesh {
    const key = shapeKey(shape);
    let mesh = this.meshes.get(key);
    if (!mesh) {
      if (this.meshes.size >= this.limit) this.meshes.clear();
      mesh = tessellate(shape);
      this.meshes.set(key, mesh);
    }
    return mesh;
  }
}
