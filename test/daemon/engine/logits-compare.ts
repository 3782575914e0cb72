// Shared by the engine tests that compare native logits with the float64 reference: the largest
// |Δ| relative to max(1, max|logit|), with where it occurs, for assertion messages.
import assert from 'node:assert/strict';

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

/** Asserts got is within logitsDiff's bound of want, naming `what`, the token and |Δ|. */
export function assertClose(got: ArrayLike<number>, want: ArrayLike<number>, what: string, rel = 1e-5): void {
  const d = logitsDiff(got, want, rel);
  assert.ok(d.worst <= d.bound, `${what}: token ${d.at} |Δ| ${d.worst} > ${d.bound}`);
}

interface NativeSide {
  truncate(n: number): Promise<void>;
  prefill(tokens: number[]): Promise<ArrayLike<number>>;
  decode(n: number): Promise<ArrayLike<number>>;
}

interface ReferenceSide {
  truncate(n: number): void;
  prefill(tokens: number[]): ArrayLike<number>;
  decode(n: number): ArrayLike<number>;
}

/** For each [keep, more]: both truncate to keep, prefill `more` and decode one step, logits close. */
export async function assertTruncations(
  s: NativeSide,
  ref: ReferenceSide,
  cases: readonly (readonly [number, readonly number[]])[],
): Promise<void> {
  for (const [keep, more] of cases) {
    await s.truncate(keep);
    ref.truncate(keep);
    assertClose(await s.prefill([...more]), ref.prefill([...more]), `truncate(${keep}) + ${more.length}`);
    assertClose(await s.decode(1), ref.decode(1), `truncate(${keep}) then decode`);
  }
}
