// An upper bound on the JSON size of a trajectory message as the daemon writes it (points
// rounded as robot/tools/motion.ts trajectoryPoints: t to 1e-6 s, q to 1e-9, dq to 1e-6, ddq to
// 1e-5), from the largest magnitudes alone: no string is built, so the planner can refuse a plan
// the broker would drop, and check_path and execution agree. Pure.

/** Decimals the daemon keeps per quantity of a point. */
export const POINT_DECIMALS = { t: 6, q: 9, dq: 6, ddq: 5 } as const;

/**
 * Longest JSON text of a number rounded to `decimals` places with |x| ≤ `max`: sign, integer
 * digits, point, decimals. A rounded n / 10^d prints as at most that decimal (shorter forms, such
 * as 1e-7, only ever save characters).
 */
export function numberChars(max: number, decimals: number): number {
  const m = max + 10 ** -decimals; // rounding up may add a digit (9.9999999996 → 10)
  const intDigits = m < 1 ? 1 : Math.floor(Math.log10(m)) + 1;
  return 1 + intDigits + 1 + decimals;
}

function maxAbs(a: ArrayLike<number>, n: number): number {
  let m = 0;
  for (let i = 0; i < n; i++) {
    const v = Math.abs(a[i]!);
    if (v > m) m = v;
  }
  return m;
}

/** Header fields (v, id ≤ 128, arm ≤ 64, three times) and the joints' names (≤ 64 each, quoted). */
const HEADER_BYTES = 512;
const NAME_BYTES = 67;

/**
 * Bytes of the JSON of one arm's trajectory of `count` points of `joints` joints at `rate` Hz,
 * never less than what the daemon sends. q, dq, ddq: count × joints, row-major.
 */
export function trajectoryBytesBound(
  count: number,
  joints: number,
  rate: number,
  q: ArrayLike<number>,
  dq: ArrayLike<number>,
  ddq: ArrayLike<number>,
): number {
  const n = count * joints;
  const perJoint =
    numberChars(maxAbs(q, n), POINT_DECIMALS.q) +
    numberChars(maxAbs(dq, n), POINT_DECIMALS.dq) +
    numberChars(maxAbs(ddq, n), POINT_DECIMALS.ddq) +
    3; // a comma (or bracket) after each value
  // {"t":…,"q":[…],"dq":[…],"ddq":[…]}, and the comma between points.
  const fixed = '{"t":,"q":[],"dq":[],"ddq":[]},'.length + numberChars(count / rate, POINT_DECIMALS.t);
  return HEADER_BYTES + joints * NAME_BYTES + count * (fixed + joints * perJoint);
}
