// The `local` provider: the daemon's own chat service in-process, a synthetic model constrained by
// tool_choice "required". Over a few decisions with a growing history every call is schema-valid,
// the episode's session is reused (only the new turns are prefilled) and the exact counter agrees
// with the engine's prompt.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChatService } from '../../../daemon/engine/chat-service.js';
import { compileHistory, type Turn } from '../../../daemon/policy/history.js';
import { LocalProvider } from '../../../daemon/policy/providers/local.js';
import { checkParams, makeProvider, providerParams } from '../../../daemon/policy/episode/provider-spec.js';
import type { Issue } from '../../../robot/common/validation/issue.js';
import { type PromptBudget, ProviderError } from '../../../daemon/policy/providers/types.js';
import { policyTools } from '../../../daemon/policy/tools.js';
import { compileSchema } from '../../../robot/common/validation/json-schema.js';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { synthTiny, type TinyModel } from '../../helpers/serving.js';
import { solidImage } from '../../helpers/images.js';
import { tempDir, type TempDir } from '../../helpers/temp.js';
import { synthModel } from '../../../daemon/tools/synth.js';

let model: TinyModel;
let vl: TempDir;
let d: TestDaemon;
const tools = policyTools(['arm'], ['top']);
const checks = new Map(tools.map((t) => [t.name, compileSchema(t.parameters)]));
const signal = new AbortController().signal;

/** The history as the episode compiles it: 2 images, 10 turns, 400 tokens kept for the reply. */
const compile = (history: Parameters<typeof compileHistory>[0], budget: PromptBudget) =>
  compileHistory(history, {
    tools,
    keepImages: 2,
    windowTurns: 10,
    contextTokens: budget.contextTokens,
    reserveTokens: 400,
    count: budget.count,
  });

before(async () => {
  model = await synthTiny(5);
  vl = tempDir('bs-vl-model-');
  synthModel({ arch: 'qwen3_vl_moe', shape: 'tiny', out: vl.path, seed: 5, force: true });
  d = await startTestDaemon({
    models: {
      tiny: { path: model.path, threads: 1, context_length: 4096, keep_alive: -1 },
      vl: { path: vl.path, threads: 1, context_length: 4096, keep_alive: -1 },
      // No room to wait: a request while another runs is busy.
      solo: { path: model.path, threads: 1, context_length: 4096, keep_alive: -1, queue_size: 0 },
    },
  });
});

after(async () => {
  await d?.stop();
  model?.remove();
  vl?.remove();
});

test('a model with a vision tower gets the references and observations as images', async () => {
  const p = new LocalProvider({ chat: d.chat, model: 'vl', cacheKey: 'episode-vl' });
  const png = await solidImage('png', 64, 64);
  const history = {
    system: 'You drive one arm. Reply with exactly one tool call.',
    references: [
      { type: 'image' as const, image: { url: `data:image/png;base64,${png.toString('base64')}` }, label: 'goal' },
    ],
    turns: [{ observation: [{ type: 'text' as const, text: 'observation 1: the arm is at rest' }] }] as Turn[],
  };
  const budget = await p.promptBudget(signal);
  const prompt = compile(history, budget);
  const dec = await p.decide({ messages: prompt.messages, tools, limits: { maxTokens: 400, seed: 1 } }, signal);
  assert.ok(dec.call.ok, JSON.stringify(dec.call));
  assert.equal(d.models.statusOf('vl').vision?.images_encoded, 1);
  // The counter sizes the image from its header: 64×64 → 4 image tokens, exactly as the engine ran it.
  assert.equal(dec.usage.promptTokens, prompt.tokens);
});

