// Validates a JSON value against a parsed client schema (the subset in schema.ts that the
// constrained-decoding grammar compiles, so the two agree on exactly the same rules). Client
// schemas are untrusted request data, so they are not compiled to code by Ajv. Issues are worded
// like every other validator's (robot/common/validation).
import { type Issue, keyPath } from '../../../robot/common/validation/issue.js';
import {
  REQUIRED,
  UNKNOWN_FIELD,
  boundRule,
  enumRule,
  itemsRule,
  lengthRule,
  patternRule,
  typeRule,
} from '../../../robot/common/validation/rules.js';
import { isRecord } from '../../../robot/common/validation/values.js';
import type { JsonType, Schema } from './schema.js';

/** Returns every issue found (empty = valid). */
export function validateJson(value: unknown, schema: Schema, path = '$'): Issue[] {
  const issues: Issue[] = [];
  check(value, schema, path, issues);
  return issues;
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

type Add = (rule: string) => void;

function check(v: unknown, s: Schema, path: string, out: Issue[]): void {
  const add: Add = (rule) => {
    out.push({ path, rule, value: v });
  };
  if (s.never) return add('is not allowed here (the schema is false)');
  const t = jsonTypeOf(v);
  if (t === 'invalid') return add('must be a JSON value');
  if (s.types && !s.types.some((w) => typeMatches(t, w))) return add(typeRule(s.types, v));
  if (s.enum && !s.enum.some((e) => jsonEqual(e, v))) return add(enumRule(s.enum));
  if (s.anyOf && !s.anyOf.some((sub) => validateJson(v, sub, path).length === 0))
    add(`must match one of the ${s.anyOf.length} anyOf alternatives`);
  if (s.oneOf) {
    const n = s.oneOf.filter((sub) => validateJson(v, sub, path).length === 0).length;
    if (n !== 1) add(`must match exactly one oneOf alternative (matches ${n})`);
  }
  if (typeof v === 'string') checkString(v, s, add);
  else if (typeof v === 'number') checkNumber(v, s, add);
  else if (Array.isArray(v)) checkArray(v, s, path, out, add);
  else if (isRecord(v)) checkObject(v, s, path, out);
}

function checkString(v: string, s: Schema, add: Add): void {
  // JSON Schema counts code points, not UTF-16 units.
  const len = [...v].length;
  if (s.minLength !== undefined && len < s.minLength) add(lengthRule('minLength', s.minLength));
  if (s.maxLength !== undefined && len > s.maxLength) add(lengthRule('maxLength', s.maxLength));
  if (s.pattern && !s.pattern.test(v)) add(patternRule(`/${s.pattern.source}/`));
}

function checkNumber(v: number, s: Schema, add: Add): void {
  for (const k of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'] as const) {
    const limit = s[k];
    if (limit === undefined) continue;
    const ok =
      k === 'minimum' ? v >= limit : k === 'maximum' ? v <= limit : k === 'exclusiveMinimum' ? v > limit : v < limit;
    if (!ok) add(boundRule(k, limit));
  }
}

function checkArray(v: unknown[], s: Schema, path: string, out: Issue[], add: Add): void {
  if (s.minItems !== undefined && v.length < s.minItems) add(itemsRule('minItems', s.minItems));
  if (s.maxItems !== undefined && v.length > s.maxItems) add(itemsRule('maxItems', s.maxItems));
  if (s.items) v.forEach((item, i) => check(item, s.items!, `${path}[${i}]`, out));
}

function checkObject(v: Record<string, unknown>, s: Schema, path: string, out: Issue[]): void {
  for (const key of s.required ?? []) {
    if (!Object.hasOwn(v, key)) out.push({ path: keyPath(path, key), rule: REQUIRED, value: undefined });
  }
  const declared = new Map(s.properties ?? []);
  for (const [key, value] of Object.entries(v)) {
    const sub = declared.get(key);
    if (sub) check(value, sub, keyPath(path, key), out);
    else if (s.additionalProperties === false) {
      const allowed = [...declared.keys()];
      out.push({
        path: keyPath(path, key),
        rule: UNKNOWN_FIELD,
        value,
        ...(allowed.length ? { hint: `allowed: ${allowed.join(', ')}` } : {}),
      });
    } else if (s.additionalProperties !== undefined && s.additionalProperties !== true) {
      check(value, s.additionalProperties, keyPath(path, key), out);
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
