// The loop-turn budget shared by WebSocket clients: work past the budget waits for later turns,
// and waiting clients are served round robin. Turns are counted with setImmediate, not timed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LoopShare } from '../../../../daemon/api/rpc/loop-share.js';

/** Records in which turn (counted by a setImmediate ticker) each take resolves. */
async function turnsOf(share: LoopShare, takes: [object, number][]): Promise<number[]> {
  let turn = 0;
  let ticking = true;
  const tick = () => {
    turn++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const seen = await Promise.all(takes.map(([client, calls]) => share.take(client, calls).then(() => turn)));
  ticking = false;
  return seen;
}

test('work within the budget starts this turn, the rest in later turns, one budget per turn', async () => {
  const share = new LoopShare(4, 1e9);
  const c = {};
  const turns = await turnsOf(
    share,
    Array.from({ length: 10 }, () => [c, 1] as [object, number]),
  );
  assert.deepEqual(turns.slice(0, 4), [0, 0, 0, 0], 'the first four fit this turn');
  for (let t = 1; t <= 2; t++)
    assert.ok(turns.filter((x) => x === turns[4 * t]).length <= 4, `at most four calls in turn ${turns[4 * t]}`);
  assert.ok(turns[9]! > turns[4]!, 'the last call waited for a later turn than the fifth');
  assert.equal(share.pending, 0);
});

test('a slice larger than the budget still starts, alone in its turn', async () => {
  const share = new LoopShare(4, 1e9);
  const c = {};
  const turns = await turnsOf(share, [
    [c, 4],
    [c, 64],
    [c, 1],
  ]);
  assert.equal(turns[0], 0);
  assert.ok(turns[1]! > 0 && turns[2]! > turns[1]!, `turns ${turns.join(',')}`);
});

test('waiting clients are served round robin: a batch sender does not hold back a single call', async () => {
  const share = new LoopShare(64, 1e9);
  const batcher = {};
  const single = {};
  const turns = await turnsOf(share, [
    ...Array.from({ length: 6 }, () => [batcher, 64] as [object, number]),
    [single, 1],
  ]);
  // The batcher's first slice fills this turn; the single call is let through right after its second.
  assert.equal(turns[0], 0);
  assert.ok(turns[6]! <= turns[2]!, `the single call (turn ${turns[6]}) before the batch's third slice (${turns[2]})`);
});
