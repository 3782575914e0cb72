// Declarative validators for config sections and JSON-RPC params: each node checks a value,
// fills defaults and carries the type text and docs that docs/config.md is generated from.
import { type Issue, IssueError } from './issue.js';
import { isPrototypeKey, PROTOTYPE_KEY_RULE } from './json-guard.js';
import { isRecord, unknownKey } from './values.js';

export type Kind = 'string' | 'integer' | 'number' | 'boolean' | 'enum' | 'mapping' | 'list' | 'any';

export interface NodeInfo {
  kind: Kind;
  /** Human type, e.g. "integer in 0..65535", used in docs and errors. */
  type: string;
  doc?: string;
  default?: unknown;
  /** Secrets are masked when a config is printed. */
  secret?: boolean;
  fields?: Record<string, Node<unknown>>;
  /** The node every value of a record or item of a list follows. */
  item?: Node<unknown>;
  /** Absent is fine and has no default (optional()). */
  optional?: boolean;
}

export interface Node<T> {
  readonly info: NodeInfo;
  /** Returns the checked value (defaults filled); pushes issues and returns undefined on failure. */
  check(value: unknown, path: string, issues: Issue[]): T | undefined;
}

export type Infer<N> = N extends Node<infer T> ? T : never;

interface Common<T> {
  doc?: string;
  default?: T;
}

function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path ? `${path}.${key}` : key;
}

function leaf<T>(info: NodeInfo, test: (v: unknown) => string | undefined): Node<T> {
  return {
    info,
    check(value, path, issues) {
      if (value === undefined) {
        if (info.default !== undefined) return info.default as T;
        issues.push({ path, rule: `is required (${info.type})`, value });
        return undefined;
      }
      const rule = test(value);
      if (rule) {
        issues.push({ path, rule, value });
        return undefined;
      }
      return value as T;
    },
  };
}

export interface StrOpts extends Common<string> {
  nonEmpty?: boolean;
  secret?: boolean;
  /** Extra rule: returns a rule text when the string is not acceptable. */
  rule?: (s: string) => string | undefined;
}

export function str(o: StrOpts = {}): Node<string> {
  const type = o.nonEmpty ? 'non-empty string' : 'string';
  return leaf({ kind: 'string', type, doc: o.doc, default: o.default, secret: o.secret }, (v) => {
    if (typeof v !== 'string') return `must be a ${type}`;
    if (o.nonEmpty && v.length === 0) return 'must be a non-empty string';
    return o.rule?.(v);
  });
}

interface RangeOpts extends Common<number> {
  min?: number;
  max?: number;
}

function rangeText(o: RangeOpts): string {
  if (o.min !== undefined && o.max !== undefined) return ` in ${o.min}..${o.max}`;
  if (o.min !== undefined) return ` >= ${o.min}`;
  if (o.max !== undefined) return ` <= ${o.max}`;
  return '';
}

function numeric(o: RangeOpts, integer: boolean): Node<number> {
  const type = `${integer ? 'integer' : 'number'}${rangeText(o)}`;
  const rule = `must be ${integer ? 'an' : 'a'} ${type}`;
  return leaf({ kind: integer ? 'integer' : 'number', type, doc: o.doc, default: o.default }, (v) => {
    if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v))) return rule;
    if ((o.min !== undefined && v < o.min) || (o.max !== undefined && v > o.max)) return rule;
    return undefined;
  });
}

export const int = (o: RangeOpts = {}): Node<number> => numeric(o, true);
export const num = (o: RangeOpts = {}): Node<number> => numeric(o, false);

export function bool(o: Common<boolean> = {}): Node<boolean> {
  return leaf({ kind: 'boolean', type: 'boolean', doc: o.doc, default: o.default }, (v) =>
    typeof v === 'boolean' ? undefined : 'must be a boolean (true or false)',
  );
}

export function oneOf<const V extends string | number>(values: readonly V[], o: Common<V> = {}): Node<V> {
  const type = `one of ${values.map((v) => JSON.stringify(v)).join(', ')}`;
  return leaf({ kind: 'enum', type, doc: o.doc, default: o.default }, (v) =>
    values.includes(v as V) ? undefined : `must be ${type}`,
  );
}

/** Accepts anything (used for open sections whose owners validate later). */
export function anything(doc?: string): Node<unknown> {
  return {
    info: { kind: 'any', type: 'any', doc },
    check(value, path, issues) {
      if (value === undefined) issues.push({ path, rule: 'is required (any)', value });
      return value;
    },
  };
}

