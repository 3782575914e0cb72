// The episode loop against a fake robot: camera frames in observations and records, the verifier
// check, pause/resume, the wall-time budget on an injected clock, stop while the model thinks,
// provider failures, and record retention.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { ToolValidator } from '../../../robot/tools/validate.js';
import { identity } from '../../../robot/math/transform.js';
import type { ToolOutcome } from '../../../robot/tools/outcome.js';
import { sceneVerdict } from '../../../daemon/policy/episode/checks.js';
import { Episode, type EpisodeOptions } from '../../../daemon/policy/episode/episode.js';
import { EpisodeRecorder, newEpisodeId } from '../../../daemon/policy/episode/records.js';
import { applyRetention } from '../../../daemon/policy/episode/retention.js';
import { parseScript, ScriptedProvider } from '../../../daemon/policy/providers/scripted.js';
import { ProviderError, type PolicyProvider } from '../../../daemon/policy/providers/types.js';
import type { EpisodeEvent, EpisodeRobot, Frame } from '../../../daemon/policy/episode/types.js';
import { NO_FRAMES } from '../../../daemon/policy/episode/types.js';
import { tempDir } from '../../helpers/temp.js';

const call = (name: string, args: object) => JSON.stringify({ name, arguments: args });
const script = (...lines: string[]) => new ScriptedProvider('s', parseScript(lines.join('\n'), 's'));

function fakeRobot(): EpisodeRobot & { executed: string[]; stops: string[] } {
  const validator = new ToolValidator(['arm']);
  const executed: string[] = [];
  const stops: string[] = [];
  const arms = {
    arm: {
      q: [0, 1, 1, 0, 0, 0],
      dq: [0, 0, 0, 0, 0, 0],
      gripper: 1,
      tcp: [0.3, 0, 0.2, 0, 0, 0, 1],
      mode: 'hold',
      faults: [],
    },
  };
  const outcome = (tool: string): ToolOutcome => ({
    call_id: 'c',
    tool: tool as never,
    ok: true,
    status: 'ok',
    message: 'ok.',
    arms,
  });
  return {
    id: 'arm1',
    arms: ['arm'],
    executed,
    stops,
    state: () => arms,
    validate: (r) => validator.validate(r),
    execute: async (c) => {
      executed.push(c.name);
      return outcome(c.name);
    },
    stop: async (reason) => {
      stops.push(reason);
      return outcome('stop');
    },
    frames: { toolFrom: () => identity(), arms: [{ name: 'arm', base: identity() }] },
  };
}

function episode(o: Partial<EpisodeOptions> & { provider: PolicyProvider }, events: EpisodeEvent[] = []) {
  const robot = (o.robot as ReturnType<typeof fakeRobot>) ?? fakeRobot();
  const ep = new Episode({
    id: 'ep-test',
    robot,
    instruction: 'put the block in the bowl',
    check: { kind: 'none' },
    budget: { decisions: 10, wallS: 100, promptTokens: 0, completionTokens: 0 },
    frames: NO_FRAMES,
    scene: { predicates: () => undefined },
    now: () => 0,
    imageMaxSide: 1280,
    keepImages: 2,
    windowTurns: 8,
    summaryBlock: 1,
    emit: (e) => events.push(e),
    ...o,
  });
  return { ep, robot, events };
}

