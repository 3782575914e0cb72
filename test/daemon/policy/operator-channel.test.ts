// The operator channel's check: an answered `done` leaves no listener on the episode's signal (an
// episode with many operator checks grew one per check), and a stop still rejects a pending one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { OperatorChannel } from '../../../daemon/policy/episode/operator.js';

test('answered operator checks leave no abort listener behind; a stop rejects a pending one', async () => {
  const op = new OperatorChannel(() => undefined);
  const ac = new AbortController();
  const stopped = () => new Error('stopped');
  for (let i = 0; i < 20; i++) {
    const pending = op.awaitConfirm(ac.signal, stopped);
    assert.equal(getEventListeners(ac.signal, 'abort').length, 1);
    assert.equal(op.confirm(i % 2 === 0, `check ${i}`), true);
    assert.deepEqual(await pending, { complete: i % 2 === 0, reason: `operator: check ${i}` });
    assert.equal(getEventListeners(ac.signal, 'abort').length, 0, `after check ${i}`);
  }
  const pending = op.awaitConfirm(ac.signal, stopped);
  ac.abort();
  await assert.rejects(pending, /stopped/);
  assert.equal(op.confirm(true), false, 'nothing pending after the stop');
});
