// The request queue's fairness between clients: the per-client limit (queue_per_client), the
// round-robin order of turns, aborts freeing a client's place, and forced turns keeping strict order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BusyError, CancelledError, RequestQueue } from '../../../daemon/engine/request-queue.js';
import { Prng } from '../../../robot/common/prng.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A queue whose granted turns record their name in `order` and are released by drain(), in grant order. */
function harness(capacity: number, perClient: number) {
  const q = new RequestQueue('m', capacity, perClient);
  const order: string[] = [];
  let current: (() => void) | undefined;
  const grant = (name: string) => (release: () => void) => {
    order.push(name);
    current = release;
  };
  /** Ends the turn granted last. */
  const next = async () => {
    await tick();
    const release = current;
    current = undefined;
    release?.();
    await tick();
  };
  return {
    q,
    order,
    next,
    add: (name: string, client: string, signal?: AbortSignal) => q.acquire(signal, { client }).then(grant(name)),
    force: (name: string, signal?: AbortSignal) => q.acquire(signal, { force: true }).then(grant(name)),
    /** Ends each turn as it is granted until the queue is idle. */
    drain: async () => {
      await tick();
      while (current) await next();
      assert.ok(q.idle);
    },
  };
}

test('one client alone may fill the queue; another client under its share takes the place of its newest request', async () => {
  const { q, order, add, drain } = harness(3, 1);
  const refusals: BusyError[] = [];
  void add('a0', 'a');
  for (const name of ['a1', 'a2', 'a3']) add(name, 'a').catch((e: BusyError) => refusals.push(e));
  assert.equal(q.waiting, 3, 'past its share while there is room');
  void add('b1', 'b');
  await tick();
  assert.deepEqual(
    refusals.map((e) => [e.limit, e.message]),
    [
      [
        'queue_per_client',
        'model "m" is busy for this client: it already has 3 requests waiting (queue_per_client 1); retry later',
      ],
    ],
    "a's newest (a3) gave its place to b",
  );
  // Full again: a, over its share, is refused at once; so is c once nobody is over it.
  await assert.rejects(
    q.acquire(undefined, { client: 'a' }),
    (e: unknown) =>
      e instanceof BusyError && e.limit === 'queue_per_client' && [e.waiting, e.capacity].join() === '2,1',
  );
  void add('c1', 'c');
  await tick();
  assert.equal(refusals.length, 2, 'a2 gave its place to c');
  await assert.rejects(q.acquire(undefined, { client: 'd' }), /3 requests already waiting \(queue_size 3\)/);
  await drain();
  assert.deepEqual(order, ['a0', 'b1', 'c1', 'a1'], 'a, whose turn just ended, goes after the others');
});

test('the whole queue full with every client within its share answers with queue_size', async () => {
  const { q, add, drain } = harness(2, 1);
  void add('a0', 'a');
  void add('a1', 'a');
  void add('b1', 'b');
  await assert.rejects(q.acquire(undefined, { client: 'c' }), (e: unknown) => (e as BusyError).limit === 'queue_size');
  await assert.rejects(q.acquire(undefined, { client: 'a' }), /queue_per_client 1/);
  await drain();
});

