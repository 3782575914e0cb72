// A checker for the subset of JSON Schema (2020-12 keywords) that brainstem publishes: tool
// definitions for models and controller protocol messages. One schema is both the document
// handed out and the rule set enforced, so the two cannot drift. Errors name the field, the
// rule and the value.

export type JsonType = 'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null';

export interface Schema {
  type?: JsonType | JsonType[];
  description?: string;
  title?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  /** false: unknown keys are errors; a schema: every unknown key's value must match it. */
  additionalProperties?: boolean | Schema;
  /** Keys matching a pattern (e.g. `^x_` vendor extensions) are checked against its schema. */
  patternProperties?: Record<string, Schema>;
  propertyNames?: Schema;
  minProperties?: number;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  enum?: readonly (string | number | boolean | null)[];
  const?: string | number | boolean | null;
}

export interface SchemaError {
  /** Field path such as `points[3].q[2]`; '' is the value itself. */
  path: string;
  /** The violated rule in words, e.g. `must be a finite number`. */
  rule: string;
  value: unknown;
}

const MAX_ERRORS = 10;

/** Checks `value` against `schema`; returns at most 10 errors, first error first. */
export function checkSchema(schema: Schema, value: unknown, path = ''): SchemaError[] {
  const errors: SchemaError[] = [];
  walk(schema, value, path, errors);
  return errors;
}

/** `path: rule (got value)` — the form every brainstem validation message uses. */
export function formatError(e: SchemaError, root = ''): string {
  const where = joinPath(root, e.path) || 'value';
  return `${where}: ${e.rule} (got ${describeValue(e.value)})`;
}

/** `path.key`, or `path["key"]` when the key is not a plain name (empty, spaces, dots…). */
export function keyPath(path: string, key: string): string {
  return /^[\p{L}_$][\p{L}\p{N}_$-]*$/u.test(key) ? joinPath(path, key) : `${path}[${JSON.stringify(key)}]`;
}

export function joinPath(root: string, path: string): string {
  if (!root) return path;
  if (!path) return root;
  return path.startsWith('[') ? root + path : `${root}.${path}`;
}

/** A short printable form of any value (NaN, Infinity and undefined included). */
export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return truncate(JSON.stringify(v));
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (v === null) return 'null';
  if (typeof v === 'object') return truncate(safeStringify(v));
  return String(v);
}

