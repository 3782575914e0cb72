// A running record's image cap through the daemon: on a simulated workcell with two cameras and
// policy.records.max_bytes at its 1 MiB minimum, an episode of many observations stops saving
// images past half of it, says so once (record_limit, in seq order after the observation), marks
// the later observations images_saved: false, and goes on to its end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../../helpers/wait.js';
import { episodeEvents, episodeFinished, startRig, waitReady } from '../robots/harness.js';

const MAX_BYTES = 1 << 20;

test('a record past half of policy.records.max_bytes keeps its events and stops saving images', async (t) => {
  const r = (await startRig(t, 'embedded', {
    robots: [{ id: 'arm1', robot: 'yam' }],
    simExtra: { arm1: ['--scene', 'yam-pick-place', '--seed', '5'] },
    config: { policy: { records: { max_bytes: MAX_BYTES } } },
  }))!;
  await waitReady(r, 'arm1');
  const cameras = r.d.robots.robot('arm1')!.cameras;
  await waitFor(() => (['front', 'wrist'].every((c) => cameras.frame(c, 'color')) ? true : undefined), 'camera frames');
  const decisions = 60;
  const s = await r.rpc.call('policy.start', {
    robot: 'arm1',
    instruction: 'look around',
    provider: { kind: 'scripted', lines: Array(decisions).fill(JSON.stringify({ name: 'get_state', arguments: {} })) },
    budget: { decisions },
  });
  assert.equal(s.error, undefined, JSON.stringify(s.error));
  const id = s.result.id as string;
  const end = await episodeFinished(r, id, 120_000);
  assert.equal(end.state, 'budget_exhausted', end.reason);
  const events = episodeEvents(r, id);
  const limits = events.filter((e) => e.type === 'record_limit');
  assert.equal(limits.length, 1, 'said once');
  assert.match(
    limits[0].message,
    /images are no longer saved: .* half of policy\.records\.max_bytes \(1048576\); events are still written/,
  );
  const at = events.indexOf(limits[0]);
  assert.equal(events[at - 1].type, 'observation', 'right after the observation whose images were not saved');
  assert.equal(events[at - 1].seq + 1, limits[0].seq);

  const dir = join(r.d.dataDir, 'episodes', id);
  const lines = readFileSync(join(dir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const observations = lines.filter((e) => e.type === 'observation');
  assert.equal(observations.length, decisions, 'every observation recorded');
  const unsaved = observations.filter((e) => e.images_saved === false);
  assert.ok(unsaved.length > 0 && unsaved.length < decisions, `${unsaved.length} of ${decisions} without images`);
  assert.ok(
    unsaved.every((e) => e.decision >= limits[0].decision),
    'none before the note',
  );
  const imageBytes = readdirSync(join(dir, 'images')).reduce((n, f) => n + statSync(join(dir, 'images', f)).size, 0);
  assert.ok(imageBytes <= MAX_BYTES / 2, `${imageBytes} bytes of images under ${MAX_BYTES / 2}`);
});
