import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coerceParameter } from '../../../../daemon/engine/tool-calls/coerce.js';
import { parseSchema } from '../../../../daemon/engine/json-schema/schema.js';

test('XML parameter text becomes the type its schema asks for', () => {
  const cases: Array<[unknown, string, unknown]> = [
    [{ type: 'integer' }, ' 42 ', 42],
    [{ type: 'integer' }, '-7', -7],
    [{ type: 'number' }, '2.5e-3', 0.0025],
    [{ type: 'boolean' }, 'True', true],
    [{ type: 'boolean' }, 'false', false],
    [{ type: 'null' }, 'null', null],
    [{ type: 'string' }, ' keep  spaces ', ' keep  spaces '],
    [{ type: 'string' }, '42', '42'],
    [{ type: 'array', items: { type: 'number' } }, '[1, 2]', [1, 2]],
    [{ type: 'object' }, '{"a": {"b": [1]}}', { a: { b: [1] } }],
    [{ type: ['integer', 'string'] }, '5', 5],
    [{ type: ['integer', 'string'] }, 'five', 'five'],
    [{ type: ['string', 'null'] }, 'null', null],
    [{ enum: ['left', 'right'] }, 'left', 'left'],
    [{ enum: [1, 2] }, '2', 2],
    [{ anyOf: [{ type: 'integer' }, { type: 'string', maxLength: 3 }] }, 'abc', 'abc'],
    [{}, '[1, "x"]', [1, 'x']],
    [{}, 'plain words', 'plain words'],
  ];
  for (const [schema, text, want] of cases) {
    const r = coerceParameter(text, parseSchema(schema));
    assert.deepEqual(r, { ok: true, value: want }, `${JSON.stringify(schema)} ← ${JSON.stringify(text)}`);
  }
  assert.deepEqual(coerceParameter('x', undefined), { ok: true, value: 'x' }, 'undeclared parameters stay text');
});

test('text that cannot become the schema type is a reason, not a guess', () => {
  const cases: Array<[unknown, string, RegExp]> = [
    [{ type: 'integer' }, '4.5', /must be an integer/],
    [{ type: 'integer' }, '0x10', /must be an integer/],
    [{ type: 'number' }, 'NaN', /must be a finite number/],
    [{ type: 'number' }, '1,5', /must be a finite number/],
    [{ type: 'boolean' }, 'yes', /must be a boolean/],
    [{ type: 'object' }, '[1]', /must be an object/],
    [{ type: 'array' }, '[1,', /must be an array/],
    [{ enum: ['a'] }, 'b', /must be "a"/],
    [{ anyOf: [{ type: 'integer' }, { type: 'boolean' }] }, 'x', /must match one of the schema's alternatives/],
  ];
  for (const [schema, text, re] of cases) {
    const r = coerceParameter(text, parseSchema(schema));
    assert.equal(r.ok, false, `${JSON.stringify(schema)} ← ${JSON.stringify(text)}`);
    if (!r.ok) assert.match(r.rule, re);
  }
});
