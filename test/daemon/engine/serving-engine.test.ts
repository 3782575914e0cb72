// The serving path on the real engine with a tiny random-weight model: prompt-prefix reuse counted
// by the engine itself (a second turn prefills only what its session does not hold, and its output
// equals a cold run), and constrained decoding: seeded requests, each one valid tool call.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { ChatEvent } from '../../../daemon/engine/chat.js';
import { type ChatOutcome, ChatService } from '../../../daemon/engine/chat-service.js';
import { type ModelProfile, resolveProfile } from '../../../daemon/engine/config.js';
import { loadConfig } from '../../../daemon/config/load.js';
import { parseSchema } from '../../../daemon/engine/json-schema/schema.js';
import { validateJson } from '../../../daemon/engine/json-schema/validate.js';
import { ModelRegistry } from '../../../daemon/engine/model-registry.js';
import type { NativeSession } from '../../../daemon/engine/native-model.js';
import { loadNativeModel, type ModelLoader } from '../../../daemon/engine/served-model.js';
import { ServingMetrics } from '../../../daemon/engine/serving-metrics.js';
import { synthTiny, type TinyModel, WEATHER_TOOLS } from '../../helpers/serving.js';

let model: TinyModel;
before(async () => {
  model = await synthTiny(9);
});
after(() => model?.remove());

/** A registry + chat service on the native engine that keeps every engine session it opens. */
async function serve(t: { after(fn: () => unknown): void }) {
  const sessions: NativeSession[] = [];
  const loader: ModelLoader = async (p, stage) => {
    const m = await loadNativeModel(p, stage);
    return {
      ...m,
      createSession: async () => {
        const s = (await m.createSession()) as NativeSession;
        sessions.push(s);
        return s;
      },
    };
  };
  const profile: ModelProfile = {
    path: model.path,
    threads: 1,
    contextLength: 4096,
    keepAliveMs: -1,
    queueSize: 4,
    sessions: 4,
  };
  const metrics = new ServingMetrics(new Registry());
  const registry = new ModelRegistry({ models: { tiny: profile }, loader, metrics, log: pino({ level: 'silent' }) });
  await registry.start();
  t.after(() => registry.stop());
  const chat = new ChatService(registry, metrics);
  /** Tokens the engine ran through the model (prefill + decode), over every session. */
  const engineTokens = () => sessions.reduce((n, s) => n + s.info().tokens, 0);
  const run = async (
    body: Record<string, unknown>,
  ): Promise<ChatOutcome & { events: ChatEvent[]; engineTokens: number }> => {
    const before = engineTokens();
    const gen = chat.run({ body: { model: 'tiny', ...body } });
    const events: ChatEvent[] = [];
    for (;;) {
      const step = await gen.next();
      if (step.done) return { ...step.value, events, engineTokens: engineTokens() - before };
      events.push(step.value);
    }
  };
  return { run, registry };
}

const SYSTEM = { role: 'system', content: 'You control two robot arms. Answer briefly.' };

test('prefix reuse: the second turn runs only the tokens its session lacks, and equals a cold run', async (t) => {
  const warm = await serve(t);
  const turn1 = [SYSTEM, { role: 'user', content: 'Where is the red cup?' }];
  const first = await warm.run({ messages: turn1, max_tokens: 10, temperature: 0.8, seed: 3 });
  const u1 = first.result.usage;
  assert.equal(
    first.engineTokens,
    u1.promptTokens + first.result.timings.decodeTokens,
    'a cold first turn runs its whole prompt',
  );

  const turn2 = [
    ...turn1,
    { role: 'assistant', content: first.result.content },
    { role: 'user', content: 'Pick it up with the left arm.' },
  ];
  const body2 = { messages: turn2, max_tokens: 12, temperature: 0.8, seed: 5 };
  const second = await warm.run(body2);
  const u2 = second.result.usage;
  assert.ok(
    u2.cachedTokens >= u1.promptTokens,
    `the whole first prompt is reused: ${u2.cachedTokens} of ${u1.promptTokens}`,
  );
  assert.equal(second.result.timings.prefillTokens, u2.promptTokens - u2.cachedTokens);
  assert.equal(
    second.engineTokens,
    u2.promptTokens - u2.cachedTokens + second.result.timings.decodeTokens,
    'the engine ran only the new prompt tokens and the decodes',
  );

  t.diagnostic(
    `turn 1: ${u1.promptTokens} prompt + ${u1.completionTokens} generated; turn 2: ${u2.promptTokens} prompt, ${u2.cachedTokens} cached, engine ran ${second.engineTokens}`,
  );
  const cold = await (await serve(t)).run(body2);
  assert.equal(cold.result.usage.cachedTokens, 0);
  assert.equal(cold.engineTokens, u2.promptTokens + cold.result.timings.decodeTokens);
  assert.equal(second.result.content, cold.result.content, 'cached and cold runs generate the same text');
  assert.equal(u2.completionTokens, cold.result.usage.completionTokens);
  assert.equal(second.result.finishReason, cold.result.finishReason);
});

