// `brainstem policy eval` and `policy replay` end to end: the commands run their own daemon and a
// seeded simulator per run of yam-pick-place; a script that places the red block succeeds on
// every seed (its start noise is within the grasp's tolerance), one that gives up never does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../../helpers/daemon.js';
import { tempDir } from '../../helpers/temp.js';

const call = (name: string, args: object) => JSON.stringify({ name, arguments: args });
const moveTo = (x: number, y: number, z: number) =>
  call('move_to', { target: { pose_xyzquat: [x, y, z, 0, 1, 0, 0] } });

// Where the scene file puts the red block and the bowl (the block's noise is ±1 cm, ±0.3 rad).
const PLACE = [
  moveTo(0.35, 0.1, 0.15),
  moveTo(0.35, 0.1, 0.035),
  call('set_gripper', { gripper: 0 }),
  moveTo(0.35, 0.1, 0.15),
  moveTo(0.3, -0.17, 0.15),
  call('set_gripper', { gripper: 1 }),
  call('done', { summary: 'the red block is in the bowl' }),
];
const GIVE_UP = [call('done', { summary: 'done already' }), call('give_up', { reason: 'the block is out of reach' })];

function setup(t: { after: (f: () => void) => void }) {
  const dir = tempDir('brainstem-eval-');
  t.after(() => dir.remove());
  const config = join(dir.path, 'config.yaml');
  // A loaded test machine can pause a process for several hundred ms: staleness, heartbeat and
  // command expiry limits as loose as the e2e rig's.
  writeFileSync(
    config,
    `data_dir: ${join(dir.path, 'data')}\nlogging: { level: silent }\nrobots: { stale_ms: 1000, command_expiry_ms: 2000, heartbeat: { timeout_ms: 1500 } }\n`,
  );
  const script = (name: string, lines: string[]) => {
    const file = join(dir.path, `${name}.jsonl`);
    writeFileSync(file, `${lines.join('\n')}\n`);
    return file;
  };
  const run = (extra: string[]) =>
    runCli(
      ['policy', 'eval', '--scene', 'yam-pick-place', '--task', 'block_in_bowl', '-c', config, ...extra],
      {},
      {
        timeoutMs: 240_000,
      },
    );
  return { dir, config, script, run };
}

test('policy eval: a placing script succeeds on seeds 3 and 4; the table and JSON say so; policy replay re-executes a run', async (t) => {
  const { script, run, config, dir } = setup(t);
  const r = await run(['--script', script('place', PLACE), '--runs', '2', '--seed', '3', '--json']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const out = JSON.parse(r.stdout);
  const story = JSON.stringify(out.runs.map((x: any) => [x.outcome, x.reason]));
  assert.deepEqual(
    out.runs.map((x: any) => [x.run, x.seed, x.outcome, x.success, x.decisions, x.held]),
    [
      [1, 3, 'done', true, 7, ['red_in_bowl']],
      [2, 4, 'done', true, 7, ['red_in_bowl']],
    ],
    story,
  );
  assert.deepEqual(
    [out.scene, out.task, out.instruction, out.robot, out.provider],
    ['yam-pick-place', 'block_in_bowl', 'Put the red block in the bowl.', 'yam', 'scripted'],
  );
  assert.deepEqual([out.aggregate.runs, out.aggregate.successes, out.aggregate.success_rate], [2, 2, 1]);
  assert.equal(out.aggregate.outcomes.done, 2);
  assert.equal(out.aggregate.mean.decisions, 7);
  // The scripted provider counts tokens too (a whitespace estimate): every run has some.
  assert.ok(out.runs.every((x: any) => x.prompt_tokens > 0 && x.completion_tokens > 0 && x.wall_s > 0));
  // Each run is a recorded episode.
  const report = await runCli(['policy', 'report', out.runs[0].episode, '-c', config]);
  assert.equal(report.code, 0, report.stderr);
  assert.match(report.stdout, /set_gripper: ok ×2/);

  // Replay run 2 (seed 4, recorded in episode.json) with one recorded outcome changed: that call differs.
  const id = out.runs[1].episode;
  const events = join(dir.path, 'data', 'episodes', id, 'events.jsonl');
  const tampered = readFileSync(events, 'utf8')
    .split('\n')
    .map((l) =>
      l.includes('"type":"outcome"') && l.includes('"decision":3,')
        ? l.replace('"status":"ok"', '"status":"failed"')
        : l,
    );
  writeFileSync(events, tampered.join('\n'));
  const replay = await runCli(['policy', 'replay', id, '-c', config], {}, { timeoutMs: 120_000 });
  assert.equal(replay.code, 7, replay.stderr + replay.stdout);
  assert.deepEqual(replay.stdout.trim().split('\n'), [
    `replay of ${id} on yam (scene yam-pick-place, seed 4)`,
    '#1 move_to: recorded ok, replayed ok: match',
    '#2 move_to: recorded ok, replayed ok: match',
    '#3 set_gripper: recorded failed, replayed ok: DIFFERS',
    '#4 move_to: recorded ok, replayed ok: match',
    '#5 move_to: recorded ok, replayed ok: match',
    '#6 set_gripper: recorded ok, replayed ok: match',
    '#7 done: not replayed (recorded confirmed)',
    '5 match, 1 differ, 1 not replayed',
    'predicates at the last check: {"red_in_bowl":true,"red_lifted":false,"red_held":false}; after the replay: {"red_in_bowl":true,"red_lifted":false,"red_held":false}',
  ]);
  const missing = await runCli(['policy', 'replay', 'ep-20260101-000000-abcdef', '-c', config]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /episode ep-20260101-000000-abcdef: no record at /);
});

test('policy eval: a script that gives up fails on every seed; the table shows 0/2', async (t) => {
  const { script, run } = setup(t);
  const r = await run(['--script', script('give-up', GIVE_UP), '--runs', '2', '--seed', '7']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const lines = r.stdout.trim().split('\n');
  assert.equal(
    lines[0],
    'scene yam-pick-place, task block_in_bowl (Put the red block in the bowl.), provider scripted, seeds 7..8',
  );
  assert.match(lines[1]!, /^run +seed +outcome +success +decisions +wall_s +prompt_tok +completion_tok +episode$/);
  assert.match(lines[2]!, /^1 +7 +gave_up +no +2 +[\d.]+ +\d+ +\d+ +ep-/);
  assert.match(lines[3]!, /^2 +8 +gave_up +no +2 +/);
  assert.match(lines[4]!, /^success 0\/2 \(0\.0%\); mean decisions 2\.0, wall [\d.]+ s, prompt tokens \d+/);
});

test('policy eval: an unknown task or scene is a usage error naming what exists', async (t) => {
  const { script, run } = setup(t);
  const file = script('give-up', GIVE_UP);
  const task = await runCli(['policy', 'eval', '--scene', 'yam-pick-place', '--task', 'stack', '--script', file]);
  assert.equal(task.code, 2);
  assert.match(
    task.stderr,
    /--task: is not a task of scene yam-pick-place \(tasks: block_in_bowl, lift_red\), got "stack"/,
  );
  const runs = await run(['--script', file, '--runs', '0']);
  assert.equal(runs.code, 2);
  assert.match(runs.stderr, /--runs: must be a positive integer, got "0"/);
});
