// In-place Cholesky solve of a small symmetric positive definite system (k ≤ ~8), used by the
// damped least-squares IK step. Row-major k×k; only the lower triangle of `a` is read.

/** Solves a·x = b, overwriting `a` with its factor and `b` with x. Returns false if a is not SPD. */
export function choleskySolve(a: Float64Array, b: Float64Array, k: number): boolean {
  for (let j = 0; j < k; j++) {
    const rj = j * k;
    let d = a[rj + j];
    for (let p = 0; p < j; p++) d -= a[rj + p] * a[rj + p];
    if (!(d > 0)) return false;
    const ljj = Math.sqrt(d);
    a[rj + j] = ljj;
    const inv = 1 / ljj;
    for (let i = j + 1; i < k; i++) {
      const ri = i * k;
      let s = a[ri + j];
      for (let p = 0; p < j; p++) s -= a[ri + p] * a[rj + p];
      a[ri + j] = s * inv;
    }
  }
  // L·y = b, then Lᵀ·x = y.
  for (let i = 0; i < k; i++) {
    const ri = i * k;
    let s = b[i];
    for (let p = 0; p < i; p++) s -= a[ri + p] * b[p];
    b[i] = s / a[ri + i];
  }
  for (let i = k - 1; i >= 0; i--) {
    let s = b[i];
    for (let p = i + 1; p < k; p++) s -= a[p * k + i] * b[p];
    b[i] = s / a[i * k + i];
  }
  return true;
}