test('every decision is a schema-valid tool call; the prefix cache serves the history; the count is exact', async () => {
  const p = new LocalProvider({ chat: d.chat, model: 'tiny', cacheKey: 'episode-1' });
  const budget = await p.promptBudget(signal);
  assert.equal(budget.contextTokens, 4096);
  const history = {
    system: 'You drive one arm. Reply with exactly one tool call.',
    references: [
      { type: 'text' as const, text: 'Put the block in the bowl.' },
      { type: 'image' as const, image: { url: 'data:image/png;base64,AA==' }, label: 'goal' },
    ],
    turns: [] as Turn[],
  };
  let previous = { tokens: 0, summarised: 0 };
  for (let i = 1; i <= 4; i++) {
    history.turns.push({ observation: [{ type: 'text', text: `observation ${i}: the arm is at rest` }] });
    const prompt = compile(history, budget);
    const dec = await p.decide({ messages: prompt.messages, tools, limits: { maxTokens: 400, seed: i } }, signal);
    assert.equal(dec.provider, 'local');
    assert.ok(dec.call.ok, `decision ${i}: ${JSON.stringify(dec.call)}`);
    if (!dec.call.ok) return;
    assert.deepEqual(checks.get(dec.call.name)!(dec.call.arguments), [], `decision ${i}: ${dec.raw}`);
    assert.equal(dec.finishReason, 'tool_calls');
    // The counter is the engine's own rendering of this prompt.
    assert.equal(dec.usage.promptTokens, prompt.tokens);
    assert.equal(dec.usage.prefilledTokens! + dec.usage.cachedTokens!, dec.usage.promptTokens);
    assert.ok(prompt.tokens <= 4096 - 400, `${prompt.tokens} prompt tokens`);
    // Only what is new since the last prompt is prefilled (the engine's cache holds the rest),
    // unless the history summarised another turn (the prompt then changes after the references).
    const fresh = dec.usage.promptTokens - previous.tokens;
    if (i > 1 && prompt.dropped.summarisedTurns === previous.summarised)
      assert.ok(
        dec.usage.prefilledTokens! <= fresh + 32,
        `decision ${i}: prefilled ${dec.usage.prefilledTokens} of ${dec.usage.promptTokens}, ${fresh} new`,
      );
    previous = { tokens: dec.usage.promptTokens, summarised: prompt.dropped.summarisedTurns };
    const turn = history.turns.at(-1)!;
    turn.reply = dec.message;
    turn.result = { tool: dec.call.name, status: 'ok', text: `{"status":"ok","decision":${i}}` };
  }
});

test('past the window, summarised in blocks: only the first decision of a block prefills more than the new turns', async () => {
  // Counts, not times: tokens the engine prefilled against tokens the prompt gained.
  const few = tools.filter((t) => t.name === 'get_state' || t.name === 'set_gripper');
  const p = new LocalProvider({ chat: d.chat, model: 'tiny', cacheKey: 'episode-blocks' });
  const history = {
    system: 'You drive one arm.',
    references: [{ type: 'text' as const, text: 'Open.' }],
    turns: [] as Turn[],
  };
  const summarised: number[] = [];
  let previous = 0;
  for (let i = 1; i <= 9; i++) {
    history.turns.push({ observation: [{ type: 'text', text: `observation ${i}: the gripper is at 0.${i}` }] });
    const prompt = compileHistory(history, { tools: few, keepImages: 0, windowTurns: 3, summaryBlock: 3 });
    const dec = await p.decide({ messages: prompt.messages, tools: few, limits: { maxTokens: 80, seed: i } }, signal);
    assert.ok(dec.call.ok, JSON.stringify(dec.call));
    const u = dec.usage;
    if (i > 1 && prompt.dropped.summarisedTurns === summarised.at(-1))
      assert.ok(
        u.prefilledTokens! <= u.promptTokens - previous + 32,
        `decision ${i}: prefilled ${u.prefilledTokens} of ${u.promptTokens}, ${u.promptTokens - previous} new`,
      );
    summarised.push(prompt.dropped.summarisedTurns);
    previous = u.promptTokens;
    const turn = history.turns.at(-1)!;
    turn.reply = dec.message;
    turn.result = { tool: dec.call.ok ? dec.call.name : null, status: 'ok', text: `{"status":"ok","decision":${i}}` };
  }
  // The summary changed twice in nine decisions (one turn at a time, it would change six times).
  assert.deepEqual(summarised, [0, 0, 0, 3, 3, 3, 6, 6, 6]);
});

test('a prompt over the context is a request error naming it; an unknown model names the model', async () => {
  const p = new LocalProvider({ chat: d.chat, model: 'tiny' });
  const long = 'block '.repeat(5000);
  await assert.rejects(
    p.decide({ messages: [{ role: 'user', content: [{ type: 'text', text: long }] }], tools }, signal),
    (e: unknown) =>
      e instanceof ProviderError &&
      e.kind === 'request' &&
      /local provider: messages: the prompt has \d+ tokens; the context holds 4096/.test(e.message),
  );
  const missing = new LocalProvider({ chat: d.chat, model: 'nope' });
  await assert.rejects(
    missing.promptBudget(signal),
    (e: unknown) => e instanceof ProviderError && /model "nope" is not configured/.test(e.message),
  );
});

test('a decision cancelled mid-generation is no decision: aborted when the caller cancelled, a model failure otherwise', async () => {
  // The chat service answers a cancel with the output so far and finish reason "cancelled".
  const chat = {
    async *run() {
      yield { type: 'content', text: '<tool_call>{"na' };
      return { result: { finishReason: 'cancelled', content: '<tool_call>{"na', toolCalls: [] } };
    },
  } as unknown as ChatService;
  const p = new LocalProvider({ chat, model: 'tiny' });
  const ask = { messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'go' }] }], tools };
  const cancelled = new AbortController();
  cancelled.abort();
  await assert.rejects(
    p.decide(ask, cancelled.signal),
    (e: unknown) => e instanceof ProviderError && e.kind === 'aborted',
  );
  // Cancelled by the server (the model unloaded, the daemon stopping): not the episode's stop.
  await assert.rejects(
    p.decide(ask, signal),
    (e: unknown) => e instanceof ProviderError && e.kind === 'model' && /model server cancelled/.test(e.message),
  );
});