test('camera frames are scaled, sent as labelled images and recorded under images/', async () => {
  const png = await sharp({ create: { width: 400, height: 200, channels: 3, background: '#808080' } })
    .png()
    .toBuffer();
  const frame: Frame = {
    camera: 'top',
    mime: 'image/png',
    bytes: new Uint8Array(png),
    width: 400,
    height: 200,
    time: 0,
  };
  const seen: unknown[] = [];
  const provider = script(call('done', { summary: 'ok' }));
  const spy: PolicyProvider = { name: 'spy', decide: (req, s) => (seen.push(req), provider.decide(req, s)) };
  const dir = tempDir('brainstem-ep-');
  try {
    const rec = new EpisodeRecorder(dir.path, 'ep-20260101-000000-abcdef', { robot: 'arm1' });
    const events: EpisodeEvent[] = [];
    const { ep } = episode({
      provider: spy,
      frames: { cameras: () => ['top'], latest: () => [frame] },
      imageMaxSide: 100,
      emit: (e, images) => {
        events.push(e);
        rec.event(e, images);
      },
    });
    ep.start();
    assert.equal(await ep.finished, 'done');
    const obs = events.find((e) => e.type === 'observation')!;
    assert.deepEqual(obs.images, ['d1-top.jpg']);
    assert.match(obs.text as string, /"images":\[\{"camera":"top","width":100,"height":50/);
    const meta = await sharp(readFileSync(join(rec.dir, 'images', 'd1-top.jpg'))).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['jpeg', 100, 50]);
    const user = (seen[0] as any).messages[1].content;
    assert.equal(user.at(-1).type, 'image');
    assert.equal(user.at(-1).label, 'camera top, decision 1');
    assert.ok(
      (seen[0] as any).tools.some((t: any) => t.name === 'locate_point'),
      'locate_point offered with a camera',
    );
    assert.equal(JSON.parse(readFileSync(join(rec.dir, 'episode.json'), 'utf8')).state, 'done');
  } finally {
    dir.remove();
  }
});

test('images no prompt shows again are dropped from memory; the prompts are as the history policy sends them', async () => {
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } })
    .png()
    .toBuffer();
  const frame: Frame = { camera: 'top', mime: 'image/png', bytes: new Uint8Array(png), width: 8, height: 8, time: 0 };
  const seen: any[] = [];
  const inner = script(call('get_state', {}), call('get_state', {}), call('done', { summary: 'a' }));
  const { ep } = episode({
    provider: { name: 'spy', decide: (req, s) => (seen.push(structuredClone(req)), inner.decide(req, s)) },
    frames: { cameras: () => ['top'], latest: () => [frame] },
    keepImages: 1,
  });
  ep.start();
  assert.equal(await ep.finished, 'done');
  const parts = seen[2].messages.filter((m: any) => m.role === 'user').flatMap((m: any) => m.content);
  assert.deepEqual(
    parts.filter((p: any) => p.type === 'image').map((p: any) => p.label),
    ['camera top, decision 3'],
  );
  assert.equal(parts.filter((p: any) => p.type === 'text' && /camera top, decision [12]/.test(p.text)).length, 2);
  const held = (ep as any).turns.flatMap((t: any) => t.observation).filter((p: any) => p.type === 'image');
  assert.deepEqual(
    held.map((p: any) => p.label),
    ['camera top, decision 3'],
  );
});

test('verifier check: a separate provider answers with verdict; a rejection continues the loop', async () => {
  const verifier = script(
    call('verdict', { complete: false, reason: 'the block is outside' }),
    call('verdict', { complete: true, reason: 'inside' }),
  );
  const asked: any[] = [];
  const spy: PolicyProvider = { name: 'v', decide: (req, sig) => (asked.push(req), verifier.decide(req, sig)) };
  const { ep, events } = episode({
    provider: script(call('done', { summary: 'a' }), call('done', { summary: 'b' })),
    check: { kind: 'verifier', provider: spy },
    references: [{ type: 'image', image: { url: 'data:image/png;base64,AA==' }, label: 'goal' }],
  });
  ep.start();
  assert.equal(await ep.finished, 'done');
  assert.deepEqual(
    events.filter((e) => e.type === 'check').map((e) => [e.complete, e.reason]),
    [
      [false, 'verifier: the block is outside'],
      [true, 'verifier: inside'],
    ],
  );
  assert.deepEqual(
    asked[0].tools.map((t: any) => t.name),
    ['verdict'],
  );
  const content = asked[0].messages[1].content;
  assert.equal(content[0].text, 'Task: put the block in the bowl\nThe robot claims: a');
  assert.deepEqual(
    [content[1].text, content[2].label, content[3].text],
    ['References given with the task:', 'goal', 'The robot now:'],
  );
  assert.match(content[4].text, /^Observation /);
});

