// JSON Schemas we publish and enforce (robot tools, controller protocol messages): one schema is
// both the document handed out and the rule set, checked by Ajv compiled once per schema.
// Ajv's errors become Issues worded by rules.ts.
import { Ajv, type ErrorObject } from 'ajv';
import { type Issue, keyPath } from './issue.js';
import { guardJson } from './json-guard.js';
import {
  REQUIRED,
  UNIQUE,
  UNKNOWN_FIELD,
  boundRule,
  enumRule,
  fieldsRule,
  itemsRule,
  lengthRule,
  patternRule,
  typeRule,
} from './rules.js';

export type JsonType = 'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null';

/** The keywords our schemas use (a subset of draft-07 / 2020-12). */
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
  maxProperties?: number;
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

/** Returns every issue (at most MAX_ISSUES, first first); [] when the value is valid. */
export type Check = (value: unknown) => Issue[];

const MAX_ISSUES = 10;

// allErrors so one reply lists every problem; inputs are size-limited by their transports.
const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, allowUnionTypes: true });

// Compiling costs milliseconds; equal schemas (the tools of every robot with the same arms) share one.
const compiled = new Map<string, Check>();

/** The checker of `schema`, compiled on first use (call at module scope or once per robot, not per value). */
export function compileSchema(schema: Schema): Check {
  const key = JSON.stringify(schema);
  let check = compiled.get(key);
  if (!check) {
    const validate = ajv.compile(schema);
    check = (value) => {
      // Prototype keys are refused even where a schema allows extra keys; deep values never reach Ajv.
      const guarded = guardJson(value);
      if (guarded.length > 0) return guarded.slice(0, MAX_ISSUES);
      return validate(value) ? [] : toIssues(validate.errors ?? []).slice(0, MAX_ISSUES);
    };
    compiled.set(key, check);
  }
  return check;
}

function toIssues(errors: ErrorObject[]): Issue[] {
  const out: Issue[] = [];
  const wrongType = new Set<string>();
  for (const e of errors) {
    const path = pointerToPath(e.instancePath);
    // Ajv also reports const/enum on a value of the wrong type; the type rule says enough.
    if (wrongType.has(path) || e.keyword === 'propertyNames') continue;
    if (e.keyword === 'type') wrongType.add(path);
    out.push(toIssue(e, path));
  }
  return out;
}

function toIssue(e: ErrorObject, path: string): Issue {
  const p = e.params;
  if (e.propertyName !== undefined) {
    const inner = toIssue({ ...e, propertyName: undefined, data: e.propertyName }, path);
    return { path: keyPath(path, e.propertyName), rule: `field name ${inner.rule}`, value: e.propertyName };
  }
  switch (e.keyword) {
    case 'type':
      return { path, rule: typeRule([p.type].flat(), e.data), value: e.data };
    case 'const':
      return { path, rule: enumRule([p.allowedValue]), value: e.data };
    case 'enum':
      return { path, rule: enumRule(p.allowedValues), value: e.data };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { path, rule: boundRule(e.keyword, p.limit), value: e.data };
    case 'minLength':
    case 'maxLength':
      return { path, rule: lengthRule(e.keyword, p.limit), value: e.data };
    case 'pattern':
      return { path, rule: patternRule(p.pattern), value: e.data };
    case 'minItems':
    case 'maxItems':
      return { path, rule: itemsRule(e.keyword, p.limit), value: e.data };
    case 'minProperties':
    case 'maxProperties':
      return { path, rule: fieldsRule(e.keyword, p.limit), value: e.data };
    case 'uniqueItems': {
      // Ajv names the two equal items in either order; the later one repeats the earlier.
      const later = Math.max(p.i, p.j);
      return { path: `${path}[${later}]`, rule: UNIQUE, value: (e.data as unknown[])[later] };
    }
    case 'required':
      return { path: keyPath(path, p.missingProperty), rule: REQUIRED, value: undefined };
    case 'additionalProperties': {
      const allowed = Object.keys((e.parentSchema as Schema).properties ?? {});
      const value = (e.data as Record<string, unknown>)[p.additionalProperty];
      return {
        path: keyPath(path, p.additionalProperty),
        rule: UNKNOWN_FIELD,
        value,
        ...(allowed.length ? { hint: `allowed: ${allowed.join(', ')}` } : {}),
      };
    }
    default:
      return { path, rule: e.message ?? e.keyword, value: e.data };
  }
}

/** `/arms/a b/q/1` → `arms["a b"].q[1]`. */
function pointerToPath(pointer: string): string {
  let path = '';
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path = /^(0|[1-9]\d*)$/.test(key) ? `${path}[${key}]` : keyPath(path, key);
  }
  return path;
}