/** Allows the value to be absent (no default). */
export function optional<T>(node: Node<T>): Node<T | undefined> {
  return {
    info: { ...node.info, type: `${node.info.type} (optional)`, optional: true },
    check: (v, path, issues) => (v === undefined ? undefined : node.check(v, path, issues)),
  };
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return `a ${typeof v}`;
}

// biome-ignore lint/suspicious/noExplicitAny: a field may be a node of any type; ObjOf infers each one
type Fields = Record<string, Node<any>>;
type ObjOf<F extends Fields> = { [K in keyof F]: Infer<F[K]> };

/** A closed mapping: unknown keys are errors (with a suggestion when one is close). */
export function obj<F extends Fields>(
  fields: F,
  o: { doc?: string; refine?: (v: ObjOf<F>, path: string, issues: Issue[]) => void } = {},
): Node<ObjOf<F>> {
  const known = Object.keys(fields);
  return {
    info: { kind: 'mapping', type: 'mapping', doc: o.doc, fields },
    check(value, path, issues) {
      const v = value === undefined ? {} : value;
      if (!isRecord(v)) {
        issues.push({ path, rule: `must be a mapping, not ${describe(v)}`, value });
        return undefined;
      }
      const before = issues.length;
      for (const key of Object.keys(v)) {
        if (isPrototypeKey(key)) issues.push({ path: join(path, key), rule: PROTOTYPE_KEY_RULE, value: key });
        else if (!Object.hasOwn(fields, key))
          issues.push({ path: join(path, key), ...unknownKey(key, known), value: v[key] });
      }
      const out: Record<string, unknown> = {};
      for (const key of known) out[key] = fields[key]!.check(v[key], join(path, key), issues);
      if (issues.length > before) return undefined;
      o.refine?.(out as ObjOf<F>, path, issues);
      return issues.length > before ? undefined : (out as ObjOf<F>);
    },
  };
}

/** A mapping with free keys whose values all follow `value`. */
export function record<T>(
  value: Node<T>,
  o: { doc?: string; keyRule?: (k: string) => string | undefined } = {},
): Node<Record<string, T>> {
  return {
    info: { kind: 'mapping', type: `mapping of ${value.info.type}`, doc: o.doc, default: {}, item: value },
    check(input, path, issues) {
      const v = input === undefined ? {} : input;
      if (!isRecord(v)) {
        issues.push({ path, rule: `must be a mapping, not ${describe(v)}`, value: input });
        return undefined;
      }
      const before = issues.length;
      const out: Record<string, T> = {};
      for (const [k, item] of Object.entries(v)) {
        const keyRule = isPrototypeKey(k) ? PROTOTYPE_KEY_RULE : o.keyRule?.(k);
        if (keyRule) issues.push({ path: join(path, k), rule: keyRule, value: k });
        else out[k] = value.check(item, join(path, k), issues) as T;
      }
      return issues.length > before ? undefined : out;
    },
  };
}

export function list<T>(item: Node<T>, o: { doc?: string; minItems?: number; maxItems?: number } = {}): Node<T[]> {
  const bounds = o.minItems || o.maxItems !== undefined ? ` with ${o.minItems ?? 0}..${o.maxItems ?? '∞'} items` : '';
  return {
    info: { kind: 'list', type: `list of ${item.info.type}${bounds}`, doc: o.doc, default: [], item },
    check(input, path, issues) {
      const v = input === undefined ? [] : input;
      if (!Array.isArray(v)) {
        issues.push({ path, rule: `must be a list, not ${describe(v)}`, value: input });
        return undefined;
      }
      if (v.length < (o.minItems ?? 0) || v.length > (o.maxItems ?? Infinity)) {
        issues.push({ path, rule: `must be a list${bounds}`, value: `${v.length} items` });
        return undefined;
      }
      const before = issues.length;
      const out = v.map((x, i) => item.check(x, join(path, i), issues) as T);
      return issues.length > before ? undefined : out;
    },
  };
}

/** Validates and throws an IssueError listing every issue. */
export function parseOrThrow<T>(node: Node<T>, value: unknown, path = ''): T {
  const issues: Issue[] = [];
  const out = node.check(value, path, issues);
  if (issues.length > 0) throw new IssueError(issues);
  return out as T;
}

/** Scalar leaves reachable through closed mappings, with their dotted paths. */
export function leaves(node: Node<unknown>, prefix = ''): { path: string; node: Node<unknown> }[] {
  const fields = node.info.fields;
  if (!fields)
    return node.info.kind === 'mapping' || node.info.kind === 'list' || node.info.kind === 'any'
      ? []
      : [{ path: prefix, node }];
  return Object.entries(fields).flatMap(([k, child]) => leaves(child, join(prefix, k)));
}
