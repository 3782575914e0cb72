import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatIssue } from '../../../../robot/common/validation/issue.js';
import { compileSchema, type Schema } from '../../../../robot/common/validation/json-schema.js';
import { showValue } from '../../../../robot/common/validation/values.js';

const msg = (s: Schema, v: unknown) => compileSchema(s)(v).map((i) => formatIssue(i, { root: 'x' }));

test('numbers: non-finite values and their string spellings get their own rule', () => {
  const n: Schema = { type: 'number' };
  assert.deepEqual(msg(n, Number.NaN), ['x: must be a finite number; NaN and ±Infinity are not allowed, got NaN']);
  assert.deepEqual(msg(n, -Infinity), ['x: must be a finite number; NaN and ±Infinity are not allowed, got -Infinity']);
  assert.deepEqual(msg(n, ' inf'), [
    'x: must be a finite number; NaN and ±Infinity are not allowed, not even as strings, got " inf"',
  ]);
  assert.deepEqual(msg(n, '1.5'), ['x: must be a finite number, not a string, got "1.5"']);
  assert.deepEqual(msg({ type: 'integer', minimum: 2 }, 1), ['x: must be ≥ 2, got 1']);
  assert.deepEqual(msg({ type: ['number', 'null'] }, true), [
    'x: must be a finite number or null, not a boolean, got true',
  ]);
  assert.deepEqual(msg({ type: 'number', exclusiveMaximum: 1 }, 1), ['x: must be < 1, got 1']);
  assert.deepEqual(
    msg({ type: 'integer', const: 1 }, 'one'),
    ['x: must be an integer, not a string, got "one"'],
    'the type rule alone',
  );
});

test('objects: required, unknown, pattern and additional properties, key names', () => {
  const s: Schema = {
    type: 'object',
    properties: { a: { type: 'string' }, b: { type: 'string' } },
    required: ['a', 'b'],
    additionalProperties: false,
    patternProperties: { '^x_': {} },
  };
  assert.deepEqual(msg(s, { a: 'ok', x_any: [1], c: 1 }), [
    'x.b: is required, got nothing',
    'x.c: is not a known field (allowed: a, b), got 1',
  ]);
  const map: Schema = {
    type: 'object',
    minProperties: 1,
    propertyNames: { pattern: '^[a-z]+$' },
    additionalProperties: { type: 'number' },
  };
  assert.deepEqual(msg(map, { ok: 1, Bad: 2, no: 'x' }), [
    'x.Bad: field name must match ^[a-z]+$, got "Bad"',
    'x.no: must be a finite number, not a string, got "x"',
  ]);
  assert.deepEqual(msg(map, {}), ['x: must have at least 1 field, got {}']);
});

test('arrays and strings: sizes, uniqueness, code-point lengths, patterns, enums, const', () => {
  assert.deepEqual(msg({ type: 'array', minItems: 2, items: { type: 'number' } }, ['a']), [
    'x: must have at least 2 items, got ["a"]',
    'x[0]: must be a finite number, not a string, got "a"',
  ]);
  assert.deepEqual(msg({ type: 'array', uniqueItems: true }, [1, [2], [2]]), [
    'x[2]: must not repeat an earlier item, got [2]',
  ]);
  assert.deepEqual(msg({ type: 'string', maxLength: 2 }, '😀😀'), []);
  assert.deepEqual(msg({ type: 'string', maxLength: 1 }, '😀😀'), ['x: must have at most 1 character, got "😀😀"']);
  assert.deepEqual(msg({ enum: ['a', null] }, 'b'), ['x: must be one of "a", null, got "b"']);
  assert.deepEqual(msg({ const: 1 }, 2), ['x: must be 1, got 2']);
});

test('at most 10 issues; values are printed briefly', () => {
  assert.equal(
    compileSchema({ type: 'array', items: { type: 'string' } })(Array.from({ length: 50 }, (_, i) => i)).length,
    10,
  );
  assert.equal(showValue(undefined), 'nothing');
  assert.equal(showValue('y'.repeat(100)).length, 80);
  assert.equal(showValue({ a: 1 }), '{"a":1}');
  assert.equal(showValue(Number.NaN), 'NaN');
});

test('inherited names are not schema properties: __proto__, constructor are reserved, toString unknown', () => {
  const s: Schema = { type: 'object', properties: { a: { type: 'number' } }, additionalProperties: false };
  const v = JSON.parse('{"__proto__": 1, "constructor": 2, "toString": 3}');
  assert.deepEqual(msg(s, v), [
    'x.__proto__: is a reserved key (__proto__, constructor and prototype are refused), got "__proto__"',
    'x.constructor: is a reserved key (__proto__, constructor and prototype are refused), got "constructor"',
  ]);
  assert.deepEqual(msg(s, { toString: 3 }), ['x.toString: is not a known field (allowed: a), got 3']);
  assert.deepEqual(msg(s, { '': 1, 'a b': 2 }), [
    'x[""]: is not a known field (allowed: a), got 1',
    'x["a b"]: is not a known field (allowed: a), got 2',
  ]);
});
