// Natural cubic spline of joint positions over path progress s (C², so a smooth progress
// profile gives joint references with continuous acceleration at any resampling rate).

/** Second derivatives d²q/ds² at each sample (count × joints), natural ends (0). */
export function splineCurvatures(s: Float64Array, q: Float64Array, count: number, joints: number): Float64Array {
  const m2 = new Float64Array(count * joints);
  if (count < 3) return m2;
  // Thomas algorithm on the tridiagonal system for inner samples, one joint at a time.
  const diag = new Float64Array(count);
  const rhs = new Float64Array(count);
  for (let j = 0; j < joints; j++) {
    for (let k = 1; k < count - 1; k++) {
      const h0 = s[k] - s[k - 1], h1 = s[k + 1] - s[k];
      const r = 6 * ((q[(k + 1) * joints + j] - q[k * joints + j]) / h1 - (q[k * joints + j] - q[(k - 1) * joints + j]) / h0);
      let dk = 2 * (h0 + h1);
      let rk = r;
      if (k > 1) {
        const w = h0 / diag[k - 1];
        dk -= w * h0;
        rk -= w * rhs[k - 1];
      }
      diag[k] = dk;
      rhs[k] = rk;
    }
    for (let k = count - 2; k >= 1; k--) {
      const h1 = s[k + 1] - s[k];
      const next = k + 1 < count - 1 ? m2[(k + 1) * joints + j] : 0;
      m2[k * joints + j] = (rhs[k] - h1 * next) / diag[k];
    }
  }
  return m2;
}

/** Joint positions at progress x on interval [s[k], s[k+1]] into out; dq/ds and d²q/ds² into d1, d2 if given. */
export function evalSpline(
  s: Float64Array,
  q: Float64Array,
  m2: Float64Array,
  joints: number,
  k: number,
  x: number,
  out: Float64Array,
  d1?: Float64Array,
  d2?: Float64Array,
): void {
  const h = s[k + 1] - s[k];
  const u = (x - s[k]) / h, w = 1 - u;
  const c = (h * h) / 6;
  for (let j = 0; j < joints; j++) {
    const i0 = k * joints + j, i1 = i0 + joints;
    out[j] = w * q[i0] + u * q[i1] + c * ((w * w * w - w) * m2[i0] + (u * u * u - u) * m2[i1]);
    if (d1) d1[j] = (q[i1] - q[i0]) / h + (h / 6) * ((1 - 3 * w * w) * m2[i0] + (3 * u * u - 1) * m2[i1]);
    if (d2) d2[j] = w * m2[i0] + u * m2[i1];
  }
}
