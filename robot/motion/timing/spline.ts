// Cubic spline of joint positions over path progress s (C², so a smooth progress profile gives
// joint references with continuous acceleration at any resampling rate), with not-a-knot ends:
// the first two and last two intervals are single cubics. Natural ends (q'' = 0) would bend the
// spline away from the path near every segment end, where the path is rarely straight, and the
// wiggle shows up as jerk where segments start and stop. Not-a-knot reproduces any cubic.

/** The tridiagonal system's work arrays, reused (typed arrays over 64 bytes cost ~1 µs each). */
const scratch = {
  lower: new Float64Array(0),
  diag: new Float64Array(0),
  upper: new Float64Array(0),
  factor: new Float64Array(0),
  rhs: new Float64Array(0),
};

/** Work arrays of at least count entries; every entry the solve reads it writes first. */
function scratchFor(count: number): typeof scratch {
  if (scratch.lower.length < count) {
    const store = new Float64Array(5 * count);
    scratch.lower = store.subarray(0, count);
    scratch.diag = store.subarray(count, 2 * count);
    scratch.upper = store.subarray(2 * count, 3 * count);
    scratch.factor = store.subarray(3 * count, 4 * count);
    scratch.rhs = store.subarray(4 * count, 5 * count);
  }
  return scratch;
}

/** Second derivatives d²q/ds² at each sample (count × joints); 3 samples give the parabola, 2 a line. */
export function splineCurvatures(s: Float64Array, q: Float64Array, count: number, joints: number): Float64Array {
  const m2 = new Float64Array(count * joints);
  if (count < 3) return m2;
  const h = (k: number): number => s[k + 1] - s[k];
  const slope = (k: number, j: number): number => (q[(k + 1) * joints + j] - q[k * joints + j]) / h(k);
  if (count === 3) {
    for (let j = 0; j < joints; j++)
      m2[j] = m2[joints + j] = m2[2 * joints + j] = (2 * (slope(1, j) - slope(0, j))) / (h(0) + h(1));
    return m2;
  }
  // Rows k = 1 … last: h_{k−1}·m_{k−1} + 2(h_{k−1} + h_k)·m_k + h_k·m_{k+1} = 6(slope_k − slope_{k−1}),
  // with m_0 and m_{last+1} eliminated by the not-a-knot conditions (third derivative continuous
  // at s_1 and s_last): m_0 = m_1 + (h_0/h_1)(m_1 − m_2), and the mirror image at the end.
  const last = count - 2;
  const { lower, diag, upper, factor, rhs } = scratchFor(count);
  for (let k = 1; k <= last; k++) {
    lower[k] = h(k - 1);
    diag[k] = 2 * (h(k - 1) + h(k));
    upper[k] = h(k);
  }
  const h0 = h(0),
    h1 = h(1),
    a = h(last - 1),
    b = h(last);
  diag[1] = 3 * h0 + 2 * h1 + (h0 * h0) / h1;
  upper[1] = h1 - (h0 * h0) / h1;
  diag[last] = 2 * a + 3 * b + (b * b) / a;
  lower[last] = a - (b * b) / a;
  // Thomas algorithm; the eliminated diagonal and the elimination factors depend on s only.
  for (let k = 2; k <= last; k++) {
    factor[k] = lower[k] / diag[k - 1];
    diag[k] -= factor[k] * upper[k - 1];
  }
  for (let j = 0; j < joints; j++) {
    let before = slope(0, j);
    for (let k = 1; k <= last; k++) {
      const next = slope(k, j);
      rhs[k] = 6 * (next - before);
      if (k > 1) rhs[k] -= factor[k] * rhs[k - 1];
      before = next;
    }
    for (let k = last; k >= 1; k--)
      m2[k * joints + j] = (rhs[k] - (k < last ? upper[k] * m2[(k + 1) * joints + j] : 0)) / diag[k];
    const m1 = m2[joints + j],
      mNext = m2[2 * joints + j];
    m2[j] = m1 + (h0 / h1) * (m1 - mNext);
    const mLast = m2[last * joints + j],
      mPrev = m2[(last - 1) * joints + j];
    m2[(count - 1) * joints + j] = mLast + (b / a) * (mLast - mPrev);
  }
  return m2;
}

/** Joint positions at progress x on interval [s[k], s[k+1]] into out[at …]; dq/ds and d²q/ds² into d1, d2 if given. */
export function evalSpline(
  s: Float64Array,
  q: Float64Array,
  m2: Float64Array,
  joints: number,
  k: number,
  x: number,
  out: Float64Array,
  at: number,
  d1?: Float64Array,
  d2?: Float64Array,
): void {
  const h = s[k + 1] - s[k];
  const u = (x - s[k]) / h,
    w = 1 - u;
  const c = (h * h) / 6;
  for (let j = 0; j < joints; j++) {
    const i0 = k * joints + j,
      i1 = i0 + joints;
    out[at + j] = w * q[i0] + u * q[i1] + c * ((w * w * w - w) * m2[i0] + (u * u * u - u) * m2[i1]);
    if (d1) d1[j] = (q[i1] - q[i0]) / h + (h / 6) * ((1 - 3 * w * w) * m2[i0] + (3 * u * u - 1) * m2[i1]);
    if (d2) d2[j] = w * m2[i0] + u * m2[i1];
  }
}
