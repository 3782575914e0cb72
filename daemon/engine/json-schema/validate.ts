// Validates a JSON value against a parsed schema (the subset in schema.ts); every issue names the
// path, the rule and the offending value.
import { type JsonType, type Schema, pathKey, show, isRecord } from './schema.js';

export interface SchemaIssue {
  path: string;
  rule: string;
  message: string;
}

/** Returns every issue found (empty = valid). */
export function validateJson(value: unknown, schema: Schema, path = '$'): SchemaIssue[] {
  const issues: SchemaIssue[] = [];
  check(value, schema, path, issues);
  return issues;
}

/** One line per issue, for error messages. */
export function formatIssues(issues: SchemaIssue[]): string {
  return issues.map((i) => `${i.path}: ${i.message}`).join('; ');
}

export function jsonTypeOf(v: unknown): JsonType | 'invalid' {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return !Number.isFinite(v) ? 'invalid' : Number.isInteger(v) ? 'integer' : 'number';
  if (typeof v === 'string' || typeof v === 'boolean') return typeof v as JsonType;
  if (isRecord(v)) return 'object';
  return 'invalid';
}

function typeMatches(actual: JsonType | 'invalid', wanted: JsonType): boolean {
  return actual === wanted || (wanted === 'number' && actual === 'integer');
}

function check(v: unknown, s: Schema, path: string, out: SchemaIssue[]): void {
  const add = (rule: string, message: string): void => {
    out.push({ path, rule, message });
  };
  if (s.never) return add('false', `no value is allowed here, got ${show(v)}`);
  const t = jsonTypeOf(v);
  if (t === 'invalid') return add('type', `not a JSON value: ${show(v)}`);
  if (s.types && !s.types.some((w) => typeMatches(t, w))) {
    return add('type', `expected ${s.types.join(' or ')}, got ${t} ${show(v)}`);
  }
  if (s.enum && !s.enum.some((e) => jsonEqual(e, v))) {
    return add(s.enum.length === 1 ? 'const' : 'enum', `expected one of ${show(s.enum)}, got ${show(v)}`);
  }
  if (s.anyOf && !s.anyOf.some((sub) => validateJson(v, sub, path).length === 0)) {
    add('anyOf', `matches none of the ${s.anyOf.length} anyOf alternatives: ${show(v)}`);
  }
  if (s.oneOf) {
    const n = s.oneOf.filter((sub) => validateJson(v, sub, path).length === 0).length;
    if (n !== 1) add('oneOf', `must match exactly one oneOf alternative, matches ${n}: ${show(v)}`);
  }
  if (typeof v === 'string') checkString(v, s, add);
  else if (typeof v === 'number') checkNumber(v, s, add);
  else if (Array.isArray(v)) checkArray(v, s, path, out, add);
  else if (isRecord(v)) checkObject(v, s, path, out, add);
}

type Add = (rule: string, message: string) => void;

function checkString(v: string, s: Schema, add: Add): void {
  // JSON Schema counts code points, not UTF-16 units.
  const len = [...v].length;
  if (s.minLength !== undefined && len < s.minLength) add('minLength', `string shorter than ${s.minLength} characters: ${show(v)}`);
  if (s.maxLength !== undefined && len > s.maxLength) add('maxLength', `string longer than ${s.maxLength} characters: ${show(v)}`);
  if (s.pattern && !s.pattern.test(v)) add('pattern', `string does not match /${s.pattern.source}/: ${show(v)}`);
}

function checkNumber(v: number, s: Schema, add: Add): void {
  if (s.minimum !== undefined && v < s.minimum) add('minimum', `must be >= ${s.minimum}, got ${v}`);
  if (s.maximum !== undefined && v > s.maximum) add('maximum', `must be <= ${s.maximum}, got ${v}`);
  if (s.exclusiveMinimum !== undefined && v <= s.exclusiveMinimum) add('exclusiveMinimum', `must be > ${s.exclusiveMinimum}, got ${v}`);
  if (s.exclusiveMaximum !== undefined && v >= s.exclusiveMaximum) add('exclusiveMaximum', `must be < ${s.exclusiveMaximum}, got ${v}`);
}

function checkArray(v: unknown[], s: Schema, path: string, out: SchemaIssue[], add: Add): void {
  if (s.minItems !== undefined && v.length < s.minItems) add('minItems', `array needs at least ${s.minItems} items, got ${v.length}`);
  if (s.maxItems !== undefined && v.length > s.maxItems) add('maxItems', `array allows at most ${s.maxItems} items, got ${v.length}`);
  if (s.items) v.forEach((item, i) => check(item, s.items!, `${path}[${i}]`, out));
}

function checkObject(v: Record<string, unknown>, s: Schema, path: string, out: SchemaIssue[], add: Add): void {
  for (const key of s.required ?? []) {
    if (!Object.hasOwn(v, key)) add('required', `missing required property ${JSON.stringify(key)}`);
  }
  const declared = new Map(s.properties ?? []);
  for (const [key, value] of Object.entries(v)) {
    const sub = declared.get(key);
    if (sub) check(value, sub, path + pathKey(key), out);
    else if (s.additionalProperties === false) {
      out.push({ path: path + pathKey(key), rule: 'additionalProperties', message: `unexpected property ${JSON.stringify(key)} = ${show(value)}` });
    } else if (s.additionalProperties !== undefined && s.additionalProperties !== true) {
      check(value, s.additionalProperties, path + pathKey(key), out);
    }
  }
}

/** Structural equality of JSON values (object key order ignored). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (isRecord(a) && isRecord(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}
