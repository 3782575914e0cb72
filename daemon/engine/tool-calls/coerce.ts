// XML tool-call parameters arrive as text; the tool's JSON schema says what each should become
// (number, integer, boolean, null, object, array or string).
import { enumRule, typeWords } from '../../../robot/common/validation/rules.js';
import type { Schema } from '../json-schema/schema.js';
import { jsonEqual, jsonTypeOf, validateJson } from '../json-schema/validate.js';

/** A failure names the broken rule; the offending value is the parameter's text. */
export type Coerced = { ok: true; value: unknown } | { ok: false; rule: string };

const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** Converts a parameter's text to the value its schema wants; `schema` undefined keeps the text. */
export function coerceParameter(text: string, schema: Schema | undefined): Coerced {
  if (!schema) return { ok: true, value: text };
  const trimmed = text.trim();
  if (schema.enum) {
    for (const e of schema.enum) {
      if (e === text || (typeof e === 'string' && e === trimmed)) return { ok: true, value: e };
    }
    const parsed = parseJson(trimmed);
    if (parsed.ok && schema.enum.some((e) => jsonEqual(e, parsed.value))) return parsed;
    return { ok: false, rule: enumRule(schema.enum) };
  }
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) {
    for (const alt of alternatives) {
      const r = coerceParameter(text, alt);
      if (r.ok && validateJson(r.value, alt).length === 0) return r;
    }
    return { ok: false, rule: "must match one of the schema's alternatives" };
  }
  if (!schema.types) {
    const parsed = parseJson(trimmed);
    return parsed.ok ? parsed : { ok: true, value: text };
  }
  const t = new Set(schema.types);
  if (t.has('null') && trimmed === 'null') return { ok: true, value: null };
  if (t.has('boolean') && /^(true|false)$/i.test(trimmed)) return { ok: true, value: trimmed.toLowerCase() === 'true' };
  if ((t.has('integer') || t.has('number')) && JSON_NUMBER.test(trimmed)) {
    const n = Number(trimmed);
    if (Number.isFinite(n) && (t.has('number') || Number.isInteger(n))) return { ok: true, value: n };
  }
  if (t.has('object') || t.has('array')) {
    const parsed = parseJson(trimmed);
    if (parsed.ok) {
      const kind = jsonTypeOf(parsed.value);
      if ((kind === 'object' && t.has('object')) || (kind === 'array' && t.has('array'))) return parsed;
    }
  }
  if (t.has('string')) return { ok: true, value: text };
  return { ok: false, rule: `must be ${typeWords(schema.types)}` };
}

function parseJson(text: string): Coerced {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (e) {
    return { ok: false, rule: `must be JSON (${(e as Error).message})` };
  }
}
