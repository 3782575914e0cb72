// Episode records across daemon runs: a record a killed daemon left without an end is marked
// `interrupted` when the policy service starts (never a running episode's), `policy report` shows
// it, and retention walks the records without holding the event loop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChatService } from '../../../daemon/engine/chat-service.js';
import type { Logger } from '../../../daemon/log.js';
import { loadConfig } from '../../../daemon/config/load.js';
import { INTERRUPTED_REASON, markInterrupted } from '../../../daemon/policy/episode/interrupted.js';
import {
  EpisodeRecorder,
  episodesDir,
  newEpisodeId,
  readEpisodeMeta,
  readEvents,
} from '../../../daemon/policy/episode/records.js';
import { episodeReport, reportText } from '../../../daemon/policy/episode/report.js';
import { applyRetention } from '../../../daemon/policy/episode/retention.js';
import { PolicyService } from '../../../daemon/policy/episode/service.js';
import type { RobotLink } from '../../../daemon/robots/link-service.js';
import { tempDir } from '../../helpers/temp.js';

const START = Date.UTC(2026, 0, 1);
const id = (s: number) => newEpisodeId(new Date(START + s * 1000), 'abcdef');
const used = { decisions: 1, wall_s: 2, prompt_tokens: 10, completion_tokens: 3 };

/** A record as a daemon killed after its first decision leaves it: episode.json without an end. */
function cutRecord(dataDir: string, ep: string, lastWriteMs: number): void {
  const rec = new EpisodeRecorder(dataDir, ep, { robot: 'arm1', instruction: 'tidy up' });
  rec.event({ episode: ep, seq: 0, t: 0, type: 'started', robot: 'arm1', instruction: 'tidy up' });
  rec.event({ episode: ep, seq: 1, t: 2.5, type: 'decision', decision: 1, used });
  utimesSync(join(rec.dir, 'episode.json'), new Date(START), new Date(START));
  utimesSync(join(rec.dir, 'events.jsonl'), new Date(lastWriteMs), new Date(lastWriteMs));
}

test('a record left without an end is marked interrupted when the policy service starts; policy report shows it', async (t) => {
  const dir = tempDir('bs-interrupted-');
  t.after(() => dir.remove());
  const cut = id(1);
  const ended = id(2);
  cutRecord(dir.path, cut, START + 9000);
  const done = new EpisodeRecorder(dir.path, ended, { robot: 'arm1' });
  done.event({ episode: ended, seq: 0, t: 1, type: 'finished', state: 'done', reason: 'ok', used });
  const endedJson = readFileSync(join(done.dir, 'episode.json'), 'utf8');
  const logs: string[] = [];
  const log = { info: (_: unknown, m: string) => logs.push(m), warn: (_: unknown, m: string) => logs.push(m) };
  const policy = new PolicyService({
    config: loadConfig({ env: {} }).policy,
    dataDir: dir.path,
    link: { commandObserver: null } as unknown as RobotLink,
    chat: {} as ChatService,
    log: log as unknown as Logger,
  });
  const before = Date.now();
  await policy.start();
  t.after(() => policy.stop());

  const meta = readEpisodeMeta(dir.path, cut);
  assert.deepEqual(
    { state: meta.state, reason: meta.reason, used: meta.used, ended_at: meta.ended_at },
    { state: 'interrupted', reason: INTERRUPTED_REASON, used, ended_at: new Date(START + 9000).toISOString() },
  );
  assert.ok(Date.parse(meta.marked_at as string) >= before - 1000);
  assert.equal(meta.instruction, 'tidy up', 'the start is kept');
  assert.deepEqual(readdirSync(join(episodesDir(dir.path), cut)).sort(), ['episode.json', 'events.jsonl', 'images']);
  assert.equal(readFileSync(join(done.dir, 'episode.json'), 'utf8'), endedJson, 'an ended record is left as it was');
  assert.ok(
    logs.some((m) => /interrupted/.test(m)),
    logs.join('\n'),
  );

  const report = episodeReport(await readEvents(dir.path, cut), meta);
  assert.equal(report.state, 'interrupted');
  assert.deepEqual(report.failures.at(-1), {
    decision: 1,
    tool: null,
    kind: 'episode_interrupted',
    message: INTERRUPTED_REASON,
  });
  assert.match(reportText(report), new RegExp(`^episode ${cut}: interrupted \\(${INTERRUPTED_REASON}\\)`));
});

test('marking leaves a running episode’s record and a folder without episode.json alone; marked_at is the given clock', async (t) => {
  const dir = tempDir('bs-interrupted-');
  t.after(() => dir.remove());
  const [cut, running, bare] = [id(1), id(2), id(3)];
  cutRecord(dir.path, cut, START + 5000);
  cutRecord(dir.path, running, START + 6000);
  mkdirSync(join(episodesDir(dir.path), bare));
  const runningJson = readFileSync(join(episodesDir(dir.path), running, 'episode.json'), 'utf8');

  const r = await markInterrupted(dir.path, new Set([running]), START + 86_400_000);
  assert.deepEqual(r, { marked: [cut], problems: [] });
  assert.equal(readEpisodeMeta(dir.path, cut).marked_at, new Date(START + 86_400_000).toISOString());
  assert.equal(readFileSync(join(episodesDir(dir.path), running, 'episode.json'), 'utf8'), runningJson);
  assert.deepEqual(readdirSync(join(episodesDir(dir.path), bare)), []);
  // Marked once: a second pass finds nothing left to mark.
  assert.deepEqual(await markInterrupted(dir.path, new Set([running]), START), { marked: [], problems: [] });
});

test('retention walks without holding the event loop: age by the given clock, then size; a running record is kept', async (t) => {
  const dir = tempDir('bs-retention-');
  t.after(() => dir.remove());
  const now = START + 60 * 86_400_000;
  const ids = Array.from({ length: 40 }, (_, i) => id(i));
  for (const [i, ep] of ids.entries()) {
    const d = join(episodesDir(dir.path), ep);
    mkdirSync(join(d, 'images'), { recursive: true });
    writeFileSync(join(d, 'events.jsonl'), 'x'.repeat(100));
    writeFileSync(join(d, 'images', 'd1-front.jpg'), 'y'.repeat(900));
    // The first ten last changed 40 days ago, the others a day ago.
    const at = new Date(now - (i < 10 ? 40 : 1) * 86_400_000);
    utimesSync(d, at, at);
  }
  const running = ids[3]!;
  let turned = false;
  setImmediate(() => {
    turned = true;
  });
  // 1000 bytes a record, the running one's not counted: 25 fit, so after the nine old ones the
  // five oldest of the rest go too.
  const removed = await applyRetention(
    dir.path,
    { maxEpisodes: 1000, maxBytes: 25_000, maxAgeDays: 30 },
    new Set([running]),
    now,
  );
  assert.ok(turned, 'the event loop turned while the records were walked');
  const expected = ids.slice(0, 15).filter((ep) => ep !== running);
  assert.deepEqual(removed, expected);
  assert.deepEqual(readdirSync(episodesDir(dir.path)).sort(), [running, ...ids.slice(15)]);
});

test('a record is the first to create data_dir: every folder it makes is 0700', (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const dataDir = join(dir.path, 'state');
  new EpisodeRecorder(dataDir, 'ep-20260101-000000-abcdef', { task: 't' });
  for (const p of [
    dataDir,
    join(dataDir, 'episodes'),
    join(dataDir, 'episodes', 'ep-20260101-000000-abcdef', 'images'),
  ])
    assert.equal(statSync(p).mode & 0o777, 0o700, p);
});
