// Helpers every validator shares: the record test, the value printer used in messages and the
// "did you mean" lookup for misspelt names.

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** JSON type name of a value, as the "not a …" part of a rule says it. */
export function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/** A value already put in words for messages (a hidden secret's `<hidden, 9 characters>`): printed as is. */
export class Shown {
  constructor(readonly text: string) {}
}

/** A short printable form of any value: JSON, numbers as written (NaN, ±Infinity), `nothing` for undefined. */
export function showValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v instanceof Shown) return v.text;
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  let text: string;
  try {
    text = JSON.stringify(v) ?? String(v);
  } catch {
    // Cycles and values too deep to print (String() recurses through arrays too).
    text = Array.isArray(v) ? 'a list' : `a ${typeof v}`;
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Optimal-string-alignment distance: edits plus adjacent transpositions ("prot" → "port" is 1). */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** The rule and hint for a key outside `known`: a close name to try, else the list. */
export function unknownKey(key: string, known: readonly string[]): { rule: string; hint: string } {
  const close = closest(key, known, (k) => Math.max(1, Math.floor(k.length / 4)));
  const hint = close ? `did you mean "${close}"?` : known.length ? `known: ${known.join(', ')}` : 'this takes no keys';
  return { rule: 'is not a known key', hint };
}

/** The first known name within `maxDistance(name)` edits of `name`, for a "did you mean" hint. */
export function closest(
  name: string,
  known: readonly string[],
  maxDistance: (k: string) => number,
): string | undefined {
  return known.find((k) => editDistance(k, name) <= maxDistance(k));
}
