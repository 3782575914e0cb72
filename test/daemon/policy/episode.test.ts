// Episodes end to end: a daemon serving a simulated yam (`brainstem sim` child), the scripted
// provider, driven through policy.* over the WebSocket API. Deterministic: outcomes, states and
// counts are asserted, never times.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, TEST_TOKEN } from '../../helpers/daemon.js';
import { writeRuntimeInfo } from '../../../daemon/runtime-file.js';
import { waitFor } from '../../helpers/wait.js';
import { solidImage } from '../../helpers/images.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import {
  callTool,
  episodeEvents,
  episodeFinished,
  poseFromHere,
  startRig,
  waitReady,
  type Rig,
} from '../robots/harness.js';

const call = (name: string, args: object) => JSON.stringify({ name, arguments: args });

/** Starts an episode on arm1; resolves with its id. */
async function start(rig: Rig, lines: string[], extra: Record<string, unknown> = {}): Promise<string> {
  const r = await rig.rpc.call('policy.start', {
    robot: 'arm1',
    instruction: 'put the block in the bowl',
    provider: { kind: 'scripted', lines },
    ...extra,
  });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r.result.id;
}

test('policy episodes on a simulated yam', async (t) => {
  const rig = (await startRig(t, 'embedded', { robots: [{ id: 'arm1', robot: 'yam' }] }))!;
  await waitReady(rig, 'arm1');
  let sceneCalls = 0;
  rig.d.policy.scene = {
    predicates: () => ({ predicates: { in_bowl: ++sceneCalls >= 3 }, tasks: { block_in_bowl: ['in_bowl'] } }),
  };

  await t.test('a few moves then done with check none: done, recorded, reported', async () => {
    const a = await poseFromHere(rig, 'arm1', 'arm', 0.03, 0, -0.02);
    const b = await poseFromHere(rig, 'arm1', 'arm', 0.03, 0.02, -0.02);
    const id = await start(rig, [
      call('move_to', { target: a }),
      call('set_gripper', { gripper: 0.4 }),
      call('move_to', { target: b }),
      call('done', { summary: 'moved twice' }),
    ]);
    const end = await episodeFinished(rig, id);
    assert.equal(end.state, 'done', end.reason);
    assert.equal(end.used.decisions, 4);
    const outcomes = episodeEvents(rig, id).filter((e) => e.type === 'outcome');
    assert.deepEqual(
      outcomes.map((e) => [e.tool, e.status]),
      [
        ['move_to', 'ok'],
        ['set_gripper', 'ok'],
        ['move_to', 'ok'],
      ],
    );
    const obs = episodeEvents(rig, id).filter((e) => e.type === 'observation');
    assert.equal(obs.length, 4);
    assert.equal(obs[0].state.arm.joint_pos.length, 6);
    assert.equal(obs[0].state.arm.tcp_pose_xyzquat.length, 7);
    assert.deepEqual(obs[1].text.includes('"previous_result":{"tool":"move_to","status":"ok"'), true, obs[1].text);

    const got = (await rig.rpc.call('policy.get', { id, events: true })).result;
    assert.equal(got.state, 'done');
    assert.equal(got.events.length, episodeEvents(rig, id).length);
    const dir = join(rig.d.dataDir, 'episodes', id);
    assert.equal(got.record, dir);
    for (const f of ['episode.json', 'events.jsonl', 'states.jsonl', 'commands.jsonl'])
      assert.ok(existsSync(join(dir, f)), f);
    const commands = readFileSync(join(dir, 'commands.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      commands.map((c) => c.type),
      ['trajectory', 'gripper', 'trajectory'],
    );
    assert.equal(JSON.parse(readFileSync(join(dir, 'episode.json'), 'utf8')).state, 'done');

    const report = await runCli(['policy', 'report', id, '--json'], { BRAINSTEM_DATA_DIR: rig.d.dataDir });
    assert.equal(report.code, 0, report.stderr);
    const r = JSON.parse(report.stdout);
    assert.equal(r.state, 'done');
    assert.equal(r.decisions, 4);
    assert.deepEqual(r.outcomes, { move_to: { ok: 2 }, set_gripper: { ok: 1 }, done: { confirmed: 1 } });
    assert.deepEqual(r.failures, []);
    const text = await runCli(['policy', 'report', id], { BRAINSTEM_DATA_DIR: rig.d.dataDir });
    assert.match(text.stdout, new RegExp(`episode ${id}: done`));
    assert.match(text.stdout, /move_to: ok ×2/);
    // The record's budget is spelled as the API's; once retention removes the record, asking for
    // its events is the caller's question about a gone record, not an internal error.
    const meta = JSON.parse(readFileSync(join(dir, 'episode.json'), 'utf8'));
    assert.deepEqual(Object.keys(meta.budget), ['decisions', 'wall_s', 'prompt_tokens', 'completion_tokens']);
    rmSync(dir, { recursive: true });
    const gone = await rig.rpc.call('policy.get', { id, events: true });
    assert.equal(gone.error?.code, -32602);
    assert.match(gone.error.message, new RegExp(`id: the record of episode ${id} is gone`));
    assert.equal((await rig.rpc.call('policy.get', { id })).result.state, 'done');
  });

  await t.test('a done rejected by the scene check goes back to the model; the loop continues', async () => {
    const id = await start(
      rig,
      [call('done', { summary: 'in the bowl' }), call('get_state', {}), call('done', { summary: 'now' })],
      {
        check: { kind: 'scene', task: 'block_in_bowl' },
      },
    );
    const end = await episodeFinished(rig, id);
    assert.equal(end.state, 'done', end.reason);
    const checks = episodeEvents(rig, id).filter((e) => e.type === 'check');
    assert.deepEqual(
      checks.map((c) => [c.decision, c.complete]),
      [
        [1, false],
        [3, true],
      ],
    );
    assert.equal(checks[0].reason, 'task block_in_bowl: not yet true in the scene: in_bowl');
    assert.deepEqual([checks[1].task, checks[1].required, checks[1].held], ['block_in_bowl', ['in_bowl'], ['in_bowl']]);
    const obs2 = episodeEvents(rig, id).find((e) => e.type === 'observation' && e.decision === 2);
    assert.match(obs2.text, /"tool":"done","status":"rejected"/);
  });

  await t.test('malformed output and invalid calls return as errors and are never executed', async () => {
    const id = await start(rig, [
      JSON.stringify('I think I should move first.'),
      JSON.stringify({ name: 'move_to', arguments: '{"target": ' }),
      call('move_to', { target: { pose_xyzquat: [0.3, 0, 0.2] } }),
      call('fly', {}),
      call('give_up', { reason: 'cannot reach' }),
    ]);
    const end = await episodeFinished(rig, id);
    assert.equal(end.state, 'gave_up');
    assert.equal(end.reason, 'cannot reach');
    const all = episodeEvents(rig, id);
    const requests = all.filter((e) => e.type === 'request');
    assert.deepEqual(
      requests.map((e) => [e.decision, e.tool, e.error !== undefined]),
      [
        [1, null, true],
        [2, null, true],
        [3, 'move_to', true],
        [4, 'fly', true],
        [5, 'give_up', false],
      ],
    );
    assert.equal(all.filter((e) => e.type === 'outcome' || e.type === 'progress').length, 0, 'nothing executed');
    // An unknown tool is told the tools this episode offers; each rejection says once what to do.
    assert.match(requests[3].error, /^unknown tool "fly"; the tools are move_to, .*, done, give_up\.$/);
    const obs5 = all.find((e) => e.type === 'observation' && e.decision === 5);
    assert.equal(obs5.text.match(/reply with/gi)?.length, 1, obs5.text);
    assert.ok(!existsSync(join(rig.d.dataDir, 'episodes', id, 'commands.jsonl')), 'no command sent');
    const obs2 = all.find((e) => e.type === 'observation' && e.decision === 2);
    assert.match(obs2.text, /"previous_result":\{"tool":null,"status":"rejected"/);
  });

  await t.test('budget exhaustion after the decision budget', async () => {
    const id = await start(rig, Array(5).fill(call('get_state', {})), { budget: { decisions: 3 } });
    const end = await episodeFinished(rig, id);
    assert.equal(end.state, 'budget_exhausted');
    assert.equal(end.used.decisions, 3);
    assert.match(end.reason, /all 3 decisions/);
  });

  await t.test(
    'operator feedback leads the next turn; a second start is refused; operator confirm ends it',
    async () => {
      const id = await start(rig, [call('done', { summary: 'a' }), call('done', { summary: 'b' })], {
        check: { kind: 'operator' },
      });
      await waitFor(
        () => episodeEvents(rig, id).find((e) => e.type === 'check_pending'),
        'the first done to await confirmation',
      );
      const second = await rig.rpc.call('policy.start', {
        robot: 'arm1',
        instruction: 'again',
        provider: { kind: 'scripted', lines: [call('get_state', {})] },
      });
      assert.equal(second.error?.code, -32602);
      assert.match(second.error.message, new RegExp(`already runs episode ${id}`));
      assert.equal(
        (await rig.rpc.call('policy.feedback', { id, text: 'the block is still left of the bowl' })).result.queued,
        true,
      );
      assert.equal(
        (await rig.rpc.call('policy.confirm', { id, complete: false, reason: 'not in the bowl' })).result.complete,
        false,
      );
      await waitFor(
        () => (episodeEvents(rig, id).filter((e) => e.type === 'check_pending').length === 2 ? true : undefined),
        'the second done',
      );
      const obs2 = episodeEvents(rig, id).find((e) => e.type === 'observation' && e.decision === 2);
      assert.deepEqual(obs2.feedback, ['the block is still left of the bowl']);
      assert.match(obs2.text, /operator: not in the bowl/);
      await rig.rpc.call('policy.confirm', { id, complete: true });
      assert.equal((await episodeFinished(rig, id)).state, 'done');
      // An ended episode takes no operator controls: its record ends with `finished`.
      for (const [method, extra] of [
        ['policy.feedback', { text: 'late' }],
        ['policy.pause', {}],
        ['policy.resume', {}],
      ] as const) {
        const late = await rig.rpc.call(method, { id, ...extra });
        assert.equal(late.error?.code, -32602, method);
        assert.match(late.error.message, new RegExp(`id: episode ${id} has ended \\(state done\\)`));
      }
      assert.equal(episodeEvents(rig, id).at(-1).type, 'finished');
      const list = (await rig.rpc.call('policy.list')).result.episodes;
      assert.ok(list.some((e: any) => e.id === id && e.state === 'done' && e.check === 'operator'));
    },
  );

  await t.test('robots.stop mid-move ends the episode as stopped with the arm at rest', async () => {
    const far = await poseFromHere(rig, 'arm1', 'arm', 0.08, 0, 0);
    const id = await start(rig, [call('move_to', { target: far }), call('done', { summary: 'x' })]);
    await waitFor(
      () => episodeEvents(rig, id).find((e) => e.type === 'progress' && e.phase === 'started'),
      'the move to start',
    );
    const stop = await rig.rpc.call('robots.stop', { robot: 'arm1' });
    assert.equal(stop.result.stopped[0].status, 'ok');
    const end = await episodeFinished(rig, id);
    assert.equal(end.state, 'stopped');
    assert.equal(end.reason, 'robot_stop');
    assert.equal(episodeEvents(rig, id).find((e) => e.type === 'outcome' && e.tool === 'move_to').status, 'stopped');
    // Commands are timed when sent: the stop after the motion's start, not at the last event.
    const commands = readFileSync(join(rig.d.dataDir, 'episodes', id, 'commands.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const started = episodeEvents(rig, id).find((e) => e.type === 'progress' && e.phase === 'started').t;
    assert.equal(commands[0].type, 'trajectory');
    assert.ok(commands.length > 1 && commands.slice(1).every((c) => c.type === 'stop'));
    for (const c of commands.slice(1)) assert.ok(c.t > started, `stop at ${c.t} s, the motion started at ${started} s`);
    const s = await callTool(rig, 'arm1', 'get_state', {});
    assert.ok(Math.max(...s.arms.arm.dq.map(Math.abs)) < 0.05, 'at rest');
  });

  await t.test('brainstem policy run follows an episode to its end; the exit code says how it ended', async () => {
    writeRuntimeInfo(rig.d.dataDir, {
      pid: process.pid,
      version: 'test',
      started_at: new Date().toISOString(),
      http: rig.d.http,
      ws: rig.d.ws,
      mqtt: null,
      mqtt_embedded: true,
    });
    const env = { BRAINSTEM_DATA_DIR: rig.d.dataDir, BRAINSTEM_SERVER_TOKEN: TEST_TOKEN };
    const file = join(rig.d.dataDir, 'decisions.jsonl');
    writeFileSync(file, `${call('get_state', {})}\n${call('done', { summary: 'checked' })}\n`);
    writeFileSync(join(rig.d.dataDir, 'goal.png'), await solidImage('png', 32, 24));
    const context = join(rig.d.dataDir, 'context.json');
    writeFileSync(context, JSON.stringify({ goals: [{ path: 'goal.png', label: 'the goal' }] }));
    const args = ['policy', 'run', 'look around', '--robot', 'arm1', '--script', file, '--context', context, '--json'];
    const json = await runCli(args, env, {
      timeoutMs: 60_000,
    });
    assert.equal(json.code, 0, json.stderr + json.stdout);
    const lines = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(lines[0].type, 'started');
    assert.equal(lines[0].references.images, 1, 'the compiled goal image was sent');
    assert.deepEqual([lines.at(-1).type, lines.at(-1).state], ['finished', 'done']);
    writeFileSync(file, `${call('give_up', { reason: 'no block in view' })}\n`);
    const text = await runCli(['policy', 'run', 'look around', '--robot', 'arm1', '--script', file], env, {
      timeoutMs: 60_000,
    });
    assert.equal(text.code, 3, text.stderr + text.stdout);
    assert.match(text.stdout, /gave_up: no block in view/);
    writeFileSync(file, `${call('done', { summary: 'in the bowl' })}\n`);
    const task = await runCli(
      ['policy', 'run', 'put it in', '--robot', 'arm1', '--script', file, '--task', 'block_in_bowl', '--json'],
      env,
      { timeoutMs: 60_000 },
    );
    assert.equal(task.code, 0, task.stderr + task.stdout);
    const check = task.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((e) => e.type === 'check');
    assert.deepEqual([check.kind, check.task, check.required], ['scene', 'block_in_bowl', ['in_bowl']]);
    // --check verifier: its own scripted provider answers with the verdict tool.
    const verdicts = join(rig.d.dataDir, 'verdicts.jsonl');
    writeFileSync(verdicts, `${call('verdict', { complete: true, reason: 'the block is in the bowl' })}\n`);
    const verified = await runCli(
      ['policy', 'run', 'put it in', '--robot', 'arm1', '--script', file, '--check', 'verifier'].concat([
        '--verifier-script',
        verdicts,
      ]),
      env,
      { timeoutMs: 60_000 },
    );
    assert.equal(verified.code, 0, verified.stderr + verified.stdout);
    assert.match(verified.stdout, /\(scripted, check verifier\)/);
    assert.match(verified.stdout, /#1 check confirmed: verifier: the block is in the bowl/);
    const noScript = await runCli(
      ['policy', 'run', 'x', '--robot', 'arm1', '--script', file, '--check', 'verifier'],
      env,
    );
    assert.equal(noScript.code, 2);
    assert.match(noScript.stderr, /--verifier-script: is required with --verifier-provider scripted/);
    const bad = await runCli(['policy', 'run', 'x', '--robot', 'nope', '--script', file], env, { timeoutMs: 60_000 });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /robot: is not a served robot/);
  });

  await t.test(
    'a record the retention cannot read does not keep an episode from starting, nor the robot busy',
    async () => {
      // A dangling link where a record should be: sizing it throws (ENOENT).
      const broken = join(rig.d.dataDir, 'episodes', 'ep-20200101-000000-aaaaaa');
      symlinkSync(join(rig.d.dataDir, 'nowhere'), broken);
      t.after(() => rmSync(broken, { force: true }));
      for (let i = 0; i < 2; i++) {
        const id = await start(rig, [call('done', { summary: 'nothing to do' })]);
        assert.equal((await episodeFinished(rig, id)).state, 'done');
      }
    },
  );

  await t.test('refused starts name the field: unknown robot, file scripts, unlisted key variables', async () => {
    const bad = async (params: object): Promise<any> =>
      (await rig.rpc.call('policy.start', { robot: 'arm1', instruction: 'x', ...params })).error;
    const lines = [call('get_state', {})];
    let e = await bad({ robot: 'nope', provider: { kind: 'scripted', lines } });
    assert.match(e.message, /robot: is not a served robot \(served: arm1\), got "nope"/);
    e = await bad({ provider: { kind: 'scripted', script: '/etc/passwd' } });
    assert.match(e.message, /provider\.script: is not a known key/);
    e = await bad({ provider: { kind: 'openai', base_url: 'http://127.0.0.1:9/v1', model: 'm', api_key_env: 'HOME' } });
    assert.match(e.message, /api_key_env: must be one of policy\.api_key_envs \(none configured\), got "HOME"/);
    e = await bad({ provider: { kind: 'local', model: 'm', lines } });
    assert.match(e.message, /provider\.lines: is not an option of the local provider/);
    e = await bad({ provider: { kind: 'local', model: 'nope' } });
    assert.match(e.message, /provider\.model: model "nope" is not configured/);
    assert.equal(e.data.field, 'provider');
    e = await bad({
      provider: { kind: 'scripted', lines },
      check: { kind: 'verifier', provider: { kind: 'local', model: 'nope' } },
    });
    assert.match(e.message, /check\.provider\.model: model "nope" is not configured/);
    assert.equal(e.data.field, 'check.provider');
    e = await bad({ provider: { kind: 'scripted', lines: ['{"name": '] } });
    assert.match(e.message, /script:1: not JSON/);
    e = await bad({ provider: { kind: 'scripted', lines }, check: { kind: 'verifier' } });
    assert.match(e.message, /check\.provider: is required for, and only for, the verifier check/);
    e = await bad({ provider: { kind: 'scripted', lines }, check: { kind: 'scene' } });
    assert.match(e.message, /check\.task: the scene check needs a task \(or a list of predicates instead\), not both/);
    e = await bad({ provider: { kind: 'scripted', lines }, check: { kind: 'scene', task: 'stack' } });
    assert.match(
      e.message,
      /robot arm1: check\.task: is not a task of the scene \(tasks: block_in_bowl\), got "stack"/,
    );
    e = await bad({ provider: { kind: 'scripted', lines }, check: { kind: 'operator', task: 'block_in_bowl' } });
    assert.match(e.message, /check\.task: is only for the scene check/);
    // References: one of text or a data-URL image, whose bytes are an image; nothing fetched.
    const refs = (references: object[]) => bad({ provider: { kind: 'scripted', lines }, context: { references } });
    e = await refs([{ image_url: 'http://169.254.169.254/latest/meta-data/x.png' }]);
    assert.match(e.message, /context\.references\[0\]\.image_url: http\(s\) image URLs are refused/);
    e = await refs([{ text: 'ok' }, { image_url: 'data:image/png;base64,AAAA' }]);
    assert.match(e.message, /context\.references\[1\]\.image_url: declared image\/png but the bytes are not a png/);
    e = await refs([{}]);
    assert.match(e.message, /context\.references\[0\]: must have exactly one of text and image_url/);
    e = await refs([{ text: 't', image_url: 'data:image/png;base64,AAAA' }]);
    assert.match(e.message, /context\.references\[0\]: must have exactly one of text and image_url/);
    assert.equal(
      (await rig.rpc.call('policy.list')).result.episodes.filter((x: any) => x.state === 'deciding').length,
      0,
    );
  });

  await t.test('closing the starting connection stops its episode (unless detached)', async () => {
    const far = await poseFromHere(rig, 'arm1', 'arm', -0.06, 0, 0);
    const other = await RpcTestClient.connect(rig.d.ws, TEST_TOKEN);
    const r = await other.call('policy.start', {
      robot: 'arm1',
      instruction: 'move',
      provider: { kind: 'scripted', lines: [call('move_to', { target: far }), call('done', { summary: 'x' })] },
    });
    const id = r.result.id;
    await waitFor(
      () => other.notifications.find((n) => n.params.type === 'progress' && n.params.phase === 'started'),
      'the move to start',
    );
    const w = await rig.rpc.call('policy.watch', { id });
    assert.equal(w.error, undefined, JSON.stringify(w.error));
    const watched = w.result;
    assert.equal(watched.id, id);
    await other.close();
    const got = await waitFor(async () => {
      const g = (await rig.rpc.call('policy.get', { id })).result;
      return g.state === 'stopped' ? g : undefined;
    }, 'the episode to stop');
    assert.equal(got.reason, 'client_disconnected');
    const seen = await episodeFinished(rig, id);
    assert.equal(seen.state, 'stopped', 'the watching connection got the end too');
  });

  await t.test('a daemon stop ends a running episode as stopped with the arm at rest', async () => {
    const far = await poseFromHere(rig, 'arm1', 'arm', 0.06, 0, 0);
    const id = await start(rig, [call('move_to', { target: far }), call('done', { summary: 'x' })]);
    await waitFor(
      () => episodeEvents(rig, id).find((e) => e.type === 'progress' && e.phase === 'started'),
      'the move to start',
    );
    await rig.d.policy.stop();
    const end = await episodeFinished(rig, id);
    assert.deepEqual([end.state, end.reason], ['stopped', 'daemon_stop']);
    const rest = episodeEvents(rig, id).findLast((e) => e.type === 'outcome' && e.tool === 'stop');
    assert.equal(rest.status, 'ok', rest.message);
    assert.ok(Math.max(...rest.outcome.arms.arm.dq.map(Math.abs)) < 0.05, 'at rest');
    // The stop sent at shutdown is in the record with the commands before it.
    const commands = readFileSync(join(rig.d.dataDir, 'episodes', id, 'commands.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).type);
    assert.deepEqual(commands, ['trajectory', 'stop']);
  });
});
