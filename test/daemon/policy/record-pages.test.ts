// A record's events read in pages (policy.record, policy.get): after a seq or the last ones, at
// most `limit` and PAGE_BYTES each, found by bisection and read from the end rather than whole.
// Sparse files of 3 GiB stand for huge records: readFile refuses them (over 2 GiB), so a reader
// that still loads a whole file fails these tests instead of only taking long.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, closeSync, ftruncateSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { registerPolicyMethods } from '../../../daemon/api/rpc/policy.js';
import { registerPolicyRecordMethods } from '../../../daemon/api/rpc/policy-records.js';
import { handleMessage } from '../../../daemon/api/rpc/protocol.js';
import { RpcRegistry } from '../../../daemon/api/rpc/registry.js';
import { offsetAfter } from '../../../daemon/policy/episode/event-lines.js';
import { PAGE_BYTES } from '../../../daemon/policy/episode/event-page.js';
import type { PolicyService } from '../../../daemon/policy/episode/service.js';
import { parsed, testRpcContext } from '../../helpers/rpc.js';
import { tempDir } from '../../helpers/temp.js';

const ID = 'ep-20260101-120000-abcdef';
const line = (seq: number, extra: Record<string, unknown> = {}) =>
  `${JSON.stringify({ episode: ID, seq, t: seq / 10, type: 'progress', ...extra })}\n`;

function setup(t: { after(fn: () => void): void }) {
  const dir = tempDir('bs-record-pages-');
  t.after(() => dir.remove());
  const record = join(dir.path, 'episodes', ID);
  mkdirSync(record, { recursive: true });
  writeFileSync(join(record, 'episode.json'), JSON.stringify({ id: ID, robot: 'arm1' }));
  const rpc = new RpcRegistry();
  registerPolicyRecordMethods(rpc, dir.path);
  const policy = {
    episode: () => ({ state: 'deciding' }),
    summary: (id: string) => ({ id, state: 'deciding' }),
    recordDir: () => record,
  } as unknown as PolicyService;
  registerPolicyMethods(rpc, policy);
  let n = 1;
  const call = async (method: string, params: unknown) => {
    const msg = JSON.stringify({ jsonrpc: '2.0', id: n++, method, params });
    const r = parsed(await handleMessage(msg, rpc, testRpcContext(), { log: pino({ level: 'silent' }) })) as any;
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    return r.result;
  };
  return { events: join(record, 'events.jsonl'), call };
}

test('policy.record and policy.get page through 2500 events: 1000 by default, after_seq to the end', async (t) => {
  const { events, call } = setup(t);
  writeFileSync(events, Array.from({ length: 2500 }, (_, i) => line(i)).join(''));
  for (const [method, extra] of [
    ['policy.record', {}],
    ['policy.get', { events: true }],
  ] as const) {
    // The old call shape: the first page, and where the next begins.
    const first = await call(method, { id: ID, ...extra });
    assert.equal(first.events.length, 1000, method);
    assert.deepEqual([first.events[0].seq, first.events.at(-1).seq, first.next_after_seq], [0, 999, 999]);
    const seqs: number[] = [];
    let after = -1;
    for (let pages = 0; pages < 10; pages++) {
      const p = await call(method, { id: ID, ...extra, after_seq: after, limit: 700 });
      seqs.push(...p.events.map((e: any) => e.seq));
      if (p.next_after_seq === undefined) break;
      after = p.next_after_seq;
    }
    assert.deepEqual(
      seqs,
      Array.from({ length: 2500 }, (_, i) => i),
      method,
    );
    const last = await call(method, { id: ID, ...extra, last: true, limit: 3 });
    assert.deepEqual(
      last.events.map((e: any) => e.seq),
      [2497, 2498, 2499],
    );
    assert.equal(last.next_after_seq, undefined);
  }
  // Without events policy.get reads nothing of them.
  assert.equal((await call('policy.get', { id: ID })).events, undefined);
});