test('the done description follows the check; locate_point answers unavailable', async () => {
  const seen: any[] = [];
  const inner = script(call('locate_point', { camera: 'top', u: 1, v: 2 }), call('done', { summary: 'a' }));
  const { ep, events } = episode({
    provider: { name: 'spy', decide: (req, s) => (seen.push(req), inner.decide(req, s)) },
    frames: { cameras: () => ['top'], latest: () => [] },
    check: { kind: 'scene', task: 'block_in_bowl' },
    scene: {
      predicates: () => ({
        predicates: { red_in_bowl: true, red_held: false },
        tasks: { block_in_bowl: ['red_in_bowl'] },
      }),
    },
  });
  ep.start();
  assert.equal(await ep.finished, 'done');
  assert.match(
    seen[0].tools.find((t: any) => t.name === 'done').description,
    /success conditions of task block_in_bowl are checked/,
  );
  assert.equal(events.find((e) => e.type === 'outcome')!.status, 'unavailable');
});

test('a camera that sends its first frame after the start is offered to locate_point from the next decision', async () => {
  const seen: any[] = [];
  const inner = script(
    call('locate_point', { camera: 'top', u: 1, v: 2 }),
    call('locate_point', { camera: 'top', u: 1, v: 2 }),
    call('done', { summary: 'a' }),
  );
  let cameras: string[] = [];
  const { ep, events } = episode({
    provider: {
      name: 'spy',
      decide: (req, s) => {
        seen.push(req);
        cameras = ['top']; // the camera's first frame arrives while the model thinks
        return inner.decide(req, s);
      },
    },
    frames: { cameras: () => cameras, latest: () => [] },
  });
  ep.start();
  assert.equal(await ep.finished, 'done');
  const offered = seen.map((r) => r.tools.some((t: any) => t.name === 'locate_point'));
  assert.deepEqual(offered, [false, true, true]);
  assert.deepEqual(
    events.filter((e) => e.tool === 'locate_point').map((e) => [e.type, e.status ?? e.error ?? null]),
    [
      [
        'request',
        'unknown tool "locate_point"; the tools are move_to, move_eef_chunk, check_path, set_gripper, get_state, stop, done, give_up.',
      ],
      ['request', null],
      ['outcome', 'unavailable'],
    ],
  );
});

test('pause holds the next decision; resume continues', async () => {
  const { ep, robot, events } = episode({ provider: script(call('get_state', {}), call('done', { summary: 'a' })) });
  ep.operator.pause();
  ep.start();
  await new Promise((r) => setImmediate(r));
  assert.equal(robot.executed.length, 0);
  assert.equal(
    events.some((e) => e.type === 'decision'),
    false,
  );
  assert.equal(ep.state, 'paused', 'the loop is held, not deciding');
  ep.operator.resume();
  assert.equal(await ep.finished, 'done');
  assert.deepEqual(robot.executed, ['get_state']);
  const states = events.filter((e) => e.type === 'state').map((e) => e.state);
  assert.deepEqual(states.slice(0, 2), ['paused', 'deciding']);
});

test('a pause during a call holds after it: the state says paused, not executing', async () => {
  const inner = script(call('get_state', {}), call('done', { summary: 'a' }));
  // The operator pauses while the model thinks about the first decision.
  const provider: PolicyProvider = { name: 'p', decide: (req, s) => (ep.operator.pause(), inner.decide(req, s)) };
  const { ep, events } = episode({ provider });
  ep.start();
  while (!events.some((e) => e.type === 'paused' || e.state === 'paused')) await new Promise((r) => setImmediate(r));
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  assert.equal(ep.state, 'paused');
  ep.operator.resume();
  assert.equal(await ep.finished, 'done');
  const states = events.filter((e) => e.type === 'state').map((e) => e.state);
  assert.deepEqual(states.slice(0, 3), ['deciding', 'executing', 'paused']);
});

