// Grammar nodes for constrained decoding, compiled from the JSON-schema subset. Output uses one
// fixed layout (json.dumps style: `{"a": 1, "b": [1, 2]}`, properties in schema order), so the
// language is small and every node knows the fewest bytes that complete it.
import { keyPath } from '../../../robot/common/validation/issue.js';
import { canonicalJson } from '../json-schema/canonical-json.js';
import type { JsonType, Schema } from '../json-schema/schema.js';
import { validateJson } from '../json-schema/validate.js';
import { type NumberSpec, minRemaining, numberSpec } from './number.js';

export type Node =
  | { kind: 'lit'; id: number; minLen: number; bytes: Uint8Array }
  | { kind: 'seq'; id: number; minLen: number; items: Node[] }
  | { kind: 'alt'; id: number; minLen: number; options: Node[] }
  | { kind: 'str'; id: number; minLen: number; minLength: number; maxLength: number }
  | { kind: 'num'; id: number; minLen: number; spec: NumberSpec }
  | {
      kind: 'arr';
      id: number;
      minLen: number;
      open: number;
      close: number;
      item: Node;
      minItems: number;
      maxItems: number;
    }
  | { kind: 'obj'; id: number; minLen: number; props: Prop[] };

export interface Prop {
  /** `"key": ` as the first property, and `, "key": ` after another. */
  first: Uint8Array;
  later: Uint8Array;
  value: Node;
  required: boolean;
}

export class GrammarError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
    this.name = 'GrammarError';
  }
}

/** The whole grammar is over its size budget: not one type's failure, so never folded into another. */
class GrammarTooLarge extends GrammarError {}

export interface GrammarLimits {
  /** Nesting depth of values whose schema says nothing (any JSON value). */
  anyDepth: number;
  /** Keys in an object whose properties the schema does not list. */
  freeObjectProps: number;
  /** Length of such free keys. */
  freeKeyLength: number;
}

const DEFAULT_LIMITS: GrammarLimits = { anyDepth: 2, freeObjectProps: 8, freeKeyLength: 32 };
// Each mask walks the vocabulary once per live thread, and threads grow with alternatives: a
// client's schema may not make one token cost seconds (anyOf of 20k numbers: 30 s a mask).
const MAX_NODES = 8192;
const MAX_ALTERNATIVES = 64;
const MAX_ENUM = 1024;
const utf8 = new TextEncoder();

/** Builds grammar nodes; node ids are unique within one builder (they key the mask cache). */
export class GrammarBuilder {
  private nextId = 0;
  private readonly anyCache = new Map<number, Node>();

  constructor(readonly limits: GrammarLimits = DEFAULT_LIMITS) {}

  lit(text: string | Uint8Array): Node {
    const bytes = typeof text === 'string' ? utf8.encode(text) : text;
    return { kind: 'lit', id: this.id(), minLen: bytes.length, bytes };
  }

  seq(items: Node[]): Node {
    return { kind: 'seq', id: this.id(), minLen: items.reduce((s, n) => s + n.minLen, 0), items };
  }

  alt(options: Node[]): Node {
    if (options.length === 1) return options[0];
    return { kind: 'alt', id: this.id(), minLen: options.reduce((m, o) => Math.min(m, o.minLen), Infinity), options };
  }

  private id(): number {
    if (this.nextId >= MAX_NODES)
      throw new GrammarTooLarge(
        '$',
        `the schema needs more than ${MAX_NODES} grammar nodes for constrained decoding; simplify it`,
      );
    return this.nextId++;
  }

  /** The grammar for values valid against `schema`; throws GrammarError for parts it cannot express. */
  schema(s: Schema, path = '$'): Node {
    if (s.never) throw new GrammarError(path, 'the schema allows no value');
    if (s.unsupported.length > 0) {
      throw new GrammarError(
        path,
        `constrained decoding does not support these schema keywords: ${s.unsupported.join(', ')}`,
      );
    }
    if (s.pattern) throw new GrammarError(path, 'constrained decoding does not support "pattern"');
    const alternatives = s.anyOf ?? s.oneOf;
    if (alternatives) {
      if (s.types || s.enum || s.properties || s.items) {
        throw new GrammarError(
          path,
          'anyOf/oneOf next to other constraint keywords is not supported for constrained decoding',
        );
      }
      const key = s.anyOf ? 'anyOf' : 'oneOf';
      if (alternatives.length > MAX_ALTERNATIVES)
        throw new GrammarError(
          `${path}.${key}`,
          `constrained decoding takes at most ${MAX_ALTERNATIVES} alternatives, got ${alternatives.length}`,
        );
      return this.alt(alternatives.map((sub, i) => this.schema(sub, `${path}.${key}[${i}]`)));
    }
    if (s.enum) {
      if (s.enum.length > MAX_ENUM)
        throw new GrammarError(
          `${path}.enum`,
          `constrained decoding takes at most ${MAX_ENUM} values, got ${s.enum.length}`,
        );
      // Checked against the rest of the schema: against `s` itself each check would rescan the enum.
      const rest: Schema = { ...s, enum: undefined };
      const ok = s.enum.filter((v) => validateJson(v, rest).length === 0);
      if (ok.length === 0) throw new GrammarError(path, 'no enum value satisfies the rest of the schema');
      return this.alt(ok.map((v) => this.lit(canonicalJson(v))));
    }
    const types: JsonType[] = s.types ?? ['object', 'array', 'string', 'number', 'boolean', 'null'];
    const nodes: Node[] = [];
    const errors: string[] = [];
    for (const t of types) {
      if (t === 'integer' && types.includes('number')) continue;
      try {
        nodes.push(this.typed(t, s, path));
      } catch (e) {
        if (!(e instanceof GrammarError) || e instanceof GrammarTooLarge) throw e;
        errors.push(e.message);
      }
    }
    if (nodes.length === 0) throw new GrammarError(path, errors.join('; '));
    return this.alt(nodes);
  }

