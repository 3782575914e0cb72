// A streamed reply whose client stopped reading: the write waits for drain at most stallMs, then
// the request is cancelled (onStall); a drain in time, or the client going, never counts as a stall.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { send } from '../../../daemon/api/openai/chat-route.js';

/** A response whose socket takes nothing: write() returns false; `flush()` lets it drain. */
function stuckResponse(): { res: ServerResponse; flush: () => void } {
  const pending: (() => void)[] = [];
  const res = new Writable({
    highWaterMark: 1,
    write(_chunk, _encoding, done) {
      pending.push(done);
    },
  });
  return { res: res as unknown as ServerResponse, flush: () => pending.splice(0).forEach((done) => done()) };
}

test('a reader that takes nothing for stallMs is cancelled once; one that drains in time is not', async () => {
  const stuck = stuckResponse();
  let stalls = 0;
  const live = new AbortController();
  await send({ res: stuck.res, signal: live.signal, stallMs: 20, onStall: () => stalls++ }, { a: 1 });
  assert.equal(stalls, 1);

  const slow = stuckResponse();
  const waiting = send({ res: slow.res, signal: live.signal, stallMs: 60_000, onStall: () => stalls++ }, { b: 2 });
  slow.flush();
  await waiting;
  assert.equal(stalls, 1, 'a drain before the deadline is no stall');

  const gone = stuckResponse();
  const leaving = new AbortController();
  const left = send({ res: gone.res, signal: leaving.signal, stallMs: 60_000, onStall: () => stalls++ }, { c: 3 });
  leaving.abort();
  await left;
  assert.equal(stalls, 1, 'a client that went away is no stall');
});
