// The `local` provider end to end: a daemon serving a synthetic model (random weights) and a
// simulated yam runs a bounded episode started over the WebSocket API. Decoding is constrained
// to the tool schemas, so every reply is one call whose arguments match its tool's schema; the
// episode ends by its decision budget or the model's give_up (its done claims are checked by a
// verifier that never confirms, so they go back to it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { policyTools } from '../../../daemon/policy/tools.js';
import { compileSchema } from '../../../robot/common/validation/json-schema.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { solidImage } from '../../helpers/images.js';
import { synthTiny } from '../../helpers/serving.js';
import { episodeEvents, episodeFinished, startRig, waitReady } from '../robots/harness.js';

const DECISIONS = 4;
const NOT_YET = JSON.stringify({
  name: 'verdict',
  arguments: { complete: false, reason: 'the block is not in the bowl' },
});

test('a synthetic local model drives a bounded episode with schema-valid tool calls only', async (t) => {
  const model = await synthTiny(11);
  t.after(() => model.remove());
  const rig = (await startRig(t, 'embedded', {
    robots: [{ id: 'arm1', robot: 'yam' }],
    config: { models: { tiny: { path: model.path, threads: 1, context_length: 8192, keep_alive: -1 } } },
  }))!;
  await waitReady(rig, 'arm1');
  // The context by file path, compiled in the daemon, read only inside its roots.
  mkdirSync(join(rig.d.dataDir, 'context'));
  writeFileSync(join(rig.d.dataDir, 'context', 'goal.png'), await solidImage('png', 32, 24));
  const outside = await rig.rpc.call('policy.start', {
    robot: 'arm1',
    instruction: 'x',
    provider: { kind: 'local', model: 'tiny' },
    context: { goals: [{ path: '/etc/hostname' }] },
  });
  assert.equal(outside.error?.code, -32602);
  assert.equal(outside.error.data.field, 'context.goals[0].path');
  assert.match(
    outside.error.message,
    /context path \/etc\/hostname leads outside the context roots .*policy\.context_roots/,
  );
  const r = await rig.rpc.call('policy.start', {
    robot: 'arm1',
    instruction: 'put the block in the bowl',
    provider: { kind: 'local', model: 'tiny' },
    budget: { decisions: DECISIONS },
    context: { goals: [{ path: 'goal.png', label: 'block in bowl' }] },
    // A verifier that never confirms: a done goes back to the model and the loop goes on.
    check: { kind: 'verifier', provider: { kind: 'scripted', lines: Array(DECISIONS).fill(NOT_YET) } },
  });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  const id = r.result.id;
  const end = await episodeFinished(rig, id, 120_000);
  const all = episodeEvents(rig, id);

  const decisions = all.filter((e) => e.type === 'decision');
  const started = all.find((e) => e.type === 'started');
  assert.deepEqual(started.references, {
    parts: 3,
    images: 1,
    compiled: { images: 1, keyframes: 0, action_rows: 0, dropped: 0 },
  });
  assert.ok(['budget_exhausted', 'gave_up'].includes(end.state), `${end.state}: ${end.reason}`);
  if (end.state === 'budget_exhausted') assert.equal(decisions.length, DECISIONS);
  else assert.equal(JSON.parse(decisions.at(-1).raw).name, 'give_up');
  // Every done was checked and refused, and the refusal reached the model's next turn.
  const dones = decisions.filter((d) => JSON.parse(d.raw).name === 'done').map((d) => d.decision);
  const checks = all.filter((e) => e.type === 'check');
  assert.deepEqual(
    checks.map((c) => [c.decision, c.complete]),
    dones.map((n) => [n, false]),
  );
  for (const n of dones.filter((x) => x < decisions.length)) {
    const next = all.find((e) => e.type === 'observation' && e.decision === n + 1);
    assert.match(next.text, /"tool":"done","status":"rejected"/);
  }
  assert.equal(end.used.decisions, decisions.length);
  assert.ok(decisions.length >= 1 && decisions.length <= DECISIONS);

  // The tools the episode offered (yam in the sim: one arm, its cameras when it has any).
  const cameras = rig.d.policy.frames.cameras('arm1');
  const schemas = new Map(policyTools(['arm'], cameras).map((x) => [x.name, compileSchema(x.parameters)]));
  for (const d of decisions) {
    assert.equal(d.finish_reason, 'tool_calls', d.raw);
    // A native call and no text: raw is the call as {"name", "arguments"} (its strings may hold anything).
    const c = JSON.parse(d.raw);
    const check = schemas.get(c.name);
    assert.ok(check, `decision ${d.decision} names an offered tool: ${c.name}`);
    assert.deepEqual(check(c.arguments), [], `decision ${d.decision}: ${d.raw}`);
    assert.ok(d.usage.promptTokens > 0 && d.usage.completionTokens > 0);
  }
  // Each decision's request event: the parsed call, or a robot-level refusal that names the tool
  // (never a reply the loop could not read as a call).
  const requests = all.filter((e) => e.type === 'request');
  assert.equal(requests.length, decisions.length);
  for (const q of requests) assert.notEqual(q.tool, null, JSON.stringify(q));
  for (const q of requests.filter((x) => x.arguments !== undefined))
    assert.deepEqual(schemas.get(q.tool)!(q.arguments), [], JSON.stringify(q));
});