test('operator feedback is the head of the next user turn, marked as such', async () => {
  const seen: any[] = [];
  const inner = script(call('get_state', {}), call('done', { summary: 'a' }));
  const { ep } = episode({ provider: { name: 'spy', decide: (req, s) => (seen.push(req), inner.decide(req, s)) } });
  ep.operator.pause();
  ep.operator.addFeedback('the bowl moved to the left');
  ep.start();
  ep.operator.resume();
  assert.equal(await ep.finished, 'done');
  const first = seen[0].messages.at(-1).content;
  assert.match(first[0].text, /^Task: /);
  assert.match(first[1].text, /^Operator feedback .*: the bowl moved to the left$/);
  assert.match(first[2].text, /^Observation /);
  const second = seen[1].messages.at(-1).content;
  assert.ok(
    second.every((p: any) => p.type !== 'text' || !p.text.startsWith('Operator feedback')),
    'given once',
  );
  assert.equal(seen[1].messages.at(-2).role, 'tool');
});

test('the wall-time budget on an injected clock ends the episode before the next decision', async () => {
  let now = 0;
  const inner = script(call('get_state', {}), call('get_state', {}), call('get_state', {}));
  const provider: PolicyProvider = { name: 'slow', decide: async (req, s) => ((now += 40), inner.decide(req, s)) };
  const { ep } = episode({ provider, now: () => now });
  ep.start();
  assert.equal(await ep.finished, 'budget_exhausted');
  assert.equal(ep.used.decisions, 3);
  assert.match(ep.reason!, /ran 100 s/);
});

test('the wall budget cancels a model call under way: budget_exhausted, no stop sent (nothing moved)', async () => {
  let cancelled = 0;
  const provider: PolicyProvider = {
    name: 'hang',
    decide: (_req, signal) =>
      new Promise((_, reject) =>
        signal.addEventListener(
          'abort',
          () => (cancelled++, reject(new ProviderError('hang', 'aborted', 'cancelled'))),
        ),
      ),
  };
  const clock = () => performance.now() / 1000;
  const { ep, robot, events } = episode({
    provider,
    now: clock,
    budget: { decisions: 10, wallS: 0.05, promptTokens: 0, completionTokens: 0 },
  });
  ep.start();
  assert.equal(await ep.finished, 'budget_exhausted');
  assert.equal(ep.reason, 'the episode ran 0.05 s (the model call under way was cancelled)');
  assert.deepEqual([cancelled, robot.stops.length], [1, 0]);
  assert.equal(events.at(-1)!.state, 'budget_exhausted');
});

test('the wall budget cuts a verifier check under way the same way', async () => {
  const hang: PolicyProvider = {
    name: 'v',
    decide: (_req, signal) =>
      new Promise((_, reject) =>
        signal.addEventListener('abort', () => reject(new ProviderError('v', 'aborted', 'cancelled'))),
      ),
  };
  const { ep } = episode({
    provider: script(call('done', { summary: 'a' })),
    check: { kind: 'verifier', provider: hang },
    now: () => performance.now() / 1000,
    budget: { decisions: 10, wallS: 0.05, promptTokens: 0, completionTokens: 0 },
  });
  ep.start();
  assert.equal(await ep.finished, 'budget_exhausted');
  assert.equal(ep.reason, 'the episode ran 0.05 s (the verifier check under way was cancelled)');
});

test('a token budget ends the episode before the decision that would exceed it', async () => {
  const { ep } = episode({
    provider: script(...Array(5).fill(call('get_state', {}))),
    budget: { decisions: 10, wallS: 100, promptTokens: 0, completionTokens: 20 },
  });
  ep.start();
  assert.equal(await ep.finished, 'budget_exhausted');
  assert.match(ep.reason!, /completion tokens used \(budget 20\)/);
  assert.ok(ep.used.completion_tokens >= 20 && ep.used.decisions < 5);
  // A script reports no usage: every decision's tokens are the estimate, and `used` says so.
  assert.equal(ep.used.estimated_decisions, ep.used.decisions);
});

