import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BusyError, CancelledError, RequestQueue } from '../../../daemon/engine/request-queue.js';
import { Prng } from '../../../robot/common/prng.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('one runs, the rest wait in FIFO order, and one more than capacity is busy', async () => {
  const q = new RequestQueue('m', 2);
  const order: string[] = [];
  const first = await q.acquire();
  const b = q.acquire().then((release) => (order.push('b'), release));
  const c = q.acquire().then((release) => (order.push('c'), release));
  assert.deepEqual([q.active, q.waiting], [1, 2]);
  await assert.rejects(
    q.acquire(),
    (e: unknown) =>
      e instanceof BusyError &&
      e.message === 'model "m" is busy: 2 requests already waiting (queue_size 2); retry later',
  );
  assert.equal(q.waiting, 2, 'a refused request takes no place');
  first();
  first();
  (await b)();
  (await c)();
  assert.deepEqual(order, ['b', 'c']);
  assert.ok(q.idle);
});

test('queue_size 0: only the running request, no waiting', async () => {
  const q = new RequestQueue('m', 0);
  const release = await q.acquire();
  await assert.rejects(q.acquire(), BusyError);
  release();
  (await q.acquire())();
});

test('a waiter whose signal aborts leaves at once and frees its place', async () => {
  const q = new RequestQueue('m', 1);
  const running = await q.acquire();
  const ac = new AbortController();
  const gone = q.acquire(ac.signal);
  ac.abort();
  await assert.rejects(gone, CancelledError);
  assert.equal(q.waiting, 0);
  const next = q.acquire();
  running();
  (await next)();
  assert.ok(q.idle);
  await assert.rejects(q.acquire(AbortSignal.abort()), CancelledError);
});

test('force joins a full queue; whenIdle fires once everything is done; rejectAll empties it', async () => {
  const q = new RequestQueue('m', 0);
  const running = await q.acquire();
  const forced = q.acquire(undefined, { force: true });
  let idle = 0;
  q.whenIdle(() => idle++);
  running();
  await tick();
  assert.equal(idle, 0, 'the forced waiter runs next');
  (await forced)();
  assert.equal(idle, 1);
  const again = await q.acquire();
  const waiter = q.acquire(undefined, { force: true });
  q.rejectAll(new CancelledError('stopping'));
  await assert.rejects(waiter, /stopping/);
  again();
  assert.ok(q.idle);
});

test('seeded random arrivals, aborts and releases keep FIFO order and the capacity bound', async () => {
  for (let seed = 1; seed <= 20; seed++) {
    const r = new Prng(seed);
    const cap = r.int(5);
    const q = new RequestQueue('m', cap);
    const granted: number[] = [];
    const pending = new Map<number, { ac: AbortController; release?: () => void }>();
    let running: (() => void) | undefined;
    let id = 0;
    for (let step = 0; step < 60; step++) {
      const op = r.int(4);
      if (op <= 1) {
        const n = id++;
        const ac = new AbortController();
        const waiting = q.waiting;
        const full = running !== undefined && waiting >= cap;
        pending.set(n, { ac });
        const p = q.acquire(ac.signal).then(
          (release) => {
            granted.push(n);
            running = release;
          },
          (e: unknown) => {
            assert.ok(
              full ? e instanceof BusyError : e instanceof CancelledError,
              `seed ${seed}: request ${n}: ${(e as Error).message}`,
            );
            pending.delete(n);
          },
        );
        void p;
      } else if (op === 2 && running) {
        const release = running;
        running = undefined;
        release();
      } else {
        const keys = [...pending.keys()].filter((k) => !granted.includes(k));
        if (keys.length) pending.get(keys[r.int(keys.length)]!)!.ac.abort();
      }
      await tick();
      assert.ok(q.waiting <= cap, `seed ${seed}: ${q.waiting} waiting > capacity ${cap}`);
    }
    assert.deepEqual(
      granted,
      [...granted].sort((a, b) => a - b),
      `seed ${seed}: grants out of arrival order`,
    );
  }
});
