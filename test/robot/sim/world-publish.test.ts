import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SCENE_HZ, SCENE_KEEPALIVE_S, SceneThrottle } from '../../../robot/sim/process.js';

test('the ground truth goes out on a change, at most SCENE_HZ a second, unchanged every SCENE_KEEPALIVE_S, and at once after a reconnection', () => {
  assert.equal(SCENE_HZ, 2);
  assert.equal(SCENE_KEEPALIVE_S, 1);
  const s = new SceneThrottle();
  assert.equal(s.due(10, 0), true, 'the first');
  assert.equal(s.due(10.9, 0), false, 'nothing changed');
  assert.equal(s.due(11, 0), true, 'unchanged, again after 1 s (a scene check waits for a fresh one)');
  assert.equal(s.due(11.2, 0), false, 'nothing changed');
  assert.equal(s.due(11.2, 1), false, 'a change 0.2 s later waits');
  assert.equal(s.due(11.5, 1), true, 'and goes out 0.5 s after the last');
  assert.equal(s.due(12.7, 1), true, 'unchanged, again 1.2 s later');
  assert.equal(s.due(13.3, 2), true, 'a change 0.6 s later');
  assert.equal(s.due(13.5, 3), false, 'a change 0.2 s later waits');
  assert.equal(s.due(13.9, 5), true, 'and goes out 0.6 s after the last');
  s.reset();
  assert.equal(s.due(14, 5), true, 'a new connection gets the truth at once');
});
