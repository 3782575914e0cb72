// `brainstem bench link` runs both parts end to end and prints the documented JSON keys
// (numbers are benchmark output, not asserted).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../../helpers/daemon.js';

test('bench link --json: plan_to_publish and state_streaming with their keys; bad flags exit 2', async () => {
  const r = await runCli(
    ['bench', 'link', '--json', '--calls', '3', '--duration', '1', '--subscribers', '1', '--state-rate', '200'],
    {},
    { timeoutMs: 120_000 },
  );
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(out), ['plan_to_publish', 'state_streaming']);
  assert.deepEqual(Object.keys(out.plan_to_publish), [
    'robot',
    'joints',
    'poses',
    'calls',
    'trajectory_points',
    'p50_ms',
    'p99_ms',
    'max_ms',
    'plan_p50_ms',
    'target_ms',
  ]);
  assert.equal(out.plan_to_publish.joints, 6);
  assert.equal(out.plan_to_publish.calls, 3);
  assert.ok(out.plan_to_publish.trajectory_points > 10);
  assert.equal(out.state_streaming.arms, 2);
  assert.equal(out.state_streaming.states_per_s.length, 2);
  assert.ok(
    out.state_streaming.states_per_s.every((n: number) => n > 0),
    'both arms streamed',
  );
  assert.ok(out.state_streaming.notifications_per_s > 0, 'the subscriber received state');
  assert.deepEqual(Object.keys(out.state_streaming.event_loop_lag_ms), ['p50', 'p99', 'max']);
  const bad = await runCli(['bench', 'link', '--only', 'nothing']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--only must be publish or streaming, got "nothing"/);
});
