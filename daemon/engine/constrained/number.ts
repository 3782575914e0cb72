// JSON numbers for constrained decoding: which prefixes can still become an in-range number, and
// the fewest bytes that finish one. Values are exact decimals scaled by 10^fracCap (BigInt), so
// bounds are enforced without rounding surprises.
// Layout produced: -?(0|[1-9][0-9]*)(\.[0-9]+)?, at most 15 significant digits (doubles keep 15
// decimal digits exactly, so the parsed value compares with the bounds as the decimal does).
const MAX_DIGITS = 15;

export interface NumberSpec {
  integer: boolean;
  /** Digits allowed after the point (0 for integers). */
  fracCap: number;
  /** Inclusive bounds scaled by 10^fracCap; undefined = unbounded. */
  lo?: bigint;
  hi?: bigint;
  memo: Map<string, number>;
}

export interface NumberBounds {
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
}

/** Builds the spec; returns undefined when no number in the layout satisfies the bounds. */
export function numberSpec(integer: boolean, b: NumberBounds): NumberSpec | undefined {
  const decimals = [b.minimum, b.maximum, b.exclusiveMinimum, b.exclusiveMaximum]
    .filter((x): x is number => x !== undefined)
    .map(decimalPlaces);
  const fracCap = integer ? 0 : Math.min(12, Math.max(6, ...decimals));
  const spec: NumberSpec = { integer, fracCap, memo: new Map() };
  const los = [
    b.minimum === undefined ? undefined : scaled(b.minimum, fracCap, 'ceil'),
    b.exclusiveMinimum === undefined ? undefined : scaled(b.exclusiveMinimum, fracCap, 'floor') + 1n,
  ];
  const his = [
    b.maximum === undefined ? undefined : scaled(b.maximum, fracCap, 'floor'),
    b.exclusiveMaximum === undefined ? undefined : scaled(b.exclusiveMaximum, fracCap, 'ceil') - 1n,
  ];
  for (const v of los) if (v !== undefined && (spec.lo === undefined || v > spec.lo)) spec.lo = v;
  for (const v of his) if (v !== undefined && (spec.hi === undefined || v < spec.hi)) spec.hi = v;
  return Number.isFinite(minRemaining(spec, '')) ? spec : undefined;
}

interface Parsed {
  neg: boolean;
  int: string;
  dot: boolean;
  frac: string;
}

function parse(text: string): Parsed | undefined {
  const m = /^(-?)(0|[1-9][0-9]*)?(\.([0-9]*))?$/.exec(text);
  if (!m) return undefined;
  if (m[3] !== undefined && m[2] === undefined) return undefined;
  return { neg: m[1] === '-', int: m[2] ?? '', dot: m[3] !== undefined, frac: m[4] ?? '' };
}

/** Whether `text` is a finished number within the bounds. */
export function isComplete(spec: NumberSpec, text: string): boolean {
  const p = parse(text);
  if (!p || p.int === '' || (p.dot && p.frac === '')) return false;
  return minRemaining(spec, text) === 0;
}

/** Fewest bytes that turn `text` into a valid number (0 if it is one); Infinity if impossible. */
export function minRemaining(spec: NumberSpec, text: string): number {
  const hit = spec.memo.get(text);
  if (hit !== undefined) return hit;
  const p = parse(text);
  let best = Infinity;
  if (p && p.int.length + p.frac.length <= MAX_DIGITS && p.frac.length <= spec.fracCap && !(spec.integer && p.dot)) {
    best =
      text === ''
        ? Math.min(fromInt(spec, false, ''), 1 + fromInt(spec, true, ''))
        : p.dot
          ? fromFrac(spec, p)
          : fromInt(spec, p.neg, p.int);
  }
  if (spec.memo.size < 100_000) spec.memo.set(text, best);
  return best;
}

