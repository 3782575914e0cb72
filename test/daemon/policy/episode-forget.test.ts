// Ended episodes are forgotten (from memory; records stay) in the order they ended: an episode
// that started first but ended last is still there for the policy.stop that ended it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { episodeFinished, startRig, waitReady } from '../robots/harness.js';

const done = JSON.stringify({ name: 'done', arguments: { summary: 'finished' } });

test('policy.stop answers with the summary of the episode it stopped, however many ended meanwhile', async (t) => {
  const rig = (await startRig(t, 'embedded'))!;
  await waitReady(rig, 'arm1');
  await waitReady(rig, 'duo');
  rig.d.policy.keepEnded = 1;
  const start = async (robot: string, check: string) => {
    const r = await rig.rpc.call('policy.start', {
      robot,
      instruction: 'tidy up',
      provider: { kind: 'scripted', lines: [done] },
      check: { kind: check },
    });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    return r.result.id as string;
  };
  // A waits for an operator's confirmation; B starts after it and ends first.
  const a = await start('arm1', 'operator');
  const b = await start('duo', 'none');
  assert.equal((await episodeFinished(rig, b)).state, 'done');
  const stopped = await rig.rpc.call('policy.stop', { id: a });
  assert.equal(stopped.error, undefined, JSON.stringify(stopped.error));
  assert.deepEqual([stopped.result.state, stopped.result.summary.id], ['stopped', a]);
  // B, the earlier ended, is the one forgotten.
  assert.equal((await rig.rpc.call('policy.get', { id: b })).error?.code, -32602);
});
