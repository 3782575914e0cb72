// A command observer (an episode's record) that throws — a full disk — never holds a command
// back: the trajectory and the stop are published and obeyed all the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../helpers/wait.js';
import { callTool, poseFromHere, startRig, waitReady } from './harness.js';

test('commands go out even when the command observer throws', async (t) => {
  const rig = (await startRig(t, 'embedded', { robots: [{ id: 'arm1', robot: 'yam' }] }))!;
  await waitReady(rig, 'arm1');
  let observed = 0;
  rig.d.robots.commandObserver = () => {
    observed++;
    throw new Error('ENOSPC: no space left on device');
  };
  const target = await poseFromHere(rig, 'arm1', 'arm', -0.1, -0.08, 0.06);
  const mark = rig.rpc.notifications.length;
  const move = callTool(rig, 'arm1', 'move_to', { target });
  await waitFor(
    () => (rig.rpc.notifications.slice(mark).some((n) => n.params?.phase === 'started') ? true : undefined),
    'the move to start',
  );
  const stop = (await rig.rpc.call('robots.stop', { robot: 'arm1' })).result.stopped[0];
  assert.equal(stop.status, 'ok', stop.message);
  assert.equal((await move).status, 'stopped');
  assert.ok(observed >= 2, 'the observer saw the trajectory and the stop');
});
