// Prototype keys and nesting depth: refused by every checker, before records are built.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { anything, obj, parseOrThrow, record, str } from '../../../../robot/common/validation/builders.js';
import { formatIssue } from '../../../../robot/common/validation/issue.js';
import { guardJson, jsonDepth, prototypeKeyIssues } from '../../../../robot/common/validation/json-guard.js';
import { compileSchema } from '../../../../robot/common/validation/json-schema.js';
import { showValue } from '../../../../robot/common/validation/values.js';

const nested = (n: number) => JSON.parse('['.repeat(n) + ']'.repeat(n)) as unknown;

test('jsonDepth counts levels iteratively and stops past the limit', () => {
  assert.equal(jsonDepth(1), 0);
  assert.equal(jsonDepth({ a: [1, { b: [] }] }), 4);
  assert.equal(jsonDepth(nested(200_000)), 200_000, 'no stack overflow');
  assert.equal(jsonDepth(nested(200_000), 64), 65);
});

test('prototype keys are found anywhere, with their path', () => {
  const v = JSON.parse('{"a":[{"__proto__":{"x":1}}],"b":{"constructor":2},"prototype":3}');
  assert.deepEqual(
    prototypeKeyIssues(v).map((i) => formatIssue(i)),
    [
      'prototype: is a reserved key (__proto__, constructor and prototype are refused), got "prototype"',
      'a[0].__proto__: is a reserved key (__proto__, constructor and prototype are refused), got "__proto__"',
      'b.constructor: is a reserved key (__proto__, constructor and prototype are refused), got "constructor"',
    ],
  );
  assert.deepEqual(prototypeKeyIssues({ a: ['__proto__'] }), [], 'values are not keys');
});

test('obj() refuses prototype keys instead of taking them for known fields', () => {
  const node = obj({ name: str({ default: '' }) });
  for (const key of ['__proto__', 'constructor', 'prototype']) {
    assert.throws(
      () => parseOrThrow(node, JSON.parse(`{"${key}": {"polluted": true}}`)),
      new RegExp(`^Error|${key}: is a reserved key`),
    );
    assert.throws(() => parseOrThrow(node, JSON.parse(`{"${key}": 1}`)), /is a reserved key/);
  }
});

test('record() refuses a prototype key instead of losing the entry', () => {
  const node = record(str());
  assert.throws(() => parseOrThrow(node, JSON.parse('{"__proto__": "x", "ok": "y"}')), /__proto__: is a reserved key/);
  assert.throws(() => parseOrThrow(node, { constructor: 'x' }), /constructor: is a reserved key/);
  assert.deepEqual(parseOrThrow(node, { ok: 'y' }), { ok: 'y' });
  assert.equal(parseOrThrow(anything(), 1), 1);
});

test('JSON Schema checks refuse prototype keys even where extra keys are allowed', () => {
  const open = compileSchema({ type: 'object', additionalProperties: true });
  assert.deepEqual(open({ a: 1 }), []);
  const issues = open(JSON.parse('{"a": {"constructor": {"prototype": 1}}}'));
  assert.deepEqual(
    issues.map((i) => i.path),
    ['a.constructor'],
  );
});

test('JSON Schema checks refuse deep values with a validation issue', () => {
  const open = compileSchema({ type: 'object', additionalProperties: true });
  const issues = open({ a: nested(100_000) });
  assert.equal(issues.length, 1);
  assert.equal(
    formatIssue(issues[0]!),
    '(top level): must not nest arrays and objects more than 64 levels deep, got "65 levels"',
  );
  assert.deepEqual(guardJson(nested(3), 2).length, 1);
});

test('showValue prints a value too deep for JSON.stringify instead of throwing', () => {
  assert.equal(showValue(nested(100_000)), 'a list');
});
