// Velocity, acceleration and jerk of timed samples: THE definition shared by time scaling (the
// α stretch and the re-check of resampled references) and the safety checks, so what timing
// accepts is exactly what safety accepts. Divided differences ending at sample k:
//   v = f[t_{k−1}, t_k],  a = 2·f[t_{k−2}, …, t_k],  j = 6·f[t_{k−3}, …, t_k].
// They are exact for polynomials up to degree 1, 2, 3 and each equals the true derivative at
// some time inside its span, so they never exceed the true peak.

/** Rates of one column at every sample: entry k from the differences ending at sample k, NaN
 * where fewer samples precede k (velocity needs k ≥ 1, acceleration k ≥ 2, jerk k ≥ 3). */
export interface ColumnRates {
  velocity: Float64Array;
  acceleration: Float64Array;
  jerk: Float64Array;
}

export function newColumnRates(): ColumnRates {
  return { velocity: new Float64Array(0), acceleration: new Float64Array(0), jerk: new Float64Array(0) };
}

/**
 * Rates of column j of samples q (row-major, `stride` values per sample) at strictly increasing
 * times t, for samples 0 … count−1, into `out` (grown when shorter than count). One pass: the
 * velocity and acceleration ending at k − 1 are reused at k, so each quotient is computed once.
 */
export function columnRates(
  t: ArrayLike<number>,
  q: ArrayLike<number>,
  stride: number,
  j: number,
  count: number,
  out: ColumnRates,
): ColumnRates {
  if (out.velocity.length < count) {
    out.velocity = new Float64Array(count);
    out.acceleration = new Float64Array(count);
    out.jerk = new Float64Array(count);
  }
  const vel = out.velocity,
    acc = out.acceleration,
    jerk = out.jerk;
  if (count > 0) vel[0] = acc[0] = jerk[0] = NaN;
  let v0 = NaN,
    a0 = NaN;
  for (let k = 1; k < count; k++) {
    const v1 = (q[k * stride + j] - q[(k - 1) * stride + j]) / (t[k] - t[k - 1]);
    vel[k] = v1;
    if (k >= 2) {
      const a1 = (v1 - v0) / (0.5 * (t[k] - t[k - 2]));
      acc[k] = a1;
      jerk[k] = k >= 3 ? (a1 - a0) / ((t[k] - t[k - 3]) / 3) : NaN;
      a0 = a1;
    } else {
      acc[k] = jerk[k] = NaN;
    }
    v0 = v1;
  }
  return out;
}
