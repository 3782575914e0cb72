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

/**
 * choleskySolve for k = 6 (the IK step's 6×6 system) unrolled into locals: the same operations
 * in the same order, so the same result bit for bit, at about half the cost of the loops.
 */
export function choleskySolve6(a: Float64Array, b: Float64Array): boolean {
  const a00 = a[0];
  const a10 = a[6],
    a11 = a[7];
  const a20 = a[12],
    a21 = a[13],
    a22 = a[14];
  const a30 = a[18],
    a31 = a[19],
    a32 = a[20],
    a33 = a[21];
  const a40 = a[24],
    a41 = a[25],
    a42 = a[26],
    a43 = a[27],
    a44 = a[28];
  const a50 = a[30],
    a51 = a[31],
    a52 = a[32],
    a53 = a[33],
    a54 = a[34],
    a55 = a[35];
  const b0 = b[0],
    b1 = b[1],
    b2 = b[2],
    b3 = b[3],
    b4 = b[4],
    b5 = b[5];
  // Column j of L: l_jj = √(a_jj − Σ l_jp²), l_ij = (a_ij − Σ l_ip·l_jp)·(1/l_jj), p < j.
  if (!(a00 > 0)) return false;
  const l00 = Math.sqrt(a00);
  const inv0 = 1 / l00;
  const l10 = a10 * inv0;
  const l20 = a20 * inv0;
  const l30 = a30 * inv0;
  const l40 = a40 * inv0;
  const l50 = a50 * inv0;
  const d1 = a11 - l10 * l10;
  if (!(d1 > 0)) return false;
  const l11 = Math.sqrt(d1);
  const inv1 = 1 / l11;
  const l21 = (a21 - l20 * l10) * inv1;
  const l31 = (a31 - l30 * l10) * inv1;
  const l41 = (a41 - l40 * l10) * inv1;
  const l51 = (a51 - l50 * l10) * inv1;
  const d2 = a22 - l20 * l20 - l21 * l21;
  if (!(d2 > 0)) return false;
  const l22 = Math.sqrt(d2);
  const inv2 = 1 / l22;
  const l32 = (a32 - l30 * l20 - l31 * l21) * inv2;
  const l42 = (a42 - l40 * l20 - l41 * l21) * inv2;
  const l52 = (a52 - l50 * l20 - l51 * l21) * inv2;
  const d3 = a33 - l30 * l30 - l31 * l31 - l32 * l32;
  if (!(d3 > 0)) return false;
  const l33 = Math.sqrt(d3);
  const inv3 = 1 / l33;
  const l43 = (a43 - l40 * l30 - l41 * l31 - l42 * l32) * inv3;
  const l53 = (a53 - l50 * l30 - l51 * l31 - l52 * l32) * inv3;
  const d4 = a44 - l40 * l40 - l41 * l41 - l42 * l42 - l43 * l43;
  if (!(d4 > 0)) return false;
  const l44 = Math.sqrt(d4);
  const inv4 = 1 / l44;
  const l54 = (a54 - l50 * l40 - l51 * l41 - l52 * l42 - l53 * l43) * inv4;
  const d5 = a55 - l50 * l50 - l51 * l51 - l52 * l52 - l53 * l53 - l54 * l54;
  if (!(d5 > 0)) return false;
  const l55 = Math.sqrt(d5);
  // L·y = b, then Lᵀ·x = y.
  const y0 = b0 / l00;
  const y1 = (b1 - l10 * y0) / l11;
  const y2 = (b2 - l20 * y0 - l21 * y1) / l22;
  const y3 = (b3 - l30 * y0 - l31 * y1 - l32 * y2) / l33;
  const y4 = (b4 - l40 * y0 - l41 * y1 - l42 * y2 - l43 * y3) / l44;
  const y5 = (b5 - l50 * y0 - l51 * y1 - l52 * y2 - l53 * y3 - l54 * y4) / l55;
  const x5 = y5 / l55;
  const x4 = (y4 - l54 * x5) / l44;
  const x3 = (y3 - l43 * x4 - l53 * x5) / l33;
  const x2 = (y2 - l32 * x3 - l42 * x4 - l52 * x5) / l22;
  const x1 = (y1 - l21 * x2 - l31 * x3 - l41 * x4 - l51 * x5) / l11;
  const x0 = (y0 - l10 * x1 - l20 * x2 - l30 * x3 - l40 * x4 - l50 * x5) / l00;
  b[0] = x0;
  b[1] = x1;
  b[2] = x2;
  b[3] = x3;
  b[4] = x4;
  b[5] = x5;
  return true;
}
