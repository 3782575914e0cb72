// Reads untyped config data (parsed YAML) field by field, collecting every broken rule as an
// Issue whose path names robot, joint and quantity, instead of stopping at the first.
import type { Issue } from '../common/validation/issue.js';
import { isRecord, unknownKey } from '../common/validation/values.js';
import type { Triple } from './types.js';

export type Obj = Record<string, unknown>;

export interface NumberRule {
  /** Strictly greater than. */
  gt?: number;
  integer?: boolean;
  min?: number;
}

/** The path of a description issue: `robot "arm": joint "j1": velocity` (`scene "s": …` for a scene). */
export function descriptionPath(robot: string, quantity: string, joint?: string, subject = 'robot'): string {
  return `${subject} "${robot}": ${joint === undefined ? '' : `joint "${joint}": `}${quantity}`;
}

export class Checker {
  readonly issues: Issue[] = [];

  /** `subject` names what is checked in every path: a robot (setups too) or a scene. */
  constructor(
    readonly robot: string,
    readonly subject = 'robot',
  ) {}

  path(quantity: string, joint?: string): string {
    return descriptionPath(this.robot, quantity, joint, this.subject);
  }

  issue(quantity: string, value: unknown, rule: string, joint?: string): void {
    this.issues.push({ path: this.path(quantity, joint), rule, value });
  }

  /** Reports keys of `obj` outside `allowed` (typos would otherwise be silently ignored). */
  knownKeys(obj: Obj, allowed: readonly string[], prefix: string, joint?: string): void {
    for (const k of Object.keys(obj)) {
      if (!allowed.includes(k))
        this.issues.push({
          path: this.path(`${prefix}${k}`, joint),
          ...unknownKey(k, allowed),
          value: obj[k],
        });
    }
  }

  /** A section object; undefined (with an issue when `required`) if absent or not a mapping. */
  section(obj: Obj, key: string, prefix: string, required: boolean): Obj | undefined {
    const v = obj[key];
    if (v === undefined && !required) return undefined;
    if (!isRecord(v)) {
      this.issue(`${prefix}${key}`, v, 'must be a mapping');
      return undefined;
    }
    return v;
  }

  /** Calls `each` on every mapping of the list `list` (absent = none) with its quantity `key[i]`, in order. */
  forEachItem(list: unknown, key: string, what: string, each: (item: Obj, quantity: string) => void): void {
    if (list === undefined) return;
    if (!Array.isArray(list)) {
      this.issue(key, list, `must be a list of ${what}`);
      return;
    }
    list.forEach((item, i) => {
      if (isRecord(item)) each(item, `${key}[${i}]`);
      else this.issue(`${key}[${i}]`, item, 'must be a mapping');
    });
  }

  number(obj: Obj, key: string, quantity: string, rule: NumberRule, fallback?: number, joint?: string): number {
    const v = obj[key];
    if (v === undefined && fallback !== undefined) return fallback;
    return this.checkNumber(v, quantity, rule, joint);
  }

  checkNumber(v: unknown, quantity: string, rule: NumberRule, joint?: string): number {
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      this.issue(quantity, v, 'must be a finite number', joint);
      return NaN;
    }
    if (rule.integer && !Number.isInteger(v)) this.issue(quantity, v, 'must be an integer', joint);
    else if (rule.gt !== undefined && !(v > rule.gt)) this.issue(quantity, v, `must be > ${rule.gt}`, joint);
    else if (rule.min !== undefined && !(v >= rule.min)) this.issue(quantity, v, `must be ≥ ${rule.min}`, joint);
    return v;
  }

  triple(obj: Obj, key: string, quantity: string, fallback?: Triple): Triple {
    const v = obj[key];
    if (v === undefined && fallback) return fallback;
    if (!Array.isArray(v) || v.length !== 3 || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      this.issue(quantity, v, 'must be a list of three finite numbers');
      return [NaN, NaN, NaN];
    }
    return [v[0], v[1], v[2]];
  }

  /** An optional non-empty string: '' when the key is absent. */
  optionalString(obj: Obj, key: string, quantity: string): string {
    return obj[key] === undefined ? '' : this.string(obj, key, quantity);
  }

  string(obj: Obj, key: string, quantity: string, pattern?: RegExp, joint?: string): string {
    const v = obj[key];
    if (typeof v !== 'string' || v.length === 0) {
      this.issue(quantity, v, 'must be a non-empty string', joint);
      return '';
    }
    if (pattern && !pattern.test(v)) this.issue(quantity, v, `must match ${pattern}`, joint);
    return v;
  }

  oneOf<T extends string>(
    obj: Obj,
    key: string,
    quantity: string,
    options: readonly T[],
    fallback?: T,
    joint?: string,
  ): T {
    const v = obj[key];
    if (v === undefined && fallback !== undefined) return fallback;
    if (typeof v !== 'string' || !options.includes(v as T)) {
      this.issue(quantity, v, `must be one of ${options.join(', ')}`, joint);
      return options[0];
    }
    return v as T;
  }
}