export function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function walk(s: Schema, v: unknown, path: string, out: SchemaError[]): void {
  if (out.length >= MAX_ERRORS) return;
  // `value` is explicit because a missing field's value is undefined.
  const push = (rule: string, ...rest: [] | [value: unknown, at: string]) => {
    if (out.length < MAX_ERRORS) out.push({ path: rest.length ? rest[1] : path, rule, value: rest.length ? rest[0] : v });
  };
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    if (!types.some((t) => hasType(t, v))) {
      push(typeRule(types, v));
      return;
    }
  }
  if (s.const !== undefined && v !== s.const) push(`must be ${JSON.stringify(s.const)}`);
  if (s.enum && !s.enum.includes(v as never)) push(`must be one of ${s.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  if (typeof v === 'number') checkNumber(s, v, push);
  else if (typeof v === 'string') checkString(s, v, push);
  else if (Array.isArray(v)) {
    if (s.minItems !== undefined && v.length < s.minItems) push(`must have at least ${s.minItems} item${s.minItems === 1 ? '' : 's'}`);
    if (s.maxItems !== undefined && v.length > s.maxItems) push(`must have at most ${s.maxItems} items`);
    if (s.uniqueItems) {
      const seen = new Set<string>();
      v.forEach((item, i) => {
        const key = safeStringify(item);
        if (seen.has(key)) push('must not repeat an earlier item', item, `${path}[${i}]`);
        seen.add(key);
      });
    }
    if (s.items) v.forEach((item, i) => walk(s.items!, item, `${path}[${i}]`, out));
  } else if (v !== null && typeof v === 'object') checkObject(s, v as Record<string, unknown>, path, out, push);
}

function checkNumber(s: Schema, v: number, push: (rule: string) => void): void {
  if (s.minimum !== undefined && v < s.minimum) push(`must be ≥ ${s.minimum}`);
  if (s.maximum !== undefined && v > s.maximum) push(`must be ≤ ${s.maximum}`);
  if (s.exclusiveMinimum !== undefined && v <= s.exclusiveMinimum) push(`must be > ${s.exclusiveMinimum}`);
  if (s.exclusiveMaximum !== undefined && v >= s.exclusiveMaximum) push(`must be < ${s.exclusiveMaximum}`);
}

function checkString(s: Schema, v: string, push: (rule: string) => void): void {
  const n = [...v].length;
  if (s.minLength !== undefined && n < s.minLength) push(s.minLength === 1 ? 'must not be empty' : `must have at least ${s.minLength} characters`);
  if (s.maxLength !== undefined && n > s.maxLength) push(`must have at most ${s.maxLength} character${s.maxLength === 1 ? '' : 's'}`);
  if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(v)) push(`must match ${s.pattern}`);
}

function checkObject(
  s: Schema,
  o: Record<string, unknown>,
  path: string,
  out: SchemaError[],
  push: (rule: string, ...rest: [] | [value: unknown, at: string]) => void,
): void {
  const keys = Object.keys(o);
  if (s.minProperties !== undefined && keys.length < s.minProperties) push(`must have at least ${s.minProperties} field${s.minProperties === 1 ? '' : 's'}`);
  for (const r of s.required ?? []) {
    if (!Object.hasOwn(o, r)) push('is required', undefined, keyPath(path, r));
  }
  for (const k of keys) {
    const at = keyPath(path, k);
    if (s.propertyNames) {
      const keyErrors: SchemaError[] = [];
      walk(s.propertyNames, k, at, keyErrors);
      for (const e of keyErrors) push(`field name ${e.rule}`, k, at);
    }
    const known = s.properties && Object.hasOwn(s.properties, k) ? s.properties[k] : undefined;
    if (known) {
      walk(known, o[k], at, out);
      continue;
    }
    const pattern = Object.entries(s.patternProperties ?? {}).find(([p]) => new RegExp(p, 'u').test(k));
    if (pattern) walk(pattern[1], o[k], at, out);
    else if (s.additionalProperties === false) {
      const allowed = Object.keys(s.properties ?? {});
      push(`is not a known field${allowed.length ? ` (allowed: ${allowed.join(', ')})` : ''}`, o[k], at);
    } else if (typeof s.additionalProperties === 'object') walk(s.additionalProperties, o[k], at, out);
  }
}

function hasType(t: JsonType, v: unknown): boolean {
  switch (t) {
    case 'null':
      return v === null;
    case 'array':
      return Array.isArray(v);
    case 'object':
      return v !== null && typeof v === 'object' && !Array.isArray(v);
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v);
    default:
      return typeof v === t;
  }
}

// Non-finite numbers and their string spellings get a rule that says so, since models emit them.
function typeRule(types: JsonType[], v: unknown): string {
  const wanted = types.map((t) => (t === 'number' ? 'a finite number' : t === 'integer' ? 'an integer' : article(t))).join(' or ');
  if (typeof v === 'number' && !Number.isFinite(v)) return `must be ${wanted}; NaN and ±Infinity are not allowed`;
  if (typeof v === 'string' && (types.includes('number') || types.includes('integer'))) {
    if (/^[+-]?(nan|inf(inity)?)$/i.test(v.trim())) return `must be ${wanted}; NaN and ±Infinity are not allowed, not even as strings`;
    return `must be ${wanted}, not a string`;
  }
  return `must be ${wanted}, not ${article(typeName(v))}`;
}

function article(t: string): string {
  return /^[aeiou]/.test(t) ? `an ${t}` : t === 'null' ? 'null' : `a ${t}`;
}

function truncate(s: string, n = 60): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

function safeStringify(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
