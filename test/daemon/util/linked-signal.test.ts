// linkedSignal: aborts with either source's reason, starts aborted when a source is, and leaves
// no listener on a long-lived source once unlinked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { linkedSignal } from '../../../daemon/util/linked-signal.js';

test('aborts with the reason of whichever source aborts first', () => {
  const a = new AbortController();
  const b = new AbortController();
  const l = linkedSignal(a.signal, b.signal);
  assert.equal(l.signal.aborted, false);
  b.abort('daemon stopping');
  assert.deepEqual([l.signal.aborted, l.signal.reason], [true, 'daemon stopping']);
  a.abort('client gone');
  assert.equal(l.signal.reason, 'daemon stopping', 'the first reason stays');
  const pre = linkedSignal(AbortSignal.abort('already'), new AbortController().signal);
  assert.deepEqual([pre.signal.aborted, pre.signal.reason], [true, 'already']);
});

test('unlink leaves the long-lived source without listeners, however many links came and went', () => {
  const daemon = new AbortController();
  for (let i = 0; i < 1000; i++) linkedSignal(daemon.signal, new AbortController().signal).unlink();
  assert.equal(getEventListeners(daemon.signal, 'abort').length, 0);
});
