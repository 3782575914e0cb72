import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSchema } from '../../../../daemon/engine/json-schema/schema.js';
import { validateJson } from '../../../../daemon/engine/json-schema/validate.js';
import { IssueError, formatIssue, formatIssues } from '../../../../robot/common/validation/issue.js';
import { canonicalJson } from '../../../../daemon/engine/json-schema/canonical-json.js';

const MOVE = parseSchema({
  type: 'object',
  properties: {
    arm: { enum: ['left', 'right'] },
    pose: { type: 'array', items: { type: 'number' }, minItems: 7, maxItems: 7 },
    speed: { type: 'number', minimum: 0, exclusiveMaximum: 1 },
    steps: { type: 'integer', minimum: 1, maximum: 10 },
    note: { type: 'string', minLength: 1, maxLength: 5 },
    gripper: { anyOf: [{ type: 'number', minimum: 0, maximum: 1 }, { type: 'null' }] },
    mode: { oneOf: [{ const: 'fast' }, { type: 'integer' }] },
    nested: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false },
  },
  required: ['arm', 'pose'],
  additionalProperties: false,
});

test('a valid value has no issues', () => {
  const v = {
    arm: 'left',
    pose: [0, 0, 0, 0, 0, 0, 1],
    speed: 0.5,
    steps: 3,
    note: 'hé',
    gripper: null,
    mode: 'fast',
    nested: { ok: true },
  };
  assert.deepEqual(validateJson(v, MOVE), []);
});

test('each rule reports its path, rule and value', () => {
  const cases: Array<[Record<string, unknown>, string, string]> = [
    [{ pose: [0, 0, 0, 0, 0, 0, 1] }, '$.arm', '$.arm: is required, got nothing'],
    [{ arm: 'up', pose: [0, 0, 0, 0, 0, 0, 1] }, '$.arm', '$.arm: must be one of "left", "right", got "up"'],
    [{ arm: 'left', pose: [0, 0, 0] }, '$.pose', '$.pose: must have at least 7 items, got [0,0,0]'],
    [
      { arm: 'left', pose: [0, 0, 0, 0, 0, 0, 1, 2] },
      '$.pose',
      '$.pose: must have at most 7 items, got [0,0,0,0,0,0,1,2]',
    ],
    [
      { arm: 'left', pose: [0, 0, 0, 0, 0, '0', 1] },
      '$.pose[5]',
      '$.pose[5]: must be a finite number, not a string, got "0"',
    ],
    [{ arm: 'left', pose: [0, 0, 0, 0, 0, 0, 1], speed: 1 }, '$.speed', '$.speed: must be < 1, got 1'],
    [{ arm: 'left', pose: [0, 0, 0, 0, 0, 0, 1], speed: -0.1 }, '$.speed', '$.speed: must be ≥ 0, got -0.1'],
    [
      { arm: 'left', pose: [0, 0, 0, 0, 0, 0, 1], steps: 2.5 },
      '$.steps',
      '$.steps: must be an integer, not a number, got 2.5',
    ],
    [{ arm: 'left', pose: [0, 0, 0, 0, 0, 0, 1], steps: 11 }, '$.steps', '$.steps: must be ≤ 10, got 11'],
    [{ arm: 'left', pose: [0, 0, 0, 0, 0, 0, 1], note: '' }, '$.note', '$.note: must not be empty, got ""'],
    [
      { arm: 'left', pose: [0, 0, 0, 0, 0, 0, 1], note: '😀😀😀😀😀😀' },
      '$.note',
      '$.note: must have at most 5 characters, got "😀😀😀😀😀😀"',
    ],
    [
      { arm: 'left', pose: [0, 0, 0, 0, 0, 0, 1], gripper: 2 },
      '$.gripper',
      '$.gripper: must match one of the 2 anyOf alternatives, got 2',
    ],
    [
      { arm: 'left', pose: [0, 0, 0, 0, 0, 0, 1], mode: 'slow' },
      '$.mode',
      '$.mode: must match exactly one oneOf alternative (matches 0), got "slow"',
    ],
    [{ arm: 'left', pose: [0, 0, 0, 0, 0, 0, 1], nested: {} }, '$.nested.ok', '$.nested.ok: is required, got nothing'],
    [
      { arm: 'left', pose: [0, 0, 0, 0, 0, 0, 1], nested: { ok: 1 } },
      '$.nested.ok',
      '$.nested.ok: must be a boolean, not a number, got 1',
    ],
    [
      { arm: 'left', pose: [0, 0, 0, 0, 0, 0, 1], 'odd key': 1 },
      '$["odd key"]',
      '$["odd key"]: is not a known field (allowed: arm, pose, speed, steps, note, gripper, mode, nested), got 1',
    ],
  ];
  for (const [value, path, message] of cases) {
    const issues = validateJson(value, MOVE);
    assert.equal(issues.length, 1, `${JSON.stringify(value)} → ${formatIssues(issues)}`);
    assert.equal(issues[0].path, path);
    assert.equal(formatIssue(issues[0]), message);
  }
});

