import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apart } from '../../../robot/common/format.js';

test('apart: a value and its limit get the decimals that show them apart (hand-computed)', () => {
  assert.deepEqual(apart(0.0199996, 0.02, 1000, ' mm', 1), ['19.9996 mm', '20.0000 mm']);
  assert.deepEqual(apart(0.0019, 0.002, 1000, ' mm', 1), ['1.9 mm', '2.0 mm']);
  assert.deepEqual(apart((1.004 * Math.PI) / 180, Math.PI / 180, 180 / Math.PI, '°', 2), ['1.004°', '1.000°']);
  // Equal values stop at 6 decimals.
  assert.deepEqual(apart(0.02, 0.02, 1000, ' mm', 1), ['20.000000 mm', '20.000000 mm']);
});
