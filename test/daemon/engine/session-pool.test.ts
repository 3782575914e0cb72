import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type EngineSession, SessionPool } from '../../../daemon/engine/session-pool.js';
import { HashLogitsSource } from './fake-sources.js';

class FakeSession extends HashLogitsSource implements EngineSession {
  disposed = false;
  topK: number | null = null;
  setTopK(k: number | null): void {
    this.topK = k;
  }
  stateBytes(): number {
    return this.length * 8;
  }
  dispose(): void {
    this.disposed = true;
  }
}

function pool(max: number) {
  const made: FakeSession[] = [];
  const p = new SessionPool(async () => {
    const s = new FakeSession(50);
    made.push(s);
    return s;
  }, max);
  return { p, made };
}

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

/** Takes a session for `prompt`, prefills it plus `generated` decoded tokens, releases it. */
async function turn(p: SessionPool, prompt: number[], generated: number[] = [], key?: string) {
  const lease = await p.take(prompt, key);
  await lease.session.start(prompt);
  for (const t of generated) await lease.session.decode(t);
  lease.release();
  return lease;
}

test('a conversation keeps its session: the next turn extends the cache', async () => {
  const { p, made } = pool(4);
  const t1 = await turn(p, range(0, 20), [1, 2, 3]);
  assert.equal(t1.reason, 'new');
  const prompt2 = [...range(0, 20), 1, 2, 3, ...range(30, 5)];
  const t2 = await p.take(prompt2);
  assert.equal(t2.reason, 'reuse');
  assert.equal(t2.session, t1.session);
  const before = made[0]!.calls.prefilledTokens;
  const r = await t2.session.start(prompt2);
  assert.deepEqual([r!.reused, r!.prefilled], [23, 5]);
  assert.equal(made[0]!.calls.prefilledTokens - before, 5, 'only the new tokens reach the engine');
  t2.release();
  assert.equal(made.length, 1);
});

test('an unrelated conversation gets its own session while the pool has room; then the least recently used is replaced', async () => {
  const { p, made } = pool(2);
  const a = await turn(p, range(0, 30));
  const b = await turn(p, [0, 1, ...range(100, 30)]);
  assert.equal(b.reason, 'new', 'sharing 2 of 30 cached tokens does not take over A');
  assert.notEqual(b.session, a.session);
  const again = await turn(p, [...range(0, 30), 7]);
  assert.equal(again.session, a.session, 'A comes back to its cache');
  const c = await turn(p, range(200, 10));
  assert.equal(c.reason, 'evict');
  assert.equal(c.session, b.session, 'B was used least recently');
  assert.equal(made.length, 2);
});

test('a regenerate (the same prompt again) reuses the cache even after a long answer', async () => {
  const { p } = pool(2);
  const a = await turn(p, range(0, 10), range(40, 30));
  const b = await p.take(range(0, 10));
  assert.equal(b.reason, 'reuse');
  assert.equal(b.session, a.session);
  assert.equal((await b.session.start(range(0, 10)))!.reused, 9);
});

test('prompt_cache_key pins a conversation to its session', async () => {
  const { p } = pool(3);
  const a = await turn(p, range(0, 40), [], 'robot-a');
  await turn(p, range(500, 5));
  // An edit early in the conversation: the prefix rule alone would open a new session.
  const edited = [...range(0, 5), ...range(300, 40)];
  const back = await p.take(edited, 'robot-a');
  assert.equal(back.reason, 'key');
  assert.equal(back.session, a.session);
  back.release();
  const other = await p.take(edited, 'robot-b');
  assert.notEqual(other.session, a.session);
  other.release();
});

test('sessions in use are never handed out twice; stats and clear', async () => {
  const { p, made } = pool(2);
  await p.open();
  const x = await p.take(range(0, 4));
  const y = await p.take(range(0, 4));
  assert.notEqual(x.session, y.session);
  await x.session.start(range(0, 4));
  assert.deepEqual(p.stats(), { sessions: 2, inUse: 2, tokens: [4, 0], stateBytes: 32 });
  await assert.rejects(p.take(range(0, 4)), /every session is in use/);
  x.release();
  x.release();
  y.release();
  assert.equal(p.stats().inUse, 0);
  p.clear();
  assert.ok(made.every((s) => s.disposed));
  assert.equal(p.stats().sessions, 0);
});

test('a session cached at another routing width K is not reused for its prefix', async () => {
  const { p, made } = pool(4);
  const prompt = range(0, 20);
  const narrow = await p.take(prompt, undefined, null, 2);
  await narrow.session.start(prompt, undefined, null, undefined, 2);
  narrow.release();
  const full = await p.take([...prompt, 99], undefined, null, null);
  assert.equal(full.reason, 'new', 'K = 2 keys and values are not a prefix of a full-K prompt');
  full.release();
  const again = await p.take([...prompt, 98], undefined, null, 2);
  assert.equal(again.reason, 'reuse');
  assert.equal(again.engine, made[0]);
  const r = await again.session.start([...prompt, 98], undefined, null, undefined, 2);
  assert.equal(r!.reused, 20);
  again.release();
  // A pool that must reuse the K = 2 session for a full-K request switches its width and starts empty.
  const one = pool(1);
  const a = await one.p.take(prompt, undefined, null, 2);
  await a.session.start(prompt, undefined, null, undefined, 2);
  a.release();
  const b = await one.p.take(prompt, undefined, null, null);
  const rb = await b.session.start(prompt, undefined, null, undefined, null);
  assert.equal(rb!.reused, 0);
  assert.equal(one.made[0]!.topK, null);
  b.release();
});