test('experts_per_token: the local provider decides at its K; the verifier may not narrow it; bad K is a request error', async () => {
  const bodies: Record<string, unknown>[] = [];
  const chat = {
    inputsOf: () => ['text'],
    async *run(call: { body: Record<string, unknown> }) {
      bodies.push(call.body);
      yield { type: 'content', text: '' };
      return { result: { finishReason: 'cancelled', content: '', toolCalls: [] } };
    },
  } as unknown as ChatService;
  const spec = providerParams.check({ kind: 'local', model: 'tiny', experts_per_token: 2 }, 'provider', [])!;
  const p = await makeProvider(spec, { chat, episode: 'e1', apiKeyEnvs: [] });
  await p
    .decide({ messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }], tools }, signal)
    .catch(() => {});
  assert.equal(bodies[0]!.experts_per_token, 2);

  const issues: Issue[] = [];
  checkParams.check(
    { kind: 'verifier', provider: { kind: 'local', model: 'tiny', experts_per_token: 2 } },
    'check',
    issues,
  );
  assert.deepEqual(
    issues.map((i) => [i.path, i.rule]),
    [['check.provider.experts_per_token', "is not for the verifier, which runs at the model's full routing width"]],
  );
  const openai: Issue[] = [];
  providerParams.check(
    { kind: 'openai', base_url: 'http://x/v1', model: 'm', experts_per_token: 2 },
    'provider',
    openai,
  );
  assert.match(openai[0]!.rule, /is not an option of the openai provider/);
  // 1024 tokens stay free for the reply: a context of 1100 left the prompt none (every decision failed).
  const small: Issue[] = [];
  providerParams.check(
    { kind: 'openai', base_url: 'http://x/v1', model: 'm', context_tokens: 1100 },
    'provider',
    small,
  );
  assert.deepEqual(
    small.map((i) => [i.path, i.value]),
    [['provider.context_tokens', 1100]],
  );
  assert.match(small[0]!.rule, /2048/);

  const wide = new LocalProvider({ chat: d.chat, model: 'tiny', expertsPerToken: 9 });
  await assert.rejects(
    wide.decide({ messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }], tools }, signal),
    (e: unknown) =>
      e instanceof ProviderError &&
      e.kind === 'request' &&
      /experts_per_token: must be in \[1, 4\], got 9/.test(e.message),
  );
});

test('a model busy with other requests is asked again after a backoff; after the last retry the failure says busy', async (t) => {
  const go = { messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'go' }] }], tools };
  // Chat traffic holds the model's only turn; the provider's second backoff ends it.
  let held = await d.models.lease('solo');
  // A failing check must not leave the turn held (the daemon's stop would wait for it).
  t.after(() => held.release());
  const waits: number[] = [];
  const sleep = async (ms: number) => {
    waits.push(ms);
    if (waits.length === 2) held.release();
  };
  const p = new LocalProvider({ chat: d.chat, model: 'solo', retry: { sleep, random: () => 0 } });
  const dec = await p.decide({ ...go, limits: { maxTokens: 60, seed: 1 } }, signal);
  assert.ok(dec.call.ok, JSON.stringify(dec.call));
  assert.equal(dec.timing.attempts, 3);
  assert.deepEqual(waits, [500, 1000], 'the backoff doubles (equal jitter, random 0: half of each step)');

  held = await d.models.lease('solo');
  waits.length = 0;
  const patient = new LocalProvider({
    chat: d.chat,
    model: 'solo',
    retry: { maxRetries: 2, sleep: async (ms) => void waits.push(ms), random: () => 0 },
  });
  await assert.rejects(
    patient.decide(go, signal),
    (e: unknown) =>
      e instanceof ProviderError &&
      e.kind === 'busy' &&
      e.details.attempts === 3 &&
      /^local provider: model "solo" is busy: .*\(gave up after 3 attempts\)$/.test(e.message),
  );
  assert.deepEqual(waits, [500, 1000]);
  // promptBudget takes the model's turn too: busy is waited for there as well.
  waits.length = 0;
  await assert.rejects(patient.promptBudget(signal), (e: unknown) => e instanceof ProviderError && e.kind === 'busy');
  assert.equal(waits.length, 2);
  held.release();
  assert.equal((await patient.promptBudget(signal)).contextTokens, 4096);
});