// Still in the integer part: add j digits, then optionally '.' and f fraction digits.
function fromInt(spec: NumberSpec, neg: boolean, int: string): number {
  const S = 10n ** BigInt(spec.fracCap);
  let best = Infinity;
  const maxJ = int === '0' ? 0 : MAX_DIGITS - int.length;
  for (let j = int === '' ? 1 : 0; j <= maxJ; j++) {
    if (j >= best) break;
    const [a, b] = intRange(int, j);
    if (fits(spec, neg, a * S, b * S, S)) best = Math.min(best, j);
    for (let f = 1; f <= spec.fracCap && int.length + j + f <= MAX_DIGITS && j + 1 + f < best; f++) {
      const step = 10n ** BigInt(spec.fracCap - f);
      if (fits(spec, neg, a * S, b * S + S - step, step)) best = j + 1 + f;
    }
  }
  return best;
}

// After the point: add f more fraction digits (at least one in all).
function fromFrac(spec: NumberSpec, p: Parsed): number {
  const S = 10n ** BigInt(spec.fracCap);
  const base = BigInt(p.int) * S + (p.frac === '' ? 0n : BigInt(p.frac) * 10n ** BigInt(spec.fracCap - p.frac.length));
  for (
    let f = p.frac === '' ? 1 : 0;
    p.frac.length + f <= spec.fracCap && p.int.length + p.frac.length + f <= MAX_DIGITS;
    f++
  ) {
    const step = 10n ** BigInt(spec.fracCap - p.frac.length - f);
    const span = (10n ** BigInt(f) - 1n) * step;
    if (fits(spec, p.neg, base, base + span, step)) return f;
  }
  return Infinity;
}

// Integer magnitudes reachable by appending j digits to `int`.
function intRange(int: string, j: number): [bigint, bigint] {
  const scale = 10n ** BigInt(j);
  if (int === '') return j === 1 ? [0n, 9n] : [scale / 10n, scale - 1n];
  const v = BigInt(int) * scale;
  return [v, v + scale - 1n];
}

// Is some multiple of `step` in the magnitude range [a, b] (sign applied) within the bounds?
function fits(spec: NumberSpec, neg: boolean, a: bigint, b: bigint, step: bigint): boolean {
  let lo = a;
  let hi = b;
  if (neg) {
    if (spec.hi !== undefined && -spec.hi > lo) lo = -spec.hi;
    if (spec.lo !== undefined && -spec.lo < hi) hi = -spec.lo;
  } else {
    if (spec.lo !== undefined && spec.lo > lo) lo = spec.lo;
    if (spec.hi !== undefined && spec.hi < hi) hi = spec.hi;
  }
  // lo >= a >= 0 and a is a multiple of step, so every multiple of step in [lo, hi] is reachable.
  const first = ((lo + step - 1n) / step) * step;
  return first <= hi;
}

/** x·10^places as an exact integer, rounded up or down. */
export function scaled(x: number, places: number, mode: 'ceil' | 'floor'): bigint {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(x));
  if (!m) throw new RangeError(`not a finite number: ${x}`);
  const digits = m[2] + (m[3] ?? '');
  const exp = Number(m[4] ?? 0) - (m[3]?.length ?? 0) + places;
  let magnitude: bigint;
  let exact = true;
  if (exp >= 0) magnitude = BigInt(digits) * 10n ** BigInt(exp);
  else {
    const div = 10n ** BigInt(-exp);
    magnitude = BigInt(digits) / div;
    exact = magnitude * div === BigInt(digits);
  }
  const neg = m[1] === '-';
  let v = neg ? -magnitude : magnitude;
  if (!exact) {
    // Truncation went toward zero; step away from it when the rounding direction asks.
    if (mode === 'ceil' && !neg) v += 1n;
    if (mode === 'floor' && neg) v -= 1n;
  }
  return v;
}

function decimalPlaces(x: number): number {
  const m = /^-?\d+(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(x));
  if (!m) return 0;
  return Math.max(0, (m[1]?.length ?? 0) - Number(m[2] ?? 0));
}