test('turns go round-robin among three clients, FIFO within each', async () => {
  const { order, add, drain } = harness(10, 4);
  void add('x', 'x');
  for (const name of ['a1', 'a2', 'a3', 'b1', 'a4', 'c1', 'b2']) void add(name, name[0]!);
  await drain();
  assert.deepEqual(order, ['x', 'a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
});

test('a client that queued later is not starved by one with many waiters, after it returns too', async () => {
  const h = harness(10, 5);
  void h.add('a0', 'a');
  for (const name of ['a1', 'a2', 'a3', 'a4']) void h.add(name, 'a');
  void h.add('b1', 'b');
  await h.next();
  assert.deepEqual(h.order, ['a0', 'b1']);
  // b1 runs and b's lane is empty: b's next request queues behind a's lane, then they alternate.
  void h.add('b2', 'b');
  await h.drain();
  assert.deepEqual(h.order, ['a0', 'b1', 'a1', 'b2', 'a2', 'a3', 'a4']);
});

test("an aborted waiter frees its client's place, and the round-robin skips it", async () => {
  const { q, order, add, drain } = harness(2, 1);
  void add('b0', 'b');
  const ac = new AbortController();
  const a1 = add('a1', 'a', ac.signal);
  void add('a2', 'a');
  await assert.rejects(q.acquire(undefined, { client: 'a' }), /queue_size 2/, 'a alone fills the queue');
  ac.abort();
  await assert.rejects(a1, CancelledError);
  assert.equal(q.waiting, 1);
  const a3 = add('a3', 'a');
  assert.equal(q.waiting, 2);
  void add('c1', 'c');
  await assert.rejects(a3, /queue_per_client 1/, 'a3, the newest of a (over its share), gave its place to c1');
  await drain();
  assert.deepEqual(order, ['b0', 'a2', 'c1']);
});

test('a forced turn waits behind everything queued before it and ahead of what comes after', async () => {
  const { q, order, add, force, drain } = harness(1, 1);
  void add('a0', 'a');
  void add('a1', 'a');
  void force('unload');
  void q.acquire(undefined, { force: true, client: 'a' }).then((release) => (order.push('load'), release()));
  assert.equal(q.waiting, 3, 'forced turns skip queue_size and queue_per_client');
  await assert.rejects(q.acquire(undefined, { client: 'b' }), /queue_size 1/);
  await drain();
  assert.deepEqual(order, ['a0', 'a1', 'unload', 'load']);
});

test('an aborted forced turn joins the rounds it separated', async () => {
  const { order, add, force, drain } = harness(10, 5);
  void add('x', 'x');
  void add('a1', 'a');
  void add('a2', 'a');
  const ac = new AbortController();
  const forced = force('unload', ac.signal);
  void add('b1', 'b');
  ac.abort();
  await assert.rejects(forced, CancelledError);
  await drain();
  assert.deepEqual(order, ['x', 'a1', 'b1', 'a2']);
});

test('seeded random clients: room while under queue_size, the newest of the furthest over its share displaced, FIFO per client, round-robin', async () => {
  for (let seed = 1; seed <= 20; seed++) {
    const r = new Prng(seed);
    const [cap, per] = [1 + r.int(6), 1 + r.int(3)];
    const q = new RequestQueue('m', cap, per);
    const clients = ['a', 'b', 'c'];
    const waiting = new Map<
      number,
      { client: string; ac: AbortController; ahead: number; others: Map<string, number> }
    >();
    const granted: { n: number; client: string }[] = [];
    let running: (() => void) | undefined;
    let id = 0;
    /** The requests an arrival may displace (one of them must go, before the next step). */
    let displaceable = new Set<number>();
    const where = (msg: string) => `seed ${seed} (queue_size ${cap}, queue_per_client ${per}): ${msg}`;
    for (let step = 0; step < 80; step++) {
      const op = r.int(4);
      if (op <= 1) {
        const n = id++;
        const client = clients[r.int(clients.length)]!;
        const ac = new AbortController();
        const count = (c: string) => [...waiting.values()].filter((w) => w.client === c).length;
        const own = count(client);
        const most = Math.max(0, ...clients.map(count));
        // Full: a client under its share displaces the newest request of a client with the most, if over its share.
        const full = running !== undefined && waiting.size >= cap;
        const busy = full && (own >= per || most <= per);
        displaceable = new Set(
          full && !busy
            ? clients
                .filter((c) => count(c) === most)
                .map((c) => Math.max(...[...waiting].filter(([, w]) => w.client === c).map(([k]) => k)))
            : [],
        );
        if (running !== undefined && !busy) waiting.set(n, { client, ac, ahead: own, others: new Map() });
        void q.acquire(ac.signal, { client }).then(
          (release) => {
            const w = waiting.get(n);
            for (const [other, k] of w?.others ?? [])
              assert.ok(k <= w!.ahead + 1, where(`${other} got ${k} turns while ${client}'s request ${n} waited`));
            for (const v of waiting.values())
              if (v.client !== client) v.others.set(client, (v.others.get(client) ?? 0) + 1);
            waiting.delete(n);
            granted.push({ n, client });
            running = release;
          },
          (e: unknown) => {
            const displaced = e instanceof BusyError && displaceable.has(n);
            assert.ok(
              busy || displaced ? e instanceof BusyError : e instanceof CancelledError,
              where(`${n}: ${(e as Error).message}`),
            );
            if (displaced) displaceable.clear();
            waiting.delete(n);
          },
        );
        if (running === undefined) running = () => undefined; // granted at once: set for real on grant
      } else if (op === 2 && running) {
        const release = running;
        running = undefined;
        release();
      } else {
        const keys = [...waiting.keys()];
        if (keys.length) waiting.get(keys[r.int(keys.length)]!)!.ac.abort();
      }
      await tick();
      assert.equal(
        displaceable.size,
        0,
        where(`step ${step}: a request was admitted into a full queue without displacing one`),
      );
      assert.equal(q.waiting, waiting.size, where('the queue and the model disagree on who waits'));
      assert.ok(q.waiting <= cap, where(`${q.waiting} waiting`));
    }
    for (const c of clients) {
      const mine = granted.filter((g) => g.client === c).map((g) => g.n);
      assert.deepEqual(
        mine,
        [...mine].sort((a, b) => a - b),
        where(`${c}'s turns out of its arrival order`),
      );
    }
  }
});
