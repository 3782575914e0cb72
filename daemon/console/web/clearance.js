// Link clearances for the 3-D view: each capsule's smallest surface distance to the scene's
// objects (as bounding spheres, so never more than the truth), the table top and the other
// arms' capsules, mapped to a colour band. A drawing aid; the planner's checks are exact.
import * as THREE from 'three';

/** Upper bounds of the bands (m) and their colours; farther links keep the link material. */
export const BANDS = [
  { below: 0.01, color: 0xe04040 },
  { below: 0.03, color: 0xff9030 },
  { below: 0.06, color: 0xe8d040 },
];

const clamp01 = (x) => Math.min(1, Math.max(0, x));

/** Distance between segments p1–q1 and p2–q2 (closest points by the standard clamped solve). */
export function segmentDistance(p1, q1, p2, q2) {
  const d1 = q1.clone().sub(p1);
  const d2 = q2.clone().sub(p2);
  const r = p1.clone().sub(p2);
  const a = d1.dot(d1);
  const e = d2.dot(d2);
  const f = d2.dot(r);
  let s = 0;
  let t = 0;
  if (a < 1e-12 && e < 1e-12) return r.length();
  if (a < 1e-12) t = clamp01(f / e);
  else {
    const c = d1.dot(r);
    if (e < 1e-12) s = clamp01(-c / a);
    else {
      const b = d1.dot(d2);
      const denom = a * e - b * b;
      s = denom > 1e-12 ? clamp01((b * f - c * e) / denom) : 0;
      t = (b * s + f) / e;
      if (t < 0) [t, s] = [0, clamp01(-c / a)];
      else if (t > 1) [t, s] = [1, clamp01((b - c) / a)];
    }
  }
  return p1.clone().addScaledVector(d1, s).distanceTo(p2.clone().addScaledVector(d2, t));
}

/** A capsule mesh's axis endpoints and radius in world coordinates. */
export function worldCapsule(mesh) {
  const { radius, height } = mesh.geometry.parameters;
  mesh.updateWorldMatrix(true, false);
  return {
    a: mesh.localToWorld(new THREE.Vector3(0, -height / 2, 0)),
    b: mesh.localToWorld(new THREE.Vector3(0, height / 2, 0)),
    radius,
  };
}

/** Radius of the sphere around an object shape (its centre is the object's origin). */
export function boundingRadius(shape) {
  if (shape.kind === 'sphere') return shape.radius;
  if (shape.kind === 'cylinder') return Math.hypot(shape.radius, shape.height / 2);
  return Math.hypot(...shape.size) / 2;
}

/**
 * Smallest clearance of each capsule of `arms` (Map name → {meshes}) to `spheres`
 * ([{center, radius, heldBy}], world), the plane z = tableZ (null: none) and other arms' capsules.
 */
export function clearances(arms, spheres, tableZ) {
  const caps = [];
  for (const [arm, model] of arms) for (const mesh of model.meshes) caps.push({ arm, mesh, ...worldCapsule(mesh) });
  const out = new Map();
  for (const c of caps) {
    let best = Infinity;
    for (const s of spheres) {
      if (s.heldBy === c.arm) continue;
      best = Math.min(best, segmentDistance(c.a, c.b, s.center, s.center) - c.radius - s.radius);
    }
    if (tableZ !== null) best = Math.min(best, Math.min(c.a.z, c.b.z) - c.radius - tableZ);
    for (const o of caps)
      if (o.arm !== c.arm) best = Math.min(best, segmentDistance(c.a, c.b, o.a, o.b) - c.radius - o.radius);
    out.set(c.mesh, best);
  }
  return out;
}

/** The band colour of a clearance, or null beyond the last band. */
export function bandColor(clearance) {
  return BANDS.find((b) => clearance < b.below)?.color ?? null;
}
