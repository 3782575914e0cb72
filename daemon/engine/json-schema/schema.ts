// The JSON Schema subset tool arguments and response formats use, parsed once into a typed form
// that both the validator and the constrained-decoding grammar read.
import { keyPath } from '../../../robot/common/validation/issue.js';
import { isRecord, showValue } from '../../../robot/common/validation/values.js';

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

export class SchemaError extends Error {
  constructor(readonly path: string, readonly rule: string, message: string) {
    super(`${path}: ${message}`);
    this.name = 'SchemaError';
  }
}

const TYPES: ReadonlySet<string> = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean', 'null']);
// Keywords that only describe (never constrain) a value.
const ANNOTATIONS: ReadonlySet<string> = new Set([
  '$schema', '$id', '$comment', 'title', 'description', 'default', 'examples', 'format',
  'deprecated', 'readOnly', 'writeOnly', 'contentMediaType', 'contentEncoding', 'strict',
]);
const HANDLED: ReadonlySet<string> = new Set([
  'type', 'enum', 'const', 'anyOf', 'oneOf', 'minLength', 'maxLength', 'pattern', 'minimum', 'maximum',
  'exclusiveMinimum', 'exclusiveMaximum', 'items', 'minItems', 'maxItems', 'properties', 'required',
  'additionalProperties', 'nullable',
]);

/** Parses a raw JSON schema; throws SchemaError naming the path, rule and value of a malformed part. */
export function parseSchema(raw: unknown, path = '$'): Schema {
  if (raw === true) return { unsupported: [] };
  if (raw === false) return { never: true, unsupported: [] };
  if (!isRecord(raw)) throw new SchemaError(path, 'schema', `a schema must be an object or boolean, got ${showValue(raw)}`);
  const s: Schema = { unsupported: [] };
  for (const key of Object.keys(raw)) {
    if (!HANDLED.has(key) && !ANNOTATIONS.has(key)) s.unsupported.push(`${path}.${key}`);
  }
  if (raw.type !== undefined) {
    const list = Array.isArray(raw.type) ? raw.type : [raw.type];
    for (const t of list) {
      if (typeof t !== 'string' || !TYPES.has(t)) throw new SchemaError(`${path}.type`, 'type', `unknown type ${showValue(t)}`);
    }
    s.types = [...new Set(list as JsonType[])];
    if (raw.nullable === true && !s.types.includes('null')) s.types.push('null');
  }
  if (raw.const !== undefined) s.enum = [raw.const];
  else if (raw.enum !== undefined) {
    if (!Array.isArray(raw.enum) || raw.enum.length === 0) {
      throw new SchemaError(`${path}.enum`, 'enum', `enum must be a non-empty array, got ${showValue(raw.enum)}`);
    }
    s.enum = raw.enum;
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const v = raw[key];
    if (v === undefined) continue;
    if (!Array.isArray(v) || v.length === 0) throw new SchemaError(`${path}.${key}`, key, `${key} must be a non-empty array, got ${showValue(v)}`);
    s[key] = v.map((sub, i) => parseSchema(sub, `${path}.${key}[${i}]`));
    for (const sub of s[key]!) s.unsupported.push(...sub.unsupported);
  }
  s.minLength = count(raw, 'minLength', path);
  s.maxLength = count(raw, 'maxLength', path);
  if (raw.pattern !== undefined) {
    if (typeof raw.pattern !== 'string') throw new SchemaError(`${path}.pattern`, 'pattern', `pattern must be a string, got ${showValue(raw.pattern)}`);
    try {
      s.pattern = new RegExp(raw.pattern, 'u');
    } catch (e) {
      throw new SchemaError(`${path}.pattern`, 'pattern', `invalid regular expression ${showValue(raw.pattern)}: ${(e as Error).message}`);
    }
  }
  parseBounds(raw, s, path);
  if (raw.items !== undefined) {
    if (Array.isArray(raw.items)) throw new SchemaError(`${path}.items`, 'items', 'tuple-form items (an array) is not supported');
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
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new SchemaError(`${path}.${key}`, key, `${key} must be a finite number, got ${showValue(v)}`);
    s[key] = v;
  }
  for (const [key, plain] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']] as const) {
    const v = raw[key];
    if (v === undefined || v === false) continue;
    // Draft 4 wrote `exclusiveMinimum: true` next to `minimum`.
    if (v === true) {
      if (s[plain] === undefined) throw new SchemaError(`${path}.${key}`, key, `${key}: true needs ${plain}`);
      s[key] = s[plain];
      s[plain] = undefined;
    } else if (typeof v === 'number' && Number.isFinite(v)) s[key] = v;
    else throw new SchemaError(`${path}.${key}`, key, `${key} must be a finite number, got ${showValue(v)}`);
  }
}

function parseObjectKeywords(raw: Record<string, unknown>, s: Schema, path: string): void {
  if (raw.properties !== undefined) {
    if (!isRecord(raw.properties)) throw new SchemaError(`${path}.properties`, 'properties', `properties must be an object, got ${showValue(raw.properties)}`);
    s.properties = Object.entries(raw.properties).map(([k, v]) => {
      const sub = parseSchema(v, `${keyPath(`${path}.properties`, k)}`);
      s.unsupported.push(...sub.unsupported);
      return [k, sub];
    });
  }
  if (raw.required !== undefined) {
    if (!Array.isArray(raw.required) || raw.required.some((r) => typeof r !== 'string')) {
      throw new SchemaError(`${path}.required`, 'required', `required must be an array of strings, got ${showValue(raw.required)}`);
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
    throw new SchemaError(`${path}.${key}`, key, `${key} must be a non-negative integer, got ${showValue(v)}`);
  }
  return v;
}
