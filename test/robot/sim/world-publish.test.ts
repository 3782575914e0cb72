import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SCENE_HZ, SceneThrottle } from '../../../robot/sim/process.js';

test('the ground truth goes out on a change, at most SCENE_HZ a second, and at once after a reconnection', () => {
  assert.equal(SCENE_HZ, 2);
  const s = new SceneThrottle();
  assert.equal(s.due(10, 0), true, 'the first');
  assert.equal(s.due(11, 0), false, 'nothing changed');
  assert.equal(s.due(11.2, 1), true, 'a change after 1.2 s');
  assert.equal(s.due(11.5, 2), false, 'a change 0.3 s later waits');
  assert.equal(s.due(11.7, 5), true, 'and goes out 0.5 s after the last');
  s.reset();
  assert.equal(s.due(11.8, 5), true, 'a new connection gets the truth at once');
});
