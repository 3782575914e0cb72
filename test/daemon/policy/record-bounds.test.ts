// Bounds on what a record costs: a running record stops saving images past half of
// policy.records.max_bytes (events go on), marking an interrupted record reads the end of its
// events.jsonl only, replay indexes outcomes once, and `policy report` streams the events.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, closeSync, ftruncateSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { markInterrupted } from '../../../daemon/policy/episode/interrupted.js';
import { EpisodeRecorder, imageCapOf, readEpisodeMeta, recordEvents } from '../../../daemon/policy/episode/records.js';
import { episodeReport, streamedReport } from '../../../daemon/policy/episode/report.js';
import type { EpisodeEvent } from '../../../daemon/policy/episode/types.js';
import { recordedCalls } from '../../../daemon/policy/replay.js';
import { tempDir } from '../../helpers/temp.js';

const ID = 'ep-20260101-120000-abcdef';
const image = (decision: number, camera: string) => ({
  id: `d${decision}-${camera}.jpg`,
  camera,
  mime: 'image/jpeg',
  width: 8,
  height: 6,
  bytes: new Uint8Array(3000),
});

test('past its cap a record saves no more images, says so once (key and value), and keeps its events', (t) => {
  const dir = tempDir('bs-record-cap-');
  t.after(() => dir.remove());
  const cap = imageCapOf(40_000);
  assert.deepEqual(cap, { bytes: 20_000, rule: 'half of policy.records.max_bytes (40000)' });
  const rec = new EpisodeRecorder(dir.path, ID, { robot: 'arm1' }, cap);
  const notes = [];
  for (let d = 1; d <= 5; d++) {
    const images = ['front', 'left', 'right'].map((c) => image(d, c));
    const e = { episode: ID, seq: d, t: d, type: 'observation' as const, decision: d, images: images.map((i) => i.id) };
    const note = rec.event(e, images);
    if (note) notes.push(note);
  }
  // 9000 bytes of images an observation: the first two fit under 20000 with the lines, the third not.
  assert.deepEqual(readdirSync(join(rec.dir, 'images')).sort(), [
    'd1-front.jpg',
    'd1-left.jpg',
    'd1-right.jpg',
    'd2-front.jpg',
    'd2-left.jpg',
    'd2-right.jpg',
  ]);
  assert.equal(notes.length, 1);
  assert.equal(notes[0]!.decision, 3);
  assert.equal(notes[0]!.max_bytes, 20_000);
  assert.match(notes[0]!.message, /images are no longer saved: .* half of policy\.records\.max_bytes \(40000\)/);
  const lines = readFileSync(join(rec.dir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    lines.map((l) => [l.decision, l.images_saved]),
    [
      [1, undefined],
      [2, undefined],
      [3, false],
      [4, false],
      [5, false],
    ],
  );
  // Without a cap (the default) every image is saved.
  const free = new EpisodeRecorder(dir.path, 'ep-20260101-120001-abcdef', {});
  for (let d = 1; d <= 5; d++) free.event({ episode: ID, seq: d, t: d, type: 'observation' }, [image(d, 'front')]);
  assert.equal(readdirSync(join(free.dir, 'images')).length, 5);
});

test('an interrupted record of 3 GiB is marked with its last used, read from the end', async (t) => {
  const dir = tempDir('bs-interrupted-big-');
  t.after(() => dir.remove());
  const rec = new EpisodeRecorder(dir.path, ID, { robot: 'arm1' });
  const file = join(rec.dir, 'events.jsonl');
  const fd = openSync(file, 'w');
  ftruncateSync(fd, 3 * 1024 ** 3); // sparse: over readFile's 2 GiB, no disk
  closeSync(fd);
  const used = { decisions: 9, wall_s: 80, prompt_tokens: 5, completion_tokens: 2 };
  const ev = (seq: number, type: string, extra = {}) =>
    `${JSON.stringify({ episode: ID, seq, t: seq, type, ...extra })}\n`;
  appendFileSync(file, `\n${ev(10, 'decision', { decision: 9, used })}${ev(11, 'request')}{"cut`);
  const r = await markInterrupted(dir.path, new Set(), Date.UTC(2026, 0, 2));
  assert.deepEqual(r, { marked: [ID], problems: [] });
  assert.deepEqual(readEpisodeMeta(dir.path, ID).used, used);
});

test('replay pairs each request with its outcome by one index: reads grow with the events, not their square', () => {
  const events: EpisodeEvent[] = [];
  let seq = 0;
  const push = (type: EpisodeEvent['type'], f: Record<string, unknown>) =>
    events.push({ episode: ID, seq: seq++, t: seq, type, ...f });
  for (let d = 1; d <= 2000; d++) {
    push('request', { decision: d, tool: 'move_to', arguments: { d } });
    push('outcome', { decision: d, tool: 'move_to', status: d % 7 ? 'ok' : 'failed', reason: d % 7 ? null : 'x' });
    push('outcome', { decision: d, tool: 'move_to', status: 'later' }); // the first outcome stands
  }
  push('request', { decision: 2001, tool: 'done', arguments: {} });
  push('check', { decision: 2001, complete: true, reason: 'ok' });
  push('request', { decision: 2002, tool: 'move_to', error: 'bad' }); // not executed: not a call
  let reads = 0;
  const counted = new Proxy(events, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
      return Reflect.get(target, key, receiver);
    },
  });
  const calls = recordedCalls(counted);
  assert.ok(reads < 10 * events.length, `${reads} element reads for ${events.length} events`);
  assert.equal(calls.length, 2001);
  assert.deepEqual(calls[6]!.recorded, { status: 'failed', reason: 'x' });
  assert.deepEqual(calls[0]!.recorded, { status: 'ok', reason: null });
  assert.deepEqual(calls.at(-1), {
    decision: 2001,
    tool: 'done',
    arguments: {},
    recorded: { status: 'confirmed', reason: null },
  });
});

test('policy report streams a record: the same report as from the events in memory', async (t) => {
  const dir = tempDir('bs-report-stream-');
  t.after(() => dir.remove());
  const rec = new EpisodeRecorder(dir.path, ID, { robot: 'arm1' });
  const used = { decisions: 2, wall_s: 3, prompt_tokens: 10, completion_tokens: 4 };
  const events: EpisodeEvent[] = [
    { episode: ID, seq: 0, t: 0, type: 'started', robot: 'arm1', instruction: 'tidy', provider: 'scripted' },
    { episode: ID, seq: 1, t: 1, type: 'request', decision: 1, tool: null, error: 'no call' },
    { episode: ID, seq: 2, t: 2, type: 'outcome', decision: 2, tool: 'move_to', status: 'failed', message: 'm' },
    { episode: ID, seq: 3, t: 3, type: 'finished', state: 'failed', reason: 'r', used },
  ];
  for (const e of events) rec.event(e);
  const streamed = await streamedReport(recordEvents(dir.path, ID), readEpisodeMeta(dir.path, ID));
  assert.deepEqual(streamed, episodeReport(events, readEpisodeMeta(dir.path, ID)));
  assert.deepEqual(
    streamed.failures.map((f) => f.kind),
    ['malformed', 'failed', 'episode_failed'],
  );
  assert.throws(() => recordEvents(dir.path, 'ep-20260101-120000-000000'), /no record at/);
});