test('agent loop: a tool call and its result extend the same session', async (t) => {
  const s = await serve(t);
  const ask = [SYSTEM, { role: 'user', content: 'Open the left gripper halfway.' }];
  const first = await s.run({
    messages: ask,
    tools: WEATHER_TOOLS,
    tool_choice: { type: 'function', function: { name: 'set_gripper' } },
    temperature: 1,
    seed: 2,
    max_tokens: 160,
  });
  assert.equal(first.result.finishReason, 'tool_calls');
  const call = first.result.toolCalls[0]!;
  const turn2 = [
    ...ask,
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'c1', type: 'function', function: { name: call.name, arguments: JSON.stringify(call.arguments) } },
      ],
    },
    { role: 'tool', tool_call_id: 'c1', content: '{"ok": true}' },
  ];
  const second = await s.run({ messages: turn2, tools: WEATHER_TOOLS, max_tokens: 6, temperature: 0, seed: 1 });
  const u = second.result.usage;
  assert.ok(
    u.cachedTokens >= first.result.usage.promptTokens,
    `${u.cachedTokens} cached of the first prompt's ${first.result.usage.promptTokens}`,
  );
  assert.equal(second.engineTokens, u.promptTokens - u.cachedTokens + second.result.timings.decodeTokens);
});

// The full set is 200 requests (~11k tokens, about two minutes with the reference kernels
// on a 2-core VM): CI (CI=true) runs it; a local run defaults to 40 unless
// BRAINSTEM_TEST_CONSTRAINED_REQUESTS says otherwise. token-masker.test.ts runs 200 with random
// logits every time.
const REQUESTS = Number(process.env.BRAINSTEM_TEST_CONSTRAINED_REQUESTS ?? (process.env.CI === 'true' ? 200 : 40));

test(`constrained decoding on the real engine: ${REQUESTS} seeded requests, each exactly one valid call of a requested tool`, async (t) => {
  const s = await serve(t);
  const schemas = new Map(WEATHER_TOOLS.map((tool) => [tool.function.name, parseSchema(tool.function.parameters)]));
  const names = new Map<string, number>();
  let tokens = 0;
  for (let seed = 1; seed <= REQUESTS; seed++) {
    // Every fourth request names its tool; the rest may call either.
    const named = seed % 4 === 0 ? WEATHER_TOOLS[seed % 8 === 0 ? 0 : 1]!.function.name : undefined;
    const toolChoice = named ? { type: 'function', function: { name: named } } : 'required';
    const o = await s.run({
      messages: [SYSTEM, { role: 'user', content: `Task ${seed % 5}: check the weather or move the gripper.` }],
      tools: WEATHER_TOOLS,
      tool_choice: toolChoice,
      temperature: 1,
      seed,
      max_tokens: 160,
    });
    const r = o.result;
    const label = `seed ${seed}: ${r.finishReason} ${JSON.stringify(r.toolCalls)} ${JSON.stringify(r.content)} ${r.error?.message ?? ''}`;
    assert.equal(r.finishReason, 'tool_calls', label);
    assert.equal(r.toolCalls.length, 1, label);
    assert.equal(r.content, '', label);
    const c = r.toolCalls[0]!;
    if (named) assert.equal(c.name, named, label);
    assert.deepEqual(validateJson(c.arguments, schemas.get(c.name)!), [], label);
    names.set(c.name, (names.get(c.name) ?? 0) + 1);
    tokens += r.usage.completionTokens;
  }
  assert.equal(names.size, 2, `both tools get called: ${JSON.stringify([...names])}`);
  t.diagnostic(`${tokens} constrained tokens generated, ${JSON.stringify([...names])}`);
});

// A served model that fits the memory budget is mapped at load (models.<name>.prefault unset);
// the config key turns that off, and resolveProfile carries it through.
test('served models are prefaulted where resident unless models.<name>.prefault is false', async () => {
  const base: ModelProfile = {
    path: model.path,
    threads: 1,
    contextLength: 64,
    keepAliveMs: 0,
    queueSize: 1,
    sessions: 1,
  };
  const auto = await loadNativeModel(base, () => {});
  const off = await loadNativeModel({ ...base, prefault: false }, () => {});
  try {
    assert.equal(auto.summary?.prefault, true);
    assert.equal(off.summary?.prefault, false);
  } finally {
    auto.dispose();
    off.dispose();
  }
  const engine = loadConfig({ env: {} }).engine;
  assert.equal(resolveProfile({ prefault: false }, engine, model.path).prefault, false);
  assert.equal('prefault' in resolveProfile({}, engine, model.path), false);
});
