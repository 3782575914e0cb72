// The JSON Schema subset tool arguments and response formats use, parsed once into a typed form
// that both the validator and the constrained-decoding grammar read.
import { linearRegExp } from '../../util/linear-regex.js';
import { IssueError, keyPath } from '../../../robot/common/validation/issue.js';
import { isRecord } from '../../../robot/common/validation/values.js';

export type JsonType = 'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null';

export interface Schema {
  /** Allowed types; undefined = any JSON value. */
  types?: JsonType[];
  /** `enum` / `const` values (const becomes a one-element enum). */
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  /** `false` schema: nothing validates. */
  never?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: RegExp;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  /** Declared properties in schema order. */
  properties?: Array<[string, Schema]>;
  required?: string[];
  /** false = no other keys; a schema = other keys' values; undefined = anything. */
  additionalProperties?: boolean | Schema;
  /** Paths of constraint keywords outside the subset (the validator does not check them). */
  unsupported: string[];
}

/** A malformed part of a client schema, as an IssueError with one issue. */
function malformed(path: string, rule: string, value: unknown): IssueError {
  return new IssueError([{ path, rule, value }]);
}

const TYPES: ReadonlySet<string> = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean', 'null']);
// Keywords that only describe (never constrain) a value.
const ANNOTATIONS: ReadonlySet<string> = new Set([
  '$schema',
  '$id',
  '$comment',
  'title',
  'description',
  'default',
  'examples',
  'format',
  'deprecated',
  'readOnly',
  'writeOnly',
  'contentMediaType',
  'contentEncoding',
  'strict',
]);
const HANDLED: ReadonlySet<string> = new Set([
  'type',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'items',
  'minItems',
  'maxItems',
  'properties',
  'required',
  'additionalProperties',
  'nullable',
]);

/** Parses a raw JSON schema; throws an IssueError naming the path, rule and value of a malformed part. */
export function parseSchema(raw: unknown, path = '$'): Schema {
  if (raw === true) return { unsupported: [] };
  if (raw === false) return { never: true, unsupported: [] };
  if (!isRecord(raw)) throw malformed(path, 'must be a schema (an object or a boolean)', raw);
  const s: Schema = { unsupported: [] };
  for (const key of Object.keys(raw)) {
    if (!HANDLED.has(key) && !ANNOTATIONS.has(key)) s.unsupported.push(`${path}.${key}`);
  }
  if (raw.type !== undefined) {
    const list = Array.isArray(raw.type) ? raw.type : [raw.type];
    for (const t of list) {
      if (typeof t !== 'string' || !TYPES.has(t))
        throw malformed(`${path}.type`, `must name JSON types (${[...TYPES].join(', ')})`, t);
    }
    s.types = [...new Set(list as JsonType[])];
    if (raw.nullable === true && !s.types.includes('null')) s.types.push('null');
  }
  if (raw.const !== undefined) s.enum = [raw.const];
  else if (raw.enum !== undefined) {
    if (!Array.isArray(raw.enum) || raw.enum.length === 0) {
      throw malformed(`${path}.enum`, 'must be a non-empty array', raw.enum);
    }
    s.enum = raw.enum;
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const v = raw[key];
    if (v === undefined) continue;
    if (!Array.isArray(v) || v.length === 0) throw malformed(`${path}.${key}`, 'must be a non-empty array', v);
    s[key] = v.map((sub, i) => parseSchema(sub, `${path}.${key}[${i}]`));
    for (const sub of s[key]!) s.unsupported.push(...sub.unsupported);
  }
  s.minLength = count(raw, 'minLength', path);
  s.maxLength = count(raw, 'maxLength', path);
  if (raw.pattern !== undefined) {
    if (typeof raw.pattern !== 'string') throw malformed(`${path}.pattern`, 'must be a string', raw.pattern);
    const re = linearRegExp(raw.pattern);
    if (typeof re === 'string') throw malformed(`${path}.pattern`, re, raw.pattern);
    s.pattern = re;
  }
  parseBounds(raw, s, path);
  if (raw.items !== undefined) {
    if (Array.isArray(raw.items))
      throw malformed(`${path}.items`, 'must be one schema (tuple-form items, an array, is not supported)', raw.items);
    s.items = parseSchema(raw.items, `${path}.items`);
    s.unsupported.push(...s.items.unsupported);
  }
  s.minItems = count(raw, 'minItems', path);
  s.maxItems = count(raw, 'maxItems', path);
  parseObjectKeywords(raw, s, path);
  return s;
}

function parseBounds(raw: Record<string, unknown>, s: Schema, path: string): void {
  for (const key of ['minimum', 'maximum'] as const) {
    const v = raw[key];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw malformed(`${path}.${key}`, 'must be a finite number', v);
    s[key] = v;
  }
  for (const [key, plain] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    const v = raw[key];
    if (v === undefined || v === false) continue;
    // Draft 4 wrote `exclusiveMinimum: true` next to `minimum`.
    if (v === true) {
      if (s[plain] === undefined) throw malformed(`${path}.${key}`, `may be true only next to ${plain}`, v);
      s[key] = s[plain];
      s[plain] = undefined;
    } else if (typeof v === 'number' && Number.isFinite(v)) s[key] = v;
    else throw malformed(`${path}.${key}`, 'must be a finite number', v);
  }
}

function parseObjectKeywords(raw: Record<string, unknown>, s: Schema, path: string): void {
  if (raw.properties !== undefined) {
    if (!isRecord(raw.properties)) throw malformed(`${path}.properties`, 'must be an object', raw.properties);
    s.properties = Object.entries(raw.properties).map(([k, v]) => {
      const sub = parseSchema(v, `${keyPath(`${path}.properties`, k)}`);
      s.unsupported.push(...sub.unsupported);
      return [k, sub];
    });
  }
  if (raw.required !== undefined) {
    if (!Array.isArray(raw.required) || raw.required.some((r) => typeof r !== 'string')) {
      throw malformed(`${path}.required`, 'must be an array of strings', raw.required);
    }
    s.required = [...new Set(raw.required as string[])];
  }
  const ap = raw.additionalProperties;
  if (ap !== undefined) {
    if (typeof ap === 'boolean') s.additionalProperties = ap;
    else {
      s.additionalProperties = parseSchema(ap, `${path}.additionalProperties`);
      s.unsupported.push(...s.additionalProperties.unsupported);
    }
  }
}

function count(raw: Record<string, unknown>, key: string, path: string): number | undefined {
  const v = raw[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    throw malformed(`${path}.${key}`, 'must be a non-negative integer', v);
  }
  return v;
}