test('maxLength counts code points; six emoji are six characters', () => {
  const s = parseSchema({ type: 'string', maxLength: 6 });
  assert.deepEqual(validateJson('😀😀😀😀😀😀', s), []);
});

test('additionalProperties as a schema validates the extra values', () => {
  const s = parseSchema({ type: 'object', additionalProperties: { type: 'integer' } });
  assert.deepEqual(validateJson({ a: 1, b: 2 }, s), []);
  assert.deepEqual(
    validateJson({ a: 'x' }, s).map((i) => [i.path, i.rule]),
    [['$.a', 'must be an integer, not a string']],
  );
});

test('schema parsing: malformed parts are errors naming the path; unsupported keywords are recorded', () => {
  const bad: Array<[unknown, RegExp]> = [
    [
      { type: 'text' },
      /^\$\.type: must name JSON types \(object, array, string, number, integer, boolean, null\), got "text"$/,
    ],
    [{ enum: [] }, /^\$\.enum: must be a non-empty array, got \[\]$/],
    [
      { properties: { a: { minLength: -1 } } },
      /^\$\.properties\.a\.minLength: must be a non-negative integer, got -1$/,
    ],
    [
      { items: [{}, {}] },
      /^\$\.items: must be one schema \(tuple-form items, an array, is not supported\), got \[\{\},\{\}\]$/,
    ],
    [{ pattern: '(' }, /^\$\.pattern: must be a valid regular expression \(.*\), got "\("$/],
    [{ exclusiveMinimum: true }, /^\$\.exclusiveMinimum: may be true only next to minimum, got true$/],
    [5, /^\$: must be a schema \(an object or a boolean\), got 5$/],
  ];
  for (const [raw, re] of bad)
    assert.throws(
      () => parseSchema(raw),
      (e: unknown) => e instanceof IssueError && re.test(e.message),
      JSON.stringify(raw),
    );
  const s = parseSchema({
    type: 'object',
    description: 'x',
    properties: { a: { $ref: '#/x', format: 'uri' } },
    allOf: [],
  });
  assert.deepEqual(s.unsupported, ['$.allOf', '$.properties.a.$ref']);
});

test('draft-4 boolean exclusiveMinimum and OpenAPI nullable are understood', () => {
  const s = parseSchema({ type: 'number', minimum: 0, exclusiveMinimum: true, nullable: true });
  assert.deepEqual(
    validateJson(0, s).map((i) => i.rule),
    ['must be > 0'],
  );
  assert.deepEqual(validateJson(null, s), []);
});

test('canonical JSON matches Python json.dumps layout', () => {
  assert.equal(canonicalJson({ a: 1, b: [1, 'é', null], c: {} }), '{"a": 1, "b": [1, "é", null], "c": {}}');
  assert.equal(canonicalJson('a"b\n'), '"a\\"b\\n"');
});