test('a page holds at most PAGE_BYTES of lines; a line alone over it comes as a stub so paging moves on', async (t) => {
  const { events, call } = setup(t);
  const big = 'x'.repeat(3 * 1024 * 1024);
  const huge = 'y'.repeat(PAGE_BYTES + 10);
  writeFileSync(events, [0, 1, 2, 3].map((s) => line(s, { raw: big })).join('') + line(4, { raw: huge }) + line(5));
  const a = await call('policy.record', { id: ID });
  assert.deepEqual([a.events.map((e: any) => e.seq), a.next_after_seq], [[0, 1], 1]);
  const b = await call('policy.record', { id: ID, after_seq: 1 });
  assert.deepEqual([b.events.map((e: any) => e.seq), b.next_after_seq], [[2, 3], 3]);
  const c = await call('policy.record', { id: ID, after_seq: 3 });
  assert.deepEqual(c.events[0], {
    episode: ID,
    seq: 4,
    t: 0.4,
    type: 'progress',
    omitted_bytes: line(4, { raw: huge }).length,
    page_bytes: PAGE_BYTES,
  });
  assert.deepEqual([c.events.slice(1), c.next_after_seq], [[JSON.parse(line(5))], undefined]);
  // From the end: the huge line fills the page; ending the file, it comes as a stub from its head
  // (and what fits after it).
  const tail = await call('policy.record', { id: ID, last: true, limit: 2 });
  assert.deepEqual([tail.events.map((e: any) => e.seq), tail.next_after_seq], [[5], undefined]);
  writeFileSync(events, line(0) + line(1, { raw: huge }));
  const end = await call('policy.record', { id: ID, last: true });
  assert.deepEqual(
    end.events.map((e: any) => [e.seq, e.type, e.omitted_bytes]),
    [
      [0, 'progress', undefined],
      [1, 'progress', line(1, { raw: huge }).length],
    ],
  );
});

test('damaged lines are counted by the page whose stretch holds them, once', async (t) => {
  const { events, call } = setup(t);
  writeFileSync(events, `${line(0)}{"cut\n${line(1)}${line(2)}{"cut again\n${line(3)}`);
  const a = await call('policy.record', { id: ID, limit: 2 });
  assert.deepEqual([a.events.map((e: any) => e.seq), a.damaged_lines, a.next_after_seq], [[0, 1], 1, 1]);
  const b = await call('policy.record', { id: ID, after_seq: 1, limit: 2 });
  assert.deepEqual([b.events.map((e: any) => e.seq), b.damaged_lines, b.next_after_seq], [[2, 3], 1, undefined]);
});

test('last: the end of a 3 GiB events.jsonl without reading the rest', async (t) => {
  const { events, call } = setup(t);
  const fd = openSync(events, 'w');
  ftruncateSync(fd, 3 * 1024 ** 3); // sparse: a hole of zero bytes, no disk
  closeSync(fd);
  appendFileSync(events, `\n${line(7_000_000)}${line(7_000_001)}`);
  const r = await call('policy.record', { id: ID, last: true, limit: 5 });
  assert.deepEqual(
    r.events.map((e: any) => e.seq),
    [7_000_000, 7_000_001],
  );
  // The hole reads as one line of zeros: given up after twice PAGE_BYTES, never read through.
  assert.equal(r.damaged_lines, undefined);
});

test('after_seq starts by bisection: within one 64 KiB read of the line it names', async (t) => {
  const { events } = setup(t);
  const lines = Array.from({ length: 40_000 }, (_, i) => line(i, { pad: 'p'.repeat(i % 97) }));
  writeFileSync(events, lines.join(''));
  const starts: number[] = [];
  let at = 0;
  for (const l of lines) {
    starts.push(at);
    at += Buffer.byteLength(l);
  }
  for (const seq of [0, 1, 17, 20_000, 39_998, 39_999, 50_000]) {
    const o = await offsetAfter(events, seq);
    const target = starts[Math.min(seq, lines.length - 1)]!;
    assert.ok(starts.includes(o), `seq ${seq}: ${o} is a line start`);
    assert.ok(o <= target && target - o <= 64 * 1024, `seq ${seq}: offset ${o}, line at ${target}`);
  }
  assert.equal(await offsetAfter(events, -1), 0);
});
