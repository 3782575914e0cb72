// Checks every parsed JSON value before it is validated or used: prototype names as keys are
// refused (a record built from them changes or loses its prototype) and nesting is bounded
// (recursive printers and validators overflow the stack on deep values). Both walks are iterative.
import { type Issue, keyPath } from './issue.js';

export const PROTOTYPE_KEYS: readonly string[] = ['__proto__', 'constructor', 'prototype'];
export const PROTOTYPE_KEY_RULE = 'is a reserved key (__proto__, constructor and prototype are refused)';
/** Nesting allowed where no limit is configured (tool arguments, controller messages). */
export const DEFAULT_MAX_DEPTH = 64;

export function isPrototypeKey(key: string): boolean {
  return PROTOTYPE_KEYS.includes(key);
}

/** Levels of arrays/objects in `value` (a scalar is 0, `[]` is 1), counted up to `limit + 1`. */
export function jsonDepth(value: unknown, limit = Number.MAX_SAFE_INTEGER): number {
  // Parallel stacks, no per-node allocation: this runs on every message.
  const nodes: object[] = [];
  const depths: number[] = [];
  let deepest = 0;
  if (typeof value === 'object' && value !== null) {
    nodes.push(value);
    depths.push(1);
  }
  while (nodes.length > 0) {
    const v = nodes.pop()!;
    const depth = depths.pop()!;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    const children: unknown[] = Array.isArray(v) ? v : Object.values(v);
    for (const child of children) {
      if (typeof child === 'object' && child !== null) {
        nodes.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return deepest;
}

/** The issue for a value nested deeper than `limit`, or undefined. */
export function depthIssue(value: unknown, limit: number, path = ''): Issue | undefined {
  const depth = jsonDepth(value, limit);
  if (depth <= limit) return undefined;
  return { path, rule: `must not nest arrays and objects more than ${limit} levels deep`, value: `${depth} levels` };
}

/** An object or array met by the prototype-key walk; its path is spelled out only for an issue. */
interface Visit {
  v: object;
  parent: Visit | null;
  key: string | number;
}

function pathOf(n: Visit, base: string): string {
  const keys: (string | number)[] = [];
  for (let p: Visit | null = n; p?.parent; p = p.parent) keys.push(p.key);
  let out = base;
  for (let i = keys.length - 1; i >= 0; i--) {
    const k = keys[i]!;
    out = typeof k === 'number' ? `${out}[${k}]` : keyPath(out, k);
  }
  return out;
}

/**
 * Prototype names used as keys anywhere in `value` (at most `max`; an object's keys before its
 * children's). Scalars are not visited and paths are built only for issues: a 100,000-point
 * trajectory is walked in milliseconds.
 */
export function prototypeKeyIssues(value: unknown, path = '', max = 10): Issue[] {
  const issues: Issue[] = [];
  if (typeof value !== 'object' || value === null) return issues;
  const stack: Visit[] = [{ v: value, parent: null, key: '' }];
  const children: Visit[] = [];
  while (stack.length > 0 && issues.length < max) {
    const n = stack.pop()!;
    children.length = 0;
    if (Array.isArray(n.v)) {
      const a = n.v as unknown[];
      for (let i = 0; i < a.length; i++) {
        const x = a[i];
        if (typeof x === 'object' && x !== null) children.push({ v: x, parent: n, key: i });
      }
    } else
      for (const k of Object.keys(n.v)) {
        const x = (n.v as Record<string, unknown>)[k];
        if (isPrototypeKey(k)) issues.push({ path: keyPath(pathOf(n, path), k), rule: PROTOTYPE_KEY_RULE, value: k });
        else if (typeof x === 'object' && x !== null) children.push({ v: x, parent: n, key: k });
      }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  return issues.slice(0, max);
}

/** Depth first (a deep value is not walked further), then prototype keys; [] when the value is fine. */
export function guardJson(value: unknown, maxDepth = DEFAULT_MAX_DEPTH, path = ''): Issue[] {
  const deep = depthIssue(value, maxDepth, path);
  return deep ? [deep] : prototypeKeyIssues(value, path);
}
