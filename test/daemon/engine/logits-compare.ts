// Shared by the engine tests that compare native logits with the float64 reference: the largest
// |Δ| relative to max(1, max|logit|), with where it occurs, for assertion messages.
export interface LogitsDiff {
  worst: number;
  at: number;
  bound: number;
}

/** Tolerance rel × max(1, max|reference logit|), rel 1e-5 by default: float32 engine vs float64
 *  reference (see reference-agreement.test.ts for why this bound). */
export function logitsDiff(got: ArrayLike<number>, want: ArrayLike<number>, rel = 1e-5): LogitsDiff {
  let scale = 1;
  for (let v = 0; v < want.length; v++) scale = Math.max(scale, Math.abs(want[v]!));
  let worst = 0;
  let at = 0;
  for (let v = 0; v < want.length; v++) {
    const d = Math.abs(got[v]! - want[v]!);
    if (d > worst) [worst, at] = [d, v];
  }
  return { worst, at, bound: rel * scale };
}