test('a stop while the model thinks cancels the call, stops the arm and ends as stopped', async () => {
  let asked!: () => void;
  const thinking = new Promise<void>((r) => (asked = r));
  const provider: PolicyProvider = {
    name: 'hang',
    decide: (_req, signal) => {
      asked();
      return new Promise((_, reject) =>
        signal.addEventListener('abort', () => reject(new ProviderError('hang', 'aborted', 'cancelled'))),
      );
    },
  };
  const { ep, robot, events } = episode({ provider });
  ep.start();
  await thinking;
  assert.equal(await ep.stop('operator'), 'stopped');
  assert.deepEqual(robot.stops, ['policy_operator']);
  const end = events.at(-1)!;
  assert.deepEqual([end.type, end.state, end.reason], ['finished', 'stopped', 'operator']);
});

test('a decision that arrives after a stop is not acted on', async () => {
  let ep!: Episode;
  const provider: PolicyProvider = {
    name: 'late',
    decide: async () => {
      void ep.stop('operator'); // the stop lands while the answer is on its way
      return script(call('move_to', { target: { pose_xyzquat: [0.3, 0, 0.2, 0, 0, 0, 1] } })).decide(
        { messages: [], tools: [] },
        new AbortController().signal,
      );
    },
  };
  const run = episode({ provider });
  ep = run.ep;
  ep.start();
  assert.equal(await ep.finished, 'stopped');
  assert.deepEqual(run.robot.executed, [], 'the move was never executed');
  assert.deepEqual(run.robot.stops, ['policy_operator']);
});

test('a stop while paused before the first decision ends the episode (the pause does not hold it)', async () => {
  let budgetAsked!: () => void;
  const asked = new Promise<void>((r) => (budgetAsked = r));
  let answer!: () => void;
  const provider: PolicyProvider = {
    name: 'slow-budget',
    promptBudget: () => {
      budgetAsked();
      return new Promise((resolve) => (answer = () => resolve({})));
    },
    decide: () => Promise.reject(new Error('never asked')),
  };
  const { ep } = episode({ provider });
  ep.start();
  await asked;
  ep.operator.pause();
  const stopping = ep.stop('operator');
  answer(); // the loop reaches its pause check after the stop released it
  assert.equal(await stopping, 'stopped');
});

test('a provider cancelled by something other than a stop fails the episode (no stop was sent)', async () => {
  const provider: PolicyProvider = {
    name: 'gone',
    decide: () => Promise.reject(new ProviderError('gone', 'aborted', 'cancelled')),
  };
  const { ep, robot } = episode({ provider });
  ep.start();
  assert.equal(await ep.finished, 'failed');
  assert.deepEqual(robot.stops, []);
});

test('a provider failure ends the episode as failed with its reason', async () => {
  const { ep } = episode({ provider: script(call('get_state', {})) });
  ep.start();
  assert.equal(await ep.finished, 'failed');
  assert.match(ep.reason!, /all 1 decisions are used/);
});

test('retention removes the oldest records past the count, never a kept one', async () => {
  const dir = tempDir('brainstem-ret-');
  try {
    const ids = [1, 2, 3, 4].map((i) => newEpisodeId(new Date(Date.UTC(2026, 0, 1, 0, 0, i)), 'abcdef'));
    for (const id of ids) {
      mkdirSync(join(dir.path, 'episodes', id), { recursive: true });
      writeFileSync(join(dir.path, 'episodes', id, 'events.jsonl'), '{}\n');
    }
    const removed = await applyRetention(
      dir.path,
      { maxEpisodes: 2, maxBytes: 1 << 30, maxAgeDays: 30 },
      new Set([ids[0]!]),
      Date.now(),
    );
    assert.deepEqual(removed, [ids[1], ids[2]]);
    assert.deepEqual(readdirSync(join(dir.path, 'episodes')).sort(), [ids[0], ids[3]]);
    assert.ok(existsSync(join(dir.path, 'episodes', ids[0]!)));
    // A running record over max_bytes on its own does not send the finished ones.
    writeFileSync(join(dir.path, 'episodes', ids[0]!, 'events.jsonl'), 'x'.repeat(4096));
    const bytes = await applyRetention(
      dir.path,
      { maxEpisodes: 10, maxBytes: 1024, maxAgeDays: 30 },
      new Set([ids[0]!]),
      Date.now(),
    );
    assert.deepEqual(bytes, []);
  } finally {
    dir.remove();
  }
});

