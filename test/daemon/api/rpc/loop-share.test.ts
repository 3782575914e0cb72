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

test('the per-turn budget shrinks in proportion while loop iterations run long and grows back when they are short', async () => {
  let clock = 0;
  let step = 100;
  // Each turn of the ticker is one loop iteration of `step` ms.
  const share = new LoopShare(64, 10, () => clock);
  const c = {};
  let ticking = true;
  const tick = () => {
    clock += step;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const budgets: number[] = [];
  const run = async (n: number) => {
    for (let i = 0; i < n; i++) {
      await Promise.all(Array.from({ length: 80 }, () => share.take(c, 1)));
      budgets.push(share.turnBudget);
    }
  };
  await run(3);
  // 100 ms iterations against a 20 ms target: 64 → 12 → 2 → 1 (never below one call).
  assert.ok(budgets.at(-1)! <= 2, `budgets under 100 ms iterations: ${budgets.join(',')}`);
  step = 1;
  budgets.length = 0;
  await run(12);
  ticking = false;
  assert.equal(budgets.at(-1), 64, `budgets under 1 ms iterations grow back to the cap: ${budgets.join(',')}`);
  for (let i = 1; i < budgets.length; i++) assert.ok(budgets[i]! >= budgets[i - 1]!, `grows monotonically: ${budgets}`);
});
