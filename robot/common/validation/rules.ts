// The words for each JSON Schema keyword, shared by the Ajv-backed checker and the engine's
// validator of client tool schemas, so a rule reads the same wherever it is broken.
import { typeName } from './values.js';

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

// Non-finite numbers and their string spellings get a rule that says so, since models emit them.
export function typeRule(types: readonly string[], v: unknown): string {
  const wanted = typeWords(types);
  if (typeof v === 'number' && !Number.isFinite(v)) return `must be ${wanted}; NaN and ±Infinity are not allowed`;
  if (typeof v === 'string' && (types.includes('number') || types.includes('integer'))) {
    if (/^[+-]?(nan|inf(inity)?)$/i.test(v.trim()))
      return `must be ${wanted}; NaN and ±Infinity are not allowed, not even as strings`;
    return `must be ${wanted}, not a string`;
  }
  return `must be ${wanted}, not ${article(typeName(v))}`;
}

/** `a finite number or null` for ['number', 'null']. */
export function typeWords(types: readonly string[]): string {
  return types
    .map((t) => (t === 'number' ? 'a finite number' : t === 'integer' ? 'an integer' : article(t)))
    .join(' or ');
}

function article(t: string): string {
  return /^[aeiou]/.test(t) ? `an ${t}` : t === 'null' ? 'null' : `a ${t}`;
}

export const enumRule = (values: readonly unknown[]): string =>
  values.length === 1
    ? `must be ${JSON.stringify(values[0])}`
    : `must be one of ${values.map((e) => JSON.stringify(e)).join(', ')}`;

/** minimum, maximum, exclusiveMinimum, exclusiveMaximum. */
export function boundRule(keyword: string, limit: number): string {
  const op = { minimum: '≥', maximum: '≤', exclusiveMinimum: '>', exclusiveMaximum: '<' }[keyword];
  return `must be ${op} ${limit}`;
}

export function lengthRule(keyword: 'minLength' | 'maxLength', limit: number): string {
  if (keyword === 'minLength')
    return limit === 1 ? 'must not be empty' : `must have at least ${plural(limit, 'character')}`;
  return `must have at most ${plural(limit, 'character')}`;
}

export const patternRule = (pattern: string): string => `must match ${pattern}`;

export const itemsRule = (keyword: 'minItems' | 'maxItems', limit: number): string =>
  `must have ${keyword === 'minItems' ? 'at least' : 'at most'} ${plural(limit, 'item')}`;

export const fieldsRule = (keyword: 'minProperties' | 'maxProperties', limit: number): string =>
  `must have ${keyword === 'minProperties' ? 'at least' : 'at most'} ${plural(limit, 'field')}`;

export const REQUIRED = 'is required';
export const UNIQUE = 'must not repeat an earlier item';
export const UNKNOWN_FIELD = 'is not a known field';