  private typed(t: JsonType, s: Schema, path: string): Node {
    switch (t) {
      case 'null':
        return this.lit('null');
      case 'boolean':
        return this.alt([this.lit('true'), this.lit('false')]);
      case 'string':
        return this.str(s.minLength ?? 0, s.maxLength ?? Infinity, path);
      case 'number':
      case 'integer': {
        const spec = numberSpec(t === 'integer', s);
        if (!spec) throw new GrammarError(path, `no ${t} of at most 15 digits lies within the bounds`);
        return { kind: 'num', id: this.nextId++, minLen: minRemaining(spec, ''), spec };
      }
      case 'array': {
        const item = s.items ? this.schema(s.items, `${path}.items`) : this.any(this.limits.anyDepth - 1);
        const minItems = s.minItems ?? 0;
        const maxItems = s.maxItems ?? Infinity;
        if (minItems > maxItems) throw new GrammarError(path, `minItems ${minItems} > maxItems ${maxItems}`);
        return this.arr('[', ']', item, minItems, maxItems);
      }
      case 'object':
        return this.object(s, path);
    }
  }

  private str(minLength: number, maxLength: number, path: string): Node {
    if (minLength > maxLength) throw new GrammarError(path, `minLength ${minLength} > maxLength ${maxLength}`);
    return { kind: 'str', id: this.nextId++, minLen: 2 + minLength, minLength, maxLength };
  }

  private arr(open: string, close: string, item: Node, minItems: number, maxItems: number): Node {
    const minLen = 2 + minItems * item.minLen + 2 * Math.max(0, minItems - 1);
    return {
      kind: 'arr',
      id: this.nextId++,
      minLen,
      open: open.charCodeAt(0),
      close: close.charCodeAt(0),
      item,
      minItems,
      maxItems,
    };
  }

  private object(s: Schema, path: string): Node {
    const declared = new Map(s.properties ?? []);
    const required = new Set(s.required ?? []);
    for (const key of required) {
      if (!declared.has(key))
        declared.set(key, typeof s.additionalProperties === 'object' ? s.additionalProperties : { unsupported: [] });
    }
    if (declared.size === 0 && s.properties === undefined && s.additionalProperties !== false) {
      // Keys the schema does not name: a bounded map of free keys.
      const value =
        typeof s.additionalProperties === 'object'
          ? this.schema(s.additionalProperties, `${path}.additionalProperties`)
          : this.any(this.limits.anyDepth - 1);
      const entry = this.seq([this.str(1, this.limits.freeKeyLength, path), this.lit(': '), value]);
      return this.arr('{', '}', entry, 0, this.limits.freeObjectProps);
    }
    const props: Prop[] = [...declared].map(([key, sub]) => {
      const keyText = `${JSON.stringify(key)}: `;
      return {
        first: utf8.encode(keyText),
        later: utf8.encode(`, ${keyText}`),
        value: this.schema(sub, keyPath(`${path}.properties`, key)),
        required: required.has(key),
      };
    });
    const node: Node = { kind: 'obj', id: this.nextId++, minLen: 0, props };
    node.minLen = 1 + objectRemaining(node, 0, false);
    return node;
  }

  /** Any JSON value, nesting at most `depth` more levels. */
  any(depth: number): Node {
    const hit = this.anyCache.get(depth);
    if (hit) return hit;
    const scalar: Schema = { types: ['string', 'number', 'boolean', 'null'], unsupported: [] };
    const options = [this.schema(scalar)];
    if (depth > 0) {
      const inner = this.any(depth - 1);
      options.push(this.arr('[', ']', inner, 0, this.limits.freeObjectProps));
      const entry = this.seq([this.str(1, this.limits.freeKeyLength, '$'), this.lit(': '), inner]);
      options.push(this.arr('{', '}', entry, 0, this.limits.freeObjectProps));
    }
    const node = this.alt(options);
    this.anyCache.set(depth, node);
    return node;
  }
}

/** Fewest bytes that close an object whose next candidate property is `from` (with '}'). */
export function objectRemaining(node: Extract<Node, { kind: 'obj' }>, from: number, emitted: boolean): number {
  let total = 1;
  let sep = emitted;
  for (let k = from; k < node.props.length; k++) {
    const p = node.props[k];
    if (!p.required) continue;
    total += (sep ? p.later.length : p.first.length) + p.value.minLen;
    sep = true;
  }
  return total;
}
