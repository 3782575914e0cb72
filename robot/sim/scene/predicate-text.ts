// The success predicate language of scene files, e.g. `inside(red_block, bowl)` or
// `near(cube, [0.3, 0, 0.02], 0.01)`: one call, arguments are names, numbers or [x, y, z].
import { closest } from '../../common/validation/values.js';
import type { Triple } from '../../description/types.js';
import type { Predicate } from './types.js';

type ArgKind = 'name' | 'xyz' | 'positive';
const SIGNATURES: Record<Predicate['kind'], [label: string, kind: ArgKind][]> = {
  inside: [
    ['object', 'name'],
    ['container', 'name'],
  ],
  on_top: [
    ['object', 'name'],
    ['below', 'name'],
  ],
  near: [
    ['object', 'name'],
    ['[x, y, z]', 'xyz'],
    ['tol_m', 'positive'],
  ],
  lifted: [
    ['object', 'name'],
    ['h_m', 'positive'],
  ],
  held_by: [
    ['object', 'name'],
    ['arm', 'name'],
  ],
};
const KINDS = Object.keys(SIGNATURES) as Predicate['kind'][];

/** Names of objects and arms as scene files spell them. */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9_-]*$/;

const form = (k: Predicate['kind']): string => `${k}(${SIGNATURES[k].map(([label]) => label).join(', ')})`;
const FORMS = `one of ${KINDS.map(form).join(', ')}`;

const ARG_RULES: Record<ArgKind, string> = {
  name: `a name matching ${NAME_PATTERN}`,
  xyz: 'a point [x, y, z] of three finite numbers (m)',
  positive: 'a number > 0 (m)',
};

export type ParsedPredicate = { ok: true; predicate: Predicate } | { ok: false; rule: string };

/** Parses one predicate; a failure's rule says what was expected. */
export function parsePredicate(text: string): ParsedPredicate {
  const call = /^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$/s.exec(text);
  if (!call) return { ok: false, rule: `must be a predicate call, ${FORMS}` };
  const kind = call[1] as Predicate['kind'];
  if (!KINDS.includes(kind)) {
    const near = closest(kind, KINDS, () => 2);
    return { ok: false, rule: `names no predicate${near ? ` (did you mean "${near}"?)` : ''}; expected ${FORMS}` };
  }
  const signature = SIGNATURES[kind];
  const args = splitArgs(call[2]!);
  if (args.length !== signature.length)
    return { ok: false, rule: `${kind} takes ${signature.length} arguments: ${form(kind)}` };
  const values: (string | number | Triple)[] = [];
  for (const [i, [label, argKind]] of signature.entries()) {
    const v = parseArg(args[i]!, argKind);
    if (v === undefined)
      return { ok: false, rule: `argument ${i + 1} (${label}) of ${form(kind)} must be ${ARG_RULES[argKind]}` };
    values.push(v);
  }
  return { ok: true, predicate: build(kind, values) };
}

/** Splits at commas outside brackets. */
function splitArgs(s: string): string[] {
  if (s.trim() === '') return [];
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '[') depth++;
    else if (s[i] === ']') depth--;
    else if (s[i] === ',' && depth === 0) {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out.map((a) => a.trim());
}

const finite = (s: string): number | undefined => {
  const v = s.trim() === '' ? NaN : Number(s);
  return Number.isFinite(v) ? v : undefined;
};

function parseArg(s: string, kind: ArgKind): string | number | Triple | undefined {
  if (kind === 'name') return NAME_PATTERN.test(s) ? s : undefined;
  if (kind === 'positive') {
    const v = finite(s);
    return v !== undefined && v > 0 ? v : undefined;
  }
  const m = /^\[(.*)\]$/s.exec(s);
  const parts = m ? m[1]!.split(',').map(finite) : [];
  return parts.length === 3 && parts.every((p) => p !== undefined) ? (parts as Triple) : undefined;
}

function build(kind: Predicate['kind'], v: (string | number | Triple)[]): Predicate {
  const object = v[0] as string;
  switch (kind) {
    case 'inside':
      return { kind, object, container: v[1] as string };
    case 'on_top':
      return { kind, object, below: v[1] as string };
    case 'near':
      return { kind, object, xyz: v[1] as Triple, tolerance: v[2] as number };
    case 'lifted':
      return { kind, object, height: v[1] as number };
    case 'held_by':
      return { kind, object, arm: v[1] as string };
  }
}
