// Velocity, acceleration and jerk of timed samples: THE definition shared by time scaling (the
// α stretch and the re-check of resampled references) and the safety checks, so what timing
// accepts is exactly what safety accepts. Divided differences ending at sample k:
//   v = f[t_{k−1}, t_k],  a = 2·f[t_{k−2}, …, t_k],  j = 6·f[t_{k−3}, …, t_k].
// They are exact for polynomials up to degree 1, 2, 3 and each equals the true derivative at
// some time inside its span, so they never exceed the true peak.

export interface SampleRates {
  velocity: number;
  acceleration: number;
  jerk: number;
}

export function newSampleRates(): SampleRates {
  return { velocity: NaN, acceleration: NaN, jerk: NaN };
}

/**
 * Rates of column j of samples q (row-major, `stride` values per sample) at strictly increasing
 * times t, from the differences ending at sample k; NaN where fewer samples precede k
 * (velocity needs k ≥ 1, acceleration k ≥ 2, jerk k ≥ 3).
 */
export function ratesAt(t: ArrayLike<number>, q: ArrayLike<number>, stride: number, j: number, k: number, out: SampleRates): SampleRates {
  out.velocity = out.acceleration = out.jerk = NaN;
  if (k < 1) return out;
  const v1 = (q[k * stride + j] - q[(k - 1) * stride + j]) / (t[k] - t[k - 1]);
  out.velocity = v1;
  if (k < 2) return out;
  const v0 = (q[(k - 1) * stride + j] - q[(k - 2) * stride + j]) / (t[k - 1] - t[k - 2]);
  const a1 = (v1 - v0) / (0.5 * (t[k] - t[k - 2]));
  out.acceleration = a1;
  if (k < 3) return out;
  const vm = (q[(k - 2) * stride + j] - q[(k - 3) * stride + j]) / (t[k - 2] - t[k - 3]);
  const a0 = (v0 - vm) / (0.5 * (t[k - 1] - t[k - 3]));
  out.jerk = (a1 - a0) / ((t[k] - t[k - 3]) / 3);
  return out;
}