test('episode.json is replaced whole at the end (written beside, renamed over): no .tmp left', () => {
  const dir = tempDir('brainstem-rec-');
  try {
    const rec = new EpisodeRecorder(dir.path, 'ep-20260101-000000-abcdef', { robot: 'arm1' });
    rec.event({
      episode: 'ep-20260101-000000-abcdef',
      seq: 0,
      t: 1,
      type: 'finished',
      state: 'done',
      reason: 'ok',
      used: {},
    });
    assert.deepEqual(readdirSync(rec.dir).sort(), ['episode.json', 'events.jsonl', 'images']);
    assert.equal(JSON.parse(readFileSync(join(rec.dir, 'episode.json'), 'utf8')).state, 'done');
  } finally {
    dir.remove();
  }
});

test('locate_point answers from the camera’s depth frame as the next tool message', async () => {
  const seen: any[] = [];
  const inner = script(call('locate_point', { camera: 'top', u: 2, v: 1 }), call('done', { summary: 'a' }));
  const png = await sharp(new Uint16Array(4 * 3).fill(2000), { raw: { width: 4, height: 3, channels: 1 } })
    .toColourspace('grey16')
    .png()
    .toBuffer();
  const meta = {
    seq: 1,
    time: 0,
    encoding: 'png' as const,
    width: 4,
    height: 3,
    intrinsics: { fx: 2, fy: 2, cx: 2, cy: 1.5 },
    extrinsics: { frame: 'world', pose: [0, 0, 1, 0, 0, 0, 1] },
  };
  const { ep, events } = episode({
    provider: { name: 'spy', decide: (req, s) => (seen.push(req), inner.decide(req, s)) },
    frames: { cameras: () => ['top'], latest: () => [], depth: () => ({ meta, png: new Uint8Array(png), time: 0 }) },
  });
  ep.start();
  assert.equal(await ep.finished, 'done');
  assert.equal(events.find((e) => e.type === 'outcome')!.status, 'ok');
  // Pixel (2, 1)'s centre (2.5, 1.5) at 2 m: optical (0.5, 0, 2), then 1 m up.
  const answer = JSON.stringify(seen[1].messages);
  assert.match(answer, /\\"point_xyz\\":\[0\.5,0,3\]/);
});

test('scene check: a task requires only its predicates; the result names the task, those required and those that held', async () => {
  const truth = {
    predicates: () => ({
      predicates: { in_bowl: true, lifted: false, held: false },
      tasks: { put: ['in_bowl'], lift: ['held', 'lifted'] },
    }),
  };
  assert.deepEqual(await sceneVerdict({ task: 'put' }, truth, 'arm1'), {
    complete: true,
    reason: 'task put: true in the scene: in_bowl',
    predicates: { in_bowl: true, lifted: false, held: false },
    task: 'put',
    required: ['in_bowl'],
    held: ['in_bowl'],
  });
  const lift = await sceneVerdict({ task: 'lift' }, truth, 'arm1');
  assert.deepEqual([lift.complete, lift.reason], [false, 'task lift: not yet true in the scene: held, lifted']);
  const named = await sceneVerdict({ predicates: ['in_bowl', 'lifted'] }, truth, 'arm1');
  assert.deepEqual([named.complete, named.reason, named.task], [false, 'not yet true in the scene: lifted', undefined]);
  const unknown = await sceneVerdict({ task: 'stack' }, truth, 'arm1');
  assert.deepEqual(
    [unknown.complete, unknown.reason],
    [false, 'check.task: is not a task of the scene (tasks: put, lift), got "stack"'],
  );
});
