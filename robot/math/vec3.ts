// 3-vectors as Float64Array(3) (inputs accept any ArrayLike), gl-matrix style: `out` first,
// so hot loops reuse scratch instead of allocating.
export type Vec3 = Float64Array;
export type Vec3Like = ArrayLike<number>;

export function vec3(x = 0, y = 0, z = 0): Vec3 {
  const v = new Float64Array(3);
  v[0] = x;
  v[1] = y;
  v[2] = z;
  return v;
}

export function distance3(a: Vec3Like, b: Vec3Like): number {
  const x = a[0] - b[0];
  const y = a[1] - b[1];
  const z = a[2] - b[2];
  return Math.sqrt(x * x + y * y + z * z);
}

/** out = a + t·(b − a). */
export function lerp3(out: Vec3, a: Vec3Like, b: Vec3Like, t: number): Vec3 {
  out[0] = a[0] + t * (b[0] - a[0]);
  out[1] = a[1] + t * (b[1] - a[1]);
  out[2] = a[2] + t * (b[2] - a[2]);
  return out;
}

export function isFiniteVec(a: ArrayLike<number>): boolean {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i])) return false;
  return true;
}
