// Closest distance between two line segments (Ericson, Real-Time Collision Detection §5.1.9),
// and capsule distance = segment distance − both radii (negative when they overlap).
// Points are read from flat arrays at offsets, so callers keep endpoints in one Float64Array.

/** Distance between segments p1–q1 and p2–q2 (each endpoint three consecutive numbers at its offset). */
export function segmentDistance(
  a: Float64Array,
  p1: number,
  q1: number,
  b: Float64Array,
  p2: number,
  q2: number,
): number {
  const d1x = a[q1] - a[p1],
    d1y = a[q1 + 1] - a[p1 + 1],
    d1z = a[q1 + 2] - a[p1 + 2];
  const d2x = b[q2] - b[p2],
    d2y = b[q2 + 1] - b[p2 + 1],
    d2z = b[q2 + 2] - b[p2 + 2];
  const rx = a[p1] - b[p2],
    ry = a[p1 + 1] - b[p2 + 1],
    rz = a[p1 + 2] - b[p2 + 2];
  const aa = d1x * d1x + d1y * d1y + d1z * d1z;
  const ee = d2x * d2x + d2y * d2y + d2z * d2z;
  const f = d2x * rx + d2y * ry + d2z * rz;
  const eps = 1e-18;
  let s: number, t: number;
  if (aa <= eps && ee <= eps) {
    s = 0;
    t = 0;
  } else if (aa <= eps) {
    // First segment is a point.
    s = 0;
    t = clamp01(f / ee);
  } else {
    const c = d1x * rx + d1y * ry + d1z * rz;
    if (ee <= eps) {
      t = 0;
      s = clamp01(-c / aa);
    } else {
      const bb = d1x * d2x + d1y * d2y + d1z * d2z;
      const denom = aa * ee - bb * bb;
      // Parallel segments (denom ≈ 0): any s works; take 0 and let the clamps below fix t and s.
      s = denom > eps * aa * ee ? clamp01((bb * f - c * ee) / denom) : 0;
      t = (bb * s + f) / ee;
      if (t < 0) {
        t = 0;
        s = clamp01(-c / aa);
      } else if (t > 1) {
        t = 1;
        s = clamp01((bb - c) / aa);
      }
    }
  }
  const x = rx + d1x * s - d2x * t;
  const y = ry + d1y * s - d2y * t;
  const z = rz + d1z * s - d2z * t;
  return Math.sqrt(x * x + y * y + z * z);
}

function clamp01(x: number): number {
  return Math.min(Math.max(x, 0), 1);
}
