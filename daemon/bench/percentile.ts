// Nearest-rank percentiles of benchmark samples (the value below which p% of samples lie).

/** p-th percentile (0 < p ≤ 100) of ascending-sorted values; 0 for no values. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) return 0;
  return sorted[Math.min(n - 1, Math.max(0, Math.ceil((p / 100) * n) - 1))];
}
